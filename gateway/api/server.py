"""The FastAPI application: small route modules over one Backend."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException

from gateway.api import (
    routes_assess,
    routes_chat,
    routes_console,
    routes_export,
    routes_health,
    routes_ladder,
    routes_live,
    routes_meds,
    routes_people,
    routes_records,
    routes_reports,
    routes_summary,
)
from gateway.api.deps import Backend, Tokens
from gateway.api.guards import (
    DEFAULT_MAX_BODY_BYTES,
    BodyLimit,
    RateLimit,
    parse_rate_limit,
    route_path,
)
from gateway.api.live_feed import LiveFeed
from gateway.api.responses import REF, ErrorOut, ValidationErrorOut, errors
from gateway.base.db import Database
from gateway.base.errors import ConfigError
from gateway.base.metrics import GatewayCollector, registry_for
from gateway.base.rate_spec import DEFAULT_RATE_LIMIT
from gateway.notify.replay import MemorySeen, SeenMessages, StoredSeen


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    """422 naming the fields and the rule, never the values sent (they may be PHI)."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    detail = [{"loc": list(e.get("loc", ())), "msg": e.get("msg"), "type": e.get("type")}
              for e in errors]  # fmt: skip
    return JSONResponse({"detail": detail}, status_code=422)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """HTTPException as FastAPI answers it, except that a 405's Allow lists every method of
    the path: one route per method, and Starlette would name only the first route's."""
    assert isinstance(exc, StarletteHTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        path = route_path(request.scope)
        table: list[tuple[re.Pattern[str], set[str]]] = request.app.state.methods
        headers["Allow"] = ", ".join(sorted({m for rx, ms in table if rx.match(path) for m in ms}))
    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=headers)


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document, plus the error bodies gateway.api.responses refers to."""
    if app.openapi_schema is None:
        doc = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes
        )
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        for model in (ErrorOut, ValidationErrorOut):
            schema = model.model_json_schema(ref_template=REF + "{model}")
            schemas.update(schema.pop("$defs", {}))
            schemas[model.__name__] = schema
        app.openapi_schema = doc
    return app.openapi_schema


def create_app(
    backend: Backend,
    *,
    admin_token: str,
    family_tokens: Sequence[str] = (),
    viewer_tokens: Sequence[str] = (),
    twilio_auth_token: str | None = None,
    public_url: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    rate_limit: str = DEFAULT_RATE_LIMIT,
    safety_db: Database | None = None,
    sms_seen: SeenMessages | None = None,
    extra_routers: Sequence[APIRouter] = (),
) -> FastAPI:
    """`extra_routers`: routes the composition root adds (healthgw/sim_routes.py), under the
    same guards and error handling. Raises WeakTokenError (a ConfigError) for a weak token, ConfigError for a bad limit."""
    try:
        limits = parse_rate_limit(rate_limit)
    except ValueError as exc:
        raise ConfigError(f"HEALTHGW_API_RATE_LIMIT: {exc}") from None
    app = FastAPI(
        title="healthgw",
        version="0.1.0",
        description="Home health gateway API. Bearer token: admin; family (read with PHI"
        " redacted, SOS ack and all-clear); viewer (read-only, PHI redacted).",
    )
    app.state.backend = backend
    app.state.tokens = Tokens(admin_token, family_tokens, viewer_tokens)
    app.state.max_body_bytes = max_body_bytes
    app.state.live = LiveFeed()  # the console's live streams (gateway/api/routes_live.py)
    app.state.live.attach(backend)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    # Added last = outermost: rate limits, then the body limit, both before any routing.
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    app.add_middleware(RateLimit, tokens=lambda: app.state.tokens, limits=limits)
    app.state.twilio_auth_token = twilio_auth_token
    app.state.public_url = public_url  # the URL Twilio signs webhooks with (behind a proxy)
    # Inbound MessageSids already acted on: durable in safety.db (the gateway passes it);
    # without it (tests, tools) for the process's lifetime only.
    if sms_seen is None:
        sms_seen = StoredSeen(safety_db) if safety_db is not None else MemorySeen()
    app.state.sms_seen = sms_seen
    app.state.metrics = registry_for(
        GatewayCollector(
            backend.stats,
            {
                "healthgw_reading_process_seconds": (
                    "Time to score and store one reading",
                    backend.reading_latency,
                ),
                "healthgw_sos_first_text_seconds": (
                    "Hard SOS received to the first text handed to the SMS provider",
                    backend.sos_latency,
                ),
            },
            backend.tool_metrics,
        )
    )
    modules = (
        routes_health,
        routes_assess,
        routes_people,
        routes_records,
        routes_chat,
        routes_meds,
        routes_reports,
        routes_summary,
        routes_export,
        routes_ladder,
        routes_live,
        routes_console,
    )
    routers = [*(module.router for module in modules), *extra_routers]
    for router in routers:
        # The guards answer before any route: a bad Content-Length or a body over the limit.
        app.include_router(router, responses=errors(400, 413))
    app.state.methods = [
        (r.path_regex, set(r.methods or ()))
        for router in routers
        for r in router.routes
        if isinstance(r, APIRoute)
    ]
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app
