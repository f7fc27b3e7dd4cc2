"""Item 3: the chat WebSocket takes its token from a subprotocol or a first auth message,
echoes only the non-secret subprotocol name, and refuses a token in the URL."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from gateway.api import ws_auth
from tests.gateway.api.live import serving
from tests.gateway.api.stub import ADMIN, FAMILY, StubBackend, make_app

URL = "/v1/persons/dad/chat/ws"


@pytest.fixture
def backend() -> StubBackend:
    return StubBackend()


@pytest.fixture
def client(backend: StubBackend) -> Iterator[TestClient]:
    with TestClient(make_app(backend)) as c:
        yield c


def _chat_once(ws: object) -> None:
    ws.send_json({"text": "I have a rash"})  # type: ignore[attr-defined]
    got = [ws.receive_json(), ws.receive_json()]  # type: ignore[attr-defined]
    assert {"accepted": True, "session_id": "s1"} in got
    assert any(m.get("expects_answer") for m in got)


def test_token_in_subprotocol_and_only_the_name_echoed(client: TestClient) -> None:
    with client.websocket_connect(URL, subprotocols=["bearer", f"bearer.{ADMIN}"]) as ws:
        assert ws.accepted_subprotocol == "bearer"
        _chat_once(ws)


def test_token_in_first_message(client: TestClient, backend: StubBackend) -> None:
    with client.websocket_connect(URL, subprotocols=["bearer"]) as ws:
        assert ws.accepted_subprotocol == "bearer"
        ws.send_json({"type": "auth", "token": ADMIN})
        assert ws.receive_json() == {"type": "auth", "ok": True}
        _chat_once(ws)
    assert backend.said == ["I have a rash"]  # the auth message is not chat


@pytest.mark.parametrize(
    "first",
    [
        {"type": "auth", "token": "wrong-token-0123456789abcdefghij"},
        {"type": "auth", "token": FAMILY},  # admin only, as before
        {"type": "auth"},
        {"text": "hello"},  # chatting before authenticating
        "not json",
    ],
)
def test_bad_first_message_closes_4401(
    client: TestClient, backend: StubBackend, first: object
) -> None:
    with client.websocket_connect(URL) as ws:
        ws.send_text(first if isinstance(first, str) else json.dumps(first))
        with pytest.raises(WebSocketDisconnect) as info:
            ws.receive_json()
    assert info.value.code == 4401
    assert backend.said == []


def test_no_auth_message_in_time_closes_4401(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ws_auth, "AUTH_TIMEOUT_S", 0.2)
    with client.websocket_connect(URL) as ws, pytest.raises(WebSocketDisconnect) as info:
        ws.receive_json()
    assert info.value.code == 4401


@pytest.mark.parametrize(
    "offer",
    [
        {"subprotocols": ["bearer", "bearer.wrong-token-0123456789abcdef"]},
        {"subprotocols": ["bearer", f"bearer.{FAMILY}"]},
        {"headers": {"Authorization": f"Bearer {FAMILY}"}},
        {"params": "token=wrong"},
    ],
)
def test_wrong_handshake_credential_is_refused_before_opening(
    client: TestClient, offer: dict[str, object]
) -> None:
    url = URL + ("?" + str(offer.pop("params")) if "params" in offer else "")
    with pytest.raises(WebSocketDisconnect) as info, client.websocket_connect(url, **offer):
        pass
    assert info.value.code == ws_auth.CLOSE_UNAUTHORIZED


def test_header_still_works(client: TestClient) -> None:
    with client.websocket_connect(URL, headers={"Authorization": f"Bearer {ADMIN}"}) as ws:
        assert ws.accepted_subprotocol is None
        _chat_once(ws)


def test_a_token_in_the_url_is_refused_even_a_right_one_logged_once_without_it(
    client: TestClient, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ws_auth, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="gateway.api.ws_auth"):
        for _ in range(2):
            with (
                pytest.raises(WebSocketDisconnect) as info,
                client.websocket_connect(f"{URL}?token={ADMIN}"),
            ):
                pass
            # Refused before the socket opens: an HTTP 403 on a real server.
            assert info.value.code == ws_auth.CLOSE_UNAUTHORIZED
    warnings = [r for r in caplog.records if "?token=" in r.getMessage()]
    assert len(warnings) == 1
    assert ADMIN not in caplog.text


def test_unknown_person_after_auth(client: TestClient) -> None:
    url = "/v1/persons/nobody/chat/ws"
    with (
        pytest.raises(WebSocketDisconnect) as info,
        client.websocket_connect(url, subprotocols=["bearer", f"bearer.{ADMIN}"]),
    ):
        pass
    assert info.value.code == 4404


def test_real_handshake_never_echoes_the_token() -> None:
    with serving(make_app(StubBackend())) as host:
        url = f"ws://{host}{URL}"
        with connect(url, subprotocols=["bearer", f"bearer.{ADMIN}"]) as ws:  # type: ignore[list-item]
            assert ws.subprotocol == "bearer"
            assert ws.response is not None
            assert ws.response.headers["Sec-WebSocket-Protocol"] == "bearer"
            assert ADMIN not in str(ws.response.headers)
            ws.send(json.dumps({"text": "hi"}))
            assert json.loads(ws.recv(5))
        with pytest.raises(InvalidStatus) as info:
            connect(url, subprotocols=["bearer", "bearer.wrong-token-0123456789abcdef"])  # type: ignore[list-item]
        assert info.value.response.status_code == 403
        # A browser-style client: no credential in the handshake, then the auth message.
        with connect(url, subprotocols=["bearer"]) as ws:  # type: ignore[list-item]
            ws.send(json.dumps({"type": "auth", "token": ADMIN}))
            assert json.loads(ws.recv(5)) == {"type": "auth", "ok": True}


def test_client_leaving_before_auth_is_quiet(client: TestClient, backend: StubBackend) -> None:
    with client.websocket_connect(URL) as ws:  # server exceptions would surface here
        ws.close()
    assert backend.said == []
