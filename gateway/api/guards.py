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
from dataclasses import dataclass

from fastapi import HTTPException, status
from limits import RateLimitItem, parse_many
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.api.tokens import KeyHasher, Role, Tokens
from gateway.base.errors import HealthGWError
from gateway.base.rate_spec import check_rate_limit

DEFAULT_MAX_BODY_BYTES = 64 * 1024
TOO_LARGE = 413  # starlette renamed the constant; the number is what clients see

# Never limited: liveness probes.
ALWAYS_EXEMPT = re.compile(r"^/(?:healthz|readyz)$")
# Twilio's webhooks: a request with a valid Twilio signature is never limited (an emergency
# contact's "OK" must always land, even when forgeries through the same proxy exhausted the
# address). Everything else there counts against the address: see WebhookGate.
WEBHOOKS = re.compile(r"^/v1/sms/")
# Never limited for a valid token whose role may call the route: pressing, ending or
# acknowledging an SOS and the all-clear must work however busy the caller's screen has
# been. Exact (method, route) pairs: any other path, method or role counts as usual.
_FAMILY: frozenset[Role] = frozenset({"admin", "family"})
_ADMIN: frozenset[Role] = frozenset({"admin"})
EMERGENCY: tuple[tuple[str, re.Pattern[str], frozenset[Role]], ...] = (
    ("POST", re.compile(r"/v1/sos/[^/]+/start"), _ADMIN),
    ("POST", re.compile(r"/v1/sos/[^/]+/end"), _ADMIN),
    ("POST", re.compile(r"/v1/sos/[^/]+/ack"), _FAMILY),
    ("POST", re.compile(r"/v1/persons/[^/]+/alerts/clear"), _FAMILY),
)  # whole paths (fullmatch: "$" would also pass a path ending in a decoded newline)
GATE = "healthgw.webhook_gate"  # scope key of a signed webhook request's WebhookGate


def emergency_exempt(method: str, path: str, role: Role | None) -> bool:
    """Whether a request is one of the emergency actions, by a role allowed to take it."""
    return role is not None and any(
        method == m and role in roles and pattern.fullmatch(path) for m, pattern, roles in EMERGENCY
    )


@dataclass
class WebhookGate:
    """Put in the scope of a webhook request that carries X-Twilio-Signature, which only
    the route can check (it needs the body). `wait`: the address is already over its limit
    (seconds to wait). The route sets `genuine` for a valid signature on a new message;
    anything else is counted against the address once the response is sent."""

    wait: float | None
    genuine: bool = False


def webhook_gate(scope: Scope) -> WebhookGate | None:
    """The request's gate, or None (rate limits off, or no signature header: counted
    before the route like any request)."""
    gate = scope.get(GATE)
    return gate if isinstance(gate, WebhookGate) else None


def route_path(scope: Scope) -> str:
    """The path below the app's root (uvicorn --root-path puts the prefix in `path`)."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


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


class BodyTooLarge(HTTPException, HealthGWError):
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


def _header(scope: Scope, wanted: bytes) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == wanted:
            text: str = value.decode("latin-1")
            return text
    return None


def _bearer(scope: Scope) -> str | None:
    text = _header(scope, b"authorization")
    if text is None:
        return None
    return text[7:].strip() if text[:7].lower() == "bearer " else None


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

    def _keys(self, scope: Scope, path: str, addr: str) -> list[str] | None:
        """The keys to count this request under, or None when it is not limited."""
        keys = [addr]
        token = _bearer(scope)
        role = self._tokens().role(token)
        if role is not None and token:
            # A websocket scope has no method: never an emergency action.
            if emergency_exempt(scope.get("method", ""), path, role):
                return None  # a viewer's or a family start's 403s count like any request
            keys.append(f"token:{self._hash(token)}")
        return keys

    def _wait(self, keys: list[str]) -> float | None:
        """Seconds until a request under `keys` would be allowed, or None (not counted)."""
        for item in self._items:
            for key in keys:
                if not self._limiter.test(item, "api", key):
                    reset = self._limiter.get_window_stats(item, "api", key).reset_time
                    return max(1.0, reset - self._clock())
        return None

    def _hit(self, keys: list[str]) -> None:
        for item in self._items:
            for key in keys:
                self._limiter.hit(item, "api", key)

    def _blocked(self, keys: list[str]) -> float | None:
        """Seconds until the request would be allowed, or None (and it is counted)."""
        wait = self._wait(keys)
        if wait is None:
            self._hit(keys)
        return wait

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not self._items:
            await self.app(scope, receive, send)
            return
        path = route_path(scope)
        http = scope["type"] == "http"
        if http and ALWAYS_EXEMPT.match(path):
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        addr = f"addr:{client[0] if client else 'unknown'}"
        if http and WEBHOOKS.match(path) and _header(scope, b"x-twilio-signature") is not None:
            await self._signed_webhook(scope, receive, send, addr)
            return
        keyed = self._keys(scope, path, addr)
        wait = self._blocked(keyed) if keyed is not None else None
        if wait is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1013})  # "try again later"
        else:
            await _too_many(send, wait)

    async def _signed_webhook(self, scope: Scope, receive: Receive, send: Send, addr: str) -> None:
        """A webhook request claiming a Twilio signature. Only the route can check it (it
        needs the body), so it is counted after: a genuine one never, anything else once.
        Over the limit, the route still checks the signature (a genuine request is served)
        and answers 429 instead of 403. Without the header, a webhook request is counted
        before the route like any other, so unsigned guesses past the limit are never parsed."""
        gate = WebhookGate(self._wait([addr]))
        try:
            await self.app({**scope, GATE: gate}, receive, send)
        finally:
            if not gate.genuine:
                self._hit([addr])


async def _too_many(send: Send, wait: float) -> None:
    retry = str(math.ceil(wait)).encode()
    await _respond(
        send, status.HTTP_429_TOO_MANY_REQUESTS, "rate limit exceeded", [(b"retry-after", retry)]
    )
