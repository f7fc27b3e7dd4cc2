"""The FastAPI application: small route modules over one Backend."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import FastAPI

from gateway.api import (
    routes_assess,
    routes_chat,
    routes_health,
    routes_ladder,
    routes_meds,
    routes_people,
    routes_records,
)
from gateway.api.deps import Backend, Tokens
from gateway.metrics import GatewayCollector, registry_for


def create_app(
    backend: Backend,
    *,
    admin_token: str,
    family_tokens: Sequence[str] = (),
    twilio_auth_token: str | None = None,
) -> FastAPI:
    app = FastAPI(
        title="healthgw",
        version="0.1.0",
        description="Home health gateway API. Bearer token: admin, or read-only family.",
    )
    app.state.backend = backend
    app.state.tokens = Tokens(admin_token, family_tokens)
    app.state.twilio_auth_token = twilio_auth_token
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
    for module in (
        routes_health,
        routes_assess,
        routes_people,
        routes_records,
        routes_chat,
        routes_meds,
        routes_ladder,
    ):
        app.include_router(module.router)
    return app
