"""Rate limits on Twilio's webhooks: a request with a valid Twilio signature is never limited,
every other request there (unsigned, a forged signature, a wrong or even a right bearer, a
replayed MessageSid) counts against the client address and gets 429 past the limit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.datastructures import ImmutableMultiDict
from twilio.request_validator import RequestValidator

from tests.gateway.api.stub import ADMIN, AUTH, make_app

TWILIO = "twilio-auth-token-for-limit-tests"
BASE = "http://testserver"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
Pairs = Sequence[tuple[str, str]]


def _app(limit: str = "3/minute") -> FastAPI:
    return make_app(rate_limit=limit, twilio_auth_token=TWILIO)


def _client(app: FastAPI, address: str) -> TestClient:
    return TestClient(app, client=(address, 40000))


def _inbound(sid: str, body: str = "OK") -> list[tuple[str, str]]:
    return [("From", "+15005550006"), ("Body", body), ("MessageSid", sid)]


def _sign(path: str, pairs: Pairs) -> str:
    return str(RequestValidator(TWILIO).compute_signature(BASE + path, ImmutableMultiDict(pairs)))


def _post(c: TestClient, path: str, pairs: Pairs, **headers: str) -> Any:  # a Response
    return c.post(path, content=urlencode(pairs), headers={**FORM, **headers})


def _signed(c: TestClient, path: str, pairs: Pairs) -> Any:
    return _post(c, path, pairs, **{"X-Twilio-Signature": _sign(path, pairs)})


ATTACKS: dict[str, dict[str, str]] = {
    "unsigned": {},
    "forged_signature": {"X-Twilio-Signature": "bm90IGEgc2lnbmF0dXJlIGF0IGFsbA=="},
    "wrong_bearer": {"Authorization": "Bearer guess-0123456789abcdefghijklmn"},
    "forged_and_wrong_bearer": {
        "X-Twilio-Signature": "bm90IGEgc2lnbmF0dXJlIGF0IGFsbA==",
        "Authorization": "Bearer guess-0123456789abcdefghijklmn",
    },
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
@pytest.mark.parametrize("path", ["/v1/sms/inbound", "/v1/sms/status"])
def test_failed_attempts_are_counted_per_address(attack: str, path: str) -> None:
    app = _app("3/minute")
    with _client(app, "10.0.6.1") as c, _client(app, "10.0.6.2") as other:
        codes = [_post(c, path, _inbound("SM1"), **ATTACKS[attack]) for _ in range(4)]
        assert [r.status_code for r in codes] == [403, 403, 403, 429]
        assert 1 <= int(codes[-1].headers["retry-after"]) <= 60
        # Per address: another client is not affected.
        assert _post(other, path, _inbound("SM1"), **ATTACKS[attack]).status_code == 403


def test_signed_webhooks_are_never_limited_even_from_a_blocked_address() -> None:
    # Behind a reverse proxy every client is one address: forgeries must not lock Twilio out.
    app = _app("2/minute")
    with _client(app, "127.0.0.1") as c:
        forged = ATTACKS["forged_signature"]
        codes = [_post(c, "/v1/sms/inbound", _inbound("SMx"), **forged).status_code for _ in range(3)]  # fmt: skip
        assert codes == [403, 403, 429]
        assert _post(c, "/v1/sms/inbound", _inbound("SMx")).status_code == 429  # unsigned
        assert c.get("/v1/persons", headers=AUTH["admin"]).status_code == 429
        for i in range(6):
            r = _signed(c, "/v1/sms/inbound", _inbound(f"SM{i:032x}"))
            assert r.status_code == 200 and "Reply OK" in r.text
            report = [("MessageSid", f"SM{i:032x}"), ("MessageStatus", "delivered")]
            assert _signed(c, "/v1/sms/status", report).status_code == 200
        # ...and they did not reset the count for everyone else.
        assert _post(c, "/v1/sms/inbound", _inbound("SMy"), **forged).status_code == 429


def test_the_admin_bearer_on_the_webhook_is_limited_like_any_request() -> None:
    app = _app("2/minute")
    with _client(app, "10.0.6.3") as c:
        bearer = {"Authorization": f"Bearer {ADMIN}"}
        codes = [_post(c, "/v1/sms/inbound", _inbound(f"SMa{i}"), **bearer).status_code for i in range(3)]  # fmt: skip
    assert codes == [200, 200, 429]


def test_a_replayed_message_is_answered_neutrally_and_counted() -> None:
    app = _app("2/minute")
    with _client(app, "10.0.6.4") as c:
        pairs = _inbound("SM" + "7" * 32)
        first = _signed(c, "/v1/sms/inbound", pairs)
        assert first.status_code == 200 and "<Message>" in first.text
        for _ in range(3):  # replays: 200, nothing said, nothing acted on
            again = _signed(c, "/v1/sms/inbound", pairs)
            assert again.status_code == 200 and "<Message>" not in again.text
        # The replays counted: a forgery from that address is now past the limit.
        forged = ATTACKS["forged_signature"]
        assert _post(c, "/v1/sms/inbound", pairs, **forged).status_code == 429


def test_without_limits_webhooks_behave_as_before() -> None:
    app = make_app(twilio_auth_token=TWILIO)  # rate limits off
    with _client(app, "10.0.6.5") as c:
        for _ in range(5):
            assert _post(c, "/v1/sms/inbound", _inbound("SM1")).status_code == 403
        assert _signed(c, "/v1/sms/inbound", _inbound("SM2")).status_code == 200
