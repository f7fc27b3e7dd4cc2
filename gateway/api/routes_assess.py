from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, HTTPException

from gateway.api.deps import BackendDep, ReaderDep
from gateway.assess import AssessInput

router = APIRouter(tags=["assess"])


class AssessIn(AssessInput):
    """The body of POST /v1/assess: the `healthgw assess` input, typed. Unknown keys,
    strings for numbers, NaN and out-of-range values are refused (422) before assessing."""


_EXAMPLE = {
    "heart_rate": 118,
    "spo2": 91,
    "respiratory_rate": 23,
    "systolic_bp": 105,
    "temperature_c": 38.4,
    "consciousness": "A",
}


@router.post("/v1/assess")
def assess(
    backend: BackendDep,
    _: ReaderDep,
    body: Annotated[AssessIn, Body(examples=[_EXAMPLE])],
) -> dict[str, Any]:
    """Vitals -> NEWS2 total, level and points per parameter, range class per vital,
    plausibility flags. Same output as `healthgw assess`."""
    try:
        return backend.assess(body.model_dump(exclude_unset=True))
    except ValueError as exc:  # e.g. a `person` not in the household
        raise HTTPException(422, str(exc)) from None
