"""Items 4 and 5: request bodies bounded before parsing (declared or streamed), a typed
/v1/assess body, and rate limits per token and per client address."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from gateway.api.guards import RateLimit
from gateway.base.errors import ConfigError
from gateway.base.settings import Settings
from tests.gateway.api.live import serving
from tests.gateway.api.stub import ADMIN, AUTH, FAMILY, VIEWER, StubBackend, make_app

VITALS = {"heart_rate": 118, "spo2": 91, "respiratory_rate": 23, "systolic_bp": 105,
          "temperature_c": 38.4, "consciousness": "A"}  # fmt: skip
KIB = 1024


def _chunks(total: int, size: int = 8 * KIB) -> Iterator[bytes]:
    sent = 0
    while sent < total:
        n = min(size, total - sent)
        yield b" " * n
        sent += n


# --- item 4: body limits ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/v1/assess", {}),  # unauthenticated: refused before the token is even looked at
        ("/v1/assess", AUTH["admin"]),
        ("/v1/sms/inbound", {}),
        ("/v1/sos/dad/ack", AUTH["family"]),
        ("/v1/nowhere", {}),
    ],
)
def test_declared_length_over_the_limit_is_413(path: str, headers: dict[str, str]) -> None:
    with TestClient(make_app()) as c:
        r = c.post(path, content=b"x" * (64 * KIB + 1), headers=headers)
    assert r.status_code == 413
    assert "65536" in r.json()["detail"]


def test_streamed_body_without_length_is_counted() -> None:
    with TestClient(make_app(max_body_bytes=4 * KIB)) as c:
        r = c.post("/v1/assess", content=_chunks(6 * KIB, 1 * KIB), headers=AUTH["admin"])
        assert "content-length" not in r.request.headers
        assert r.status_code == 413
        ok = c.post("/v1/assess", content=_chunks(0), headers=AUTH["admin"])
        assert ok.status_code == 422  # an empty body is a bad request, not a big one


def test_chunked_body_on_a_real_server_is_cut_off() -> None:
    with serving(make_app(max_body_bytes=16 * KIB)) as host:
        r = httpx.post(
            f"http://{host}/v1/sms/status", content=_chunks(24 * KIB, 4 * KIB), timeout=10
        )
        assert r.request.headers.get("transfer-encoding") == "chunked"
        assert r.status_code == 413
        small = httpx.post(f"http://{host}/v1/assess", json=VITALS, headers=AUTH["admin"])
        assert small.status_code == 200


def test_bad_content_length_is_400() -> None:
    with TestClient(make_app()) as c:
        r = c.post("/v1/assess", content=b"{}", headers={"content-length": "abc", **AUTH["admin"]})
    assert r.status_code == 400


def test_body_under_the_limit_is_served() -> None:
    with TestClient(make_app()) as c:
        r = c.post("/v1/assess", json=VITALS, headers=AUTH["admin"])
    assert r.status_code == 200
    assert r.json()["news2"]["total"] >= 5


@pytest.mark.parametrize(
    "body",
    [
        {**VITALS, "notes": "anything at all"},  # unknown key
        {"heart_rate": "72"},  # a string for a number
        {"heart_rate": True},
        {"heart_rate": -1},
        {"heart_rate": 1e9},  # beyond any bound
        {"spo2_scale": 3, "spo2": 90},
        {"age": 70},  # no vital at all
        [VITALS],  # not an object
        {"heart_rate": 72, "conditions": ["x"] * 51},
    ],
)
def test_assess_takes_a_typed_body(body: Any) -> None:
    with TestClient(make_app()) as c:
        r = c.post("/v1/assess", json=body, headers=AUTH["viewer"])
    assert r.status_code == 422
    # The error names the field and rule, never echoes the values sent.
    assert all(set(e) == {"loc", "msg", "type"} for e in r.json()["detail"])
    assert "anything at all" not in r.text


def test_assess_unknown_person_is_404_like_every_route() -> None:
    with TestClient(make_app()) as c:
        r = c.post("/v1/assess", json={**VITALS, "person": "nobody"}, headers=AUTH["admin"])
        assert r.status_code == 404 and r.json() == {"detail": "no such person"}
        ok = c.post("/v1/assess", json={**VITALS, "person": "grandma"}, headers=AUTH["admin"])
        assert ok.status_code == 200


def test_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEALTHGW_VIEWER_TOKENS", f" {VIEWER} , {FAMILY}x ,")
    monkeypatch.setenv("HEALTHGW_API_MAX_BODY_BYTES", "131072")
    monkeypatch.setenv("HEALTHGW_API_RATE_LIMIT", "60/minute;1000/hour")
    s = Settings()
    assert [t.get_secret_value() for t in s.viewer_tokens] == [VIEWER, FAMILY + "x"]
    assert s.api_max_body_bytes == 131072 and s.api_rate_limit == "60/minute;1000/hour"
    for bad in ("lots", "120/fortnight", "0/minute", ""):
        monkeypatch.setenv("HEALTHGW_API_RATE_LIMIT", bad)
        with pytest.raises(ValueError, match="rate limit"):
            Settings()
    monkeypatch.delenv("HEALTHGW_API_RATE_LIMIT")
    monkeypatch.delenv("HEALTHGW_VIEWER_TOKENS")
    monkeypatch.delenv("HEALTHGW_API_MAX_BODY_BYTES")
    s = Settings()
    assert (s.viewer_tokens, s.api_max_body_bytes, s.api_rate_limit) == ([], 65536, "120/minute")


def test_bad_rate_limit_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        make_app(rate_limit="many")


# --- item 5: rate limits ----------------------------------------------------------------------


def _client(app: FastAPI, address: str) -> TestClient:
    return TestClient(app, client=(address, 40000))


def test_per_address_limit_with_retry_after() -> None:
    app = make_app(rate_limit="3/minute")
    with _client(app, "10.0.0.7") as c, _client(app, "10.0.0.8") as other:
        codes = [c.get("/v1/persons").status_code for _ in range(3)]
        assert codes == [401, 401, 401]  # unauthenticated requests count too
        r = c.get("/v1/persons", headers=AUTH["admin"])
        assert r.status_code == 429
        assert 1 <= int(r.headers["retry-after"]) <= 60
        assert other.get("/v1/persons", headers=AUTH["family"]).status_code == 200


def test_per_token_limit_follows_the_token_across_addresses() -> None:
    app = make_app(rate_limit="3/minute")
    clients = [_client(app, f"10.0.1.{i}") for i in range(5)]
    with clients[0], clients[1], clients[2], clients[3], clients[4]:
        codes = [c.get("/v1/persons", headers=AUTH["viewer"]).status_code for c in clients[:4]]
        assert codes == [200, 200, 200, 429]
        # Another token from a fresh address is not affected.
        assert clients[4].get("/v1/persons", headers=AUTH["family"]).status_code == 200


def test_probes_and_sos_with_a_valid_token_are_never_limited() -> None:
    backend = StubBackend()
    app = make_app(backend, rate_limit="2/minute")
    with _client(app, "10.0.2.1") as c:
        for _ in range(3):
            c.get("/v1/persons", headers=AUTH["admin"])
        assert c.get("/v1/persons", headers=AUTH["admin"]).status_code == 429
        for _ in range(5):
            assert c.get("/healthz").status_code == 200
            assert c.get("/readyz").status_code == 200
            assert c.post("/v1/sos/dad/start", headers=AUTH["admin"]).status_code == 200
            assert c.post("/v1/sos/dad/end", headers=AUTH["admin"]).status_code == 200
            assert c.post("/v1/sos/dad/ack", headers=AUTH["family"]).status_code == 200
            clear = c.post("/v1/persons/dad/alerts/clear", headers=AUTH["family"])
            assert clear.status_code == 200
        # Twilio's webhooks are no longer exempt by path: see tests/gateway/api/test_webhook_limits.py.
        assert c.post("/v1/sms/inbound", data={"Body": "OK"}).status_code == 429
        assert len(backend.ladder.acks) == 5 and len(backend.cleared) == 5


@pytest.mark.parametrize(
    ("method", "path", "role", "refused"),
    [
        ("GET", "/v1/sos/dad/ladder", "admin", 200),  # reading the ladder is no emergency
        ("GET", "/v1/sos/dad/ladder", "family", 200),
        ("POST", "/v1/sos/dad/start", "family", 403),  # family may not start or end an SOS
        ("POST", "/v1/sos/dad/end", "family", 403),
        ("POST", "/v1/sos/dad/ack", "viewer", 403),
        ("POST", "/v1/persons/dad/alerts/clear", "viewer", 403),
        ("POST", "/v1/sos/dad/anything", "admin", 404),  # any two segments used to pass
        ("GET", "/v1/sos/dad/start", "admin", 405),  # the right path, the wrong method
        ("POST", "/v1/sos/dad/ack/", "family", 307),  # not the route itself (a redirect)
    ],
)
def test_only_the_listed_emergency_actions_are_exempt(
    method: str, path: str, role: str, refused: int
) -> None:
    app = make_app(rate_limit="2/minute")
    with _client(app, "10.0.2.9") as c:
        codes = [
            c.request(method, path, headers=AUTH[role], follow_redirects=False).status_code
            for _ in range(3)
        ]
    assert codes == [refused, refused, 429]


@pytest.mark.parametrize(
    ("headers", "refused"),
    [({"Authorization": "Bearer wrong-token-0123456789abcdefgh"}, 401), (AUTH["viewer"], 403)],
)
def test_guessing_tokens_on_sos_routes_is_limited(headers: dict[str, str], refused: int) -> None:
    app = make_app(rate_limit="2/minute")
    with _client(app, "10.0.3.1") as c:
        codes = [c.post("/v1/sos/dad/ack", headers=headers).status_code for _ in range(3)]
    assert codes == [refused, refused, 429]


def test_limiter_keys_hold_no_token() -> None:
    app = make_app(rate_limit="50/minute")
    with _client(app, "10.0.4.1") as c:
        for role in ("admin", "family", "viewer"):
            assert c.get("/v1/persons", headers=AUTH[role]).status_code == 200
    layer: Any = app.middleware_stack
    while not isinstance(layer, RateLimit):
        layer = layer.app
    dump = repr(vars(layer._limiter.storage))
    assert "token:" in dump and "10.0.4.1" in dump
    for secret in (ADMIN, FAMILY, VIEWER):
        assert secret not in dump


def test_websocket_handshakes_count_per_address() -> None:
    app = make_app(rate_limit="2/minute")
    with _client(app, "10.0.5.1") as c:
        for _ in range(2):
            with c.websocket_connect(
                "/v1/persons/dad/chat/ws", subprotocols=["bearer", f"bearer.{ADMIN}"]
            ):
                pass
        with pytest.raises(Exception) as info, c.websocket_connect("/v1/persons/dad/chat/ws"):
            pass
    assert getattr(info.value, "code", None) == 1013
