"""Pure ASGI guards in front of every route: a request body size limit and rate limits.

Both run before routing, authentication and parsing, so an unauthenticated client cannot
make the hub buffer or parse a large body, or try tokens at full speed.

Rate limits use `limits` directly (slowapi applies one key function per limit; we need two
keys, the token and the client address, and exemptions that depend on the token).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Sequence

from fastapi import HTTPException, status
from limits import RateLimitItem, parse_many
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.api.rate_spec import check_rate_limit
from gateway.api.tokens import KeyHasher, Tokens

DEFAULT_MAX_BODY_BYTES = 64 * 1024
TOO_LARGE = 413  # starlette renamed the constant; the number is what clients see

# Never limited: liveness probes, and Twilio's webhooks (signed, retried by Twilio, and an
# emergency contact's "OK" must always land).
ALWAYS_EXEMPT = re.compile(r"^/(?:healthz|readyz)$|^/v1/sms/")
# Never limited for a valid admin or family token: pressing, ending or acknowledging an SOS
# and the all-clear must work however busy the caller's screen has been. A wrong token is.
EMERGENCY = re.compile(r"^/v1/sos/[^/]+/[^/]+$|^/v1/persons/[^/]+/alerts/clear$")


def parse_rate_limit(spec: str) -> list[RateLimitItem]:
    """A limit like "120/minute" or "120/minute;2000/hour", or "off". ValueError if invalid."""
    return [item for part in check_rate_limit(spec) for item in parse_many(part)]


async def _respond(
    send: Send, code: int, detail: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": code,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyTooLarge(HTTPException):
    """Raised from receive() once a streamed body passes the limit; FastAPI re-raises
    HTTPExceptions from body reading, so a route that reads the body answers 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(TOO_LARGE, f"request body is larger than {limit} bytes")


class BodyLimit:
    """413 for a Content-Length over the limit (the body is never read), and for a body
    without one (chunked) as soon as the bytes received pass the limit."""

    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_big = f"request body is larger than {self.max_bytes} bytes"
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                if not value.strip().isdigit():
                    await _respond(send, status.HTTP_400_BAD_REQUEST, "invalid Content-Length")
                    return
                if int(value) > self.max_bytes:
                    await _respond(send, TOO_LARGE, too_big)
                    return
        received = 0
        started = False

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except BodyTooLarge:
            # Raised outside FastAPI's body reading (a route reading request.stream()).
            if started:
                raise
            await _respond(send, TOO_LARGE, too_big)


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            text = value.decode("latin-1")
            return text[7:].strip() if text[:7].lower() == "bearer " else None
    return None


class RateLimit:
    """Per client address and per valid token (keyed by a keyed hash, never the token).

    A reverse proxy in front makes every client one address: the per-token limit still
    holds; forwarded-for headers are not trusted (anyone on the LAN could set them)."""

    def __init__(
        self,
        app: ASGIApp,
        tokens: Callable[[], Tokens],
        limits: Sequence[RateLimitItem],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.app = app
        self._tokens = tokens
        self._items = tuple(limits)
        self._limiter = MovingWindowRateLimiter(MemoryStorage())
        self._hash = KeyHasher()
        self._clock = clock

    def _keys(self, scope: Scope) -> list[str] | None:
        """The keys to count this request under, or None when it is not limited."""
        path: str = scope.get("path", "")
        if scope["type"] == "http" and ALWAYS_EXEMPT.match(path):
            return None
        client = scope.get("client")
        keys = [f"addr:{client[0] if client else 'unknown'}"]
        token = _bearer(scope)
        role = self._tokens().role(token)
        if role is not None and token:
            if role != "viewer" and EMERGENCY.match(path):
                return None  # a viewer may not act: its 403s count like any request
            keys.append(f"token:{self._hash(token)}")
        return keys

    def _blocked(self, keys: list[str]) -> float | None:
        """Seconds until the request would be allowed, or None (and it is counted)."""
        for item in self._items:
            for key in keys:
                if not self._limiter.test(item, "api", key):
                    reset = self._limiter.get_window_stats(item, "api", key).reset_time
                    return max(1.0, reset - self._clock())
        for item in self._items:
            for key in keys:
                self._limiter.hit(item, "api", key)
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not self._items:
            await self.app(scope, receive, send)
            return
        keyed = self._keys(scope)
        wait = self._blocked(keyed) if keyed is not None else None
        if wait is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1013})  # "try again later"
        else:
            retry = str(math.ceil(wait)).encode()
            await _respond(
                send, status.HTTP_429_TOO_MANY_REQUESTS, "rate limit exceeded",
                [(b"retry-after", retry)],
            )  # fmt: skip
