"""WebSocket credentials. Browsers cannot set headers on a WebSocket, and a token in the URL
ends up in proxy and access logs, so a client authenticates in one of these ways:

1. Subprotocols: offer `["bearer", "bearer.<token>"]`. The server echoes only `bearer`; the
   entry carrying the token is never sent back.
2. First message: connect with no credential, then send `{"type": "auth", "token": "..."}`
   within AUTH_TIMEOUT_S; the server answers `{"type": "auth", "ok": true}`.
3. `Authorization: Bearer <token>` (non-browser clients).
A token in the URL (`?token=`) is refused before the socket opens (HTTP 403), whatever it is:
URLs end up in proxy, access and browser logs. It was deprecated before; the refusal is logged
once per process, without the token.

A wrong credential offered in the handshake is refused before the socket opens (HTTP 403);
one sent as the first message closes the socket with 4401.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Literal

from fastapi import WebSocket, WebSocketDisconnect

from gateway.api.tokens import Tokens

log = logging.getLogger(__name__)

SUBPROTOCOL = "bearer"
TOKEN_PREFIX = "bearer."
AUTH_TIMEOUT_S = 5.0
MAX_AUTH_MESSAGE = 4096
CLOSE_UNAUTHORIZED = 4401

Source = Literal["subprotocol", "header", "url", "none"]
_warned: set[str] = set()


def offered(websocket: WebSocket) -> tuple[str, Source]:
    """The token the handshake carries and where it came from ("" and "none" if none)."""
    for proto in websocket.scope.get("subprotocols", ()):
        if proto.startswith(TOKEN_PREFIX):
            return proto[len(TOKEN_PREFIX) :], "subprotocol"
    header = websocket.headers.get("authorization", "")
    if header[:7].lower() == "bearer ":
        return header[7:].strip(), "header"
    if "token" in websocket.query_params:
        if "url" not in _warned:
            _warned.add("url")
            log.warning(
                "a WebSocket client sent its token as ?token= and was refused (URLs are "
                "logged); offer the subprotocols [%r, %r] or send an auth message instead",
                SUBPROTOCOL,
                TOKEN_PREFIX + "<token>",
            )
        return "", "url"  # never read: refused below, whatever it is
    return "", "none"


def echo(websocket: WebSocket) -> str | None:
    """The subprotocol to accept with: the non-secret name, when the client offered it."""
    return SUBPROTOCOL if SUBPROTOCOL in websocket.scope.get("subprotocols", ()) else None


async def first_message_token(websocket: WebSocket) -> str | None:
    """The token from an accepted socket's first message, or None (bad, late or absent)."""
    try:
        raw = await asyncio.wait_for(websocket.receive_text(), AUTH_TIMEOUT_S)
    except (TimeoutError, WebSocketDisconnect, KeyError, RuntimeError):
        return None  # KeyError/RuntimeError: a binary frame or a closed socket
    if len(raw) > MAX_AUTH_MESSAGE:
        return None
    try:
        msg = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(msg, dict) or msg.get("type") != "auth":
        return None
    token = msg.get("token")
    return token if isinstance(token, str) else None


async def _close(websocket: WebSocket, code: int) -> None:
    # The client may already be gone (a scanner, a timeout): nothing to tell it then.
    with contextlib.suppress(RuntimeError, OSError, WebSocketDisconnect):
        await websocket.close(code=code)


async def admit(websocket: WebSocket, tokens: Tokens, *, person_known: bool) -> bool:
    """Authenticate an admin and accept the socket; False once it has been refused."""
    token, source = offered(websocket)
    if source == "url":
        await _close(websocket, CLOSE_UNAUTHORIZED)  # before accept: an HTTP 403
        return False
    if source == "none":
        await websocket.accept(subprotocol=echo(websocket))
        token = await first_message_token(websocket) or ""
    if tokens.role(token) != "admin":
        # Before accept (a credential in the handshake) this is an HTTP 403.
        await _close(websocket, CLOSE_UNAUTHORIZED)
        return False
    if not person_known:
        await _close(websocket, 4404)
        return False
    if source == "none":
        await websocket.send_json({"type": "auth", "ok": True})
    else:
        await websocket.accept(subprotocol=echo(websocket))
    return True
