from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from gateway.api.deps import AdminDep, BackendDep
from gateway.api.responses import ACT, errors

router = APIRouter(tags=["health"])


class HealthOut(BaseModel):
    status: str


class ReadyOut(BaseModel):
    ready: bool
    checks: dict[str, bool] = Field(description="safety-critical: any one false is a 503")
    components: dict[str, bool] = Field(description="every supervised part, critical or not")
    texts: str = Field(description='how texts leave: e.g. "twilio" or "offline outbox"')


@router.get("/healthz")
def healthz() -> HealthOut:
    """Liveness: the process answers."""
    return HealthOut(status="ok")


@router.get(
    "/readyz",
    response_model=ReadyOut,
    responses={503: {"model": ReadyOut, "description": "Not ready (the same body)"}},
)
def readyz(backend: BackendDep) -> JSONResponse:
    """Readiness: broker connected, store and text dispatcher running."""
    checks = dict(backend.ready())
    ok = all(checks.values())
    body = {
        "ready": ok,
        "checks": checks,  # safety-critical: any one false is a 503
        "components": dict(backend.components()),  # every supervised part, critical or not
        "texts": backend.texts_mode(),  # "offline outbox": no text leaves the house
    }
    return JSONResponse(body, status_code=200 if ok else 503)


@router.get("/v1/stats", responses=ACT)
def stats(backend: BackendDep, _: AdminDep) -> dict[str, Any]:
    return backend.stats()


_PROMETHEUS = {
    "description": "Prometheus text exposition",
    "content": {"text/plain": {"schema": {"type": "string"}}},
}


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: _PROMETHEUS, **errors(429)},  # rate limited like any route
)
def metrics(request: Request) -> Response:
    """Prometheus exposition: counts and latencies only (no person-level labels, no PHI), so
    it needs no token, like /healthz. Bind the API to the hub's LAN only."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    return Response(generate_latest(request.app.state.metrics), media_type=CONTENT_TYPE_LATEST)
