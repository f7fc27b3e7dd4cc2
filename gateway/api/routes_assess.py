from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, HTTPException

from gateway.api.deps import BackendDep, ReaderDep

router = APIRouter(tags=["assess"])


@router.post("/v1/assess")
def assess(
    backend: BackendDep,
    _: ReaderDep,
    body: dict[str, Any] = Body(  # noqa: B008 - FastAPI's declaration style
        ...,
        examples=[
            {
                "heart_rate": 118,
                "spo2": 91,
                "respiratory_rate": 23,
                "systolic_bp": 105,
                "temperature_c": 38.4,
                "consciousness": "A",
            }
        ],
    ),
) -> dict[str, Any]:
    """Vitals -> NEWS2 total, level and points per parameter, range class per vital,
    plausibility flags. Same output as `healthgw assess`."""
    try:
        return backend.assess(body)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
