from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from gateway.api.deps import AdminDep, BackendDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """Liveness: the process answers."""
    return {"status": "ok"}


@router.get("/readyz")
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


@router.get("/v1/stats")
def stats(backend: BackendDep, _: AdminDep) -> dict[str, Any]:
    return backend.stats()


@router.get("/metrics")
def metrics(request: Request) -> Response:
    """Prometheus exposition: counts and latencies only (no person-level labels, no PHI), so
    it needs no token, like /healthz. Bind the API to the hub's LAN only."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    return Response(generate_latest(request.app.state.metrics), media_type=CONTENT_TYPE_LATEST)
