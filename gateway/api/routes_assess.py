from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, HTTPException, status
from pydantic import ConfigDict, model_validator

from gateway.api.deps import BackendDep, ReaderDep
from gateway.api.responses import BODY, PERSON, READ
from gateway.contract.topics import VITAL_FIELDS
from gateway.monitor.assess import AssessInput

router = APIRouter(tags=["assess"], responses=READ | BODY)

TS_MIN = 946_684_800  # parse_ts: a clock before 2000 never synced


def _schema(schema: dict[str, Any]) -> None:
    """What the validators check beyond the field types, so the document says it too."""
    props = schema.get("properties", {})
    if "ts" in props:
        props["ts"] = {
            "anyOf": [{"type": "number", "minimum": TS_MIN}, {"type": "null"}],
            "description": "epoch seconds (an RFC 3339 string with an offset is taken too)",
        }
    # At least one vital (battery or location alone are not a reading).
    schema["anyOf"] = [
        {"required": [f], "properties": {f: {"not": {"type": "null"}}}} for f in VITAL_FIELDS
    ]


_INTEGERS = ("seq", "steps", "age", "age_days", "spo2_scale")


class AssessIn(AssessInput):
    """The body of POST /v1/assess: the `healthgw assess` input, typed. Unknown keys,
    strings for numbers, NaN and out-of-range values are refused (422) before assessing."""

    model_config = ConfigDict(json_schema_extra=_schema)

    @model_validator(mode="before")
    @classmethod
    def _whole_floats(cls, data: Any) -> Any:
        """JSON has one number type: 3.0 is the integer 3 (JSON Schema agrees), which the
        strict input model would refuse. Booleans and strings stay refused."""
        if not isinstance(data, dict):
            return data
        fixed = {k: int(v) for k in _INTEGERS if type(v := data.get(k)) is float and v.is_integer()}
        return {**data, **fixed} if fixed else data


_EXAMPLE = {
    "heart_rate": 118,
    "spo2": 91,
    "respiratory_rate": 23,
    "systolic_bp": 105,
    "temperature_c": 38.4,
    "consciousness": "A",
}


@router.post("/v1/assess", responses=PERSON)
def assess(
    backend: BackendDep,
    _: ReaderDep,
    body: Annotated[AssessIn, Body(examples=[_EXAMPLE])],
) -> dict[str, Any]:
    """Vitals -> NEWS2 total, level and points per parameter, range class per vital,
    plausibility flags. Same output as `healthgw assess`. A `person` not in the household
    is 404, like every route that names one."""
    if body.person is not None and backend.household.person(body.person) is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such person")
    try:
        return backend.assess(body.model_dump(exclude_unset=True))
    except ValueError as exc:  # a rule across fields; the message names fields, not values
        issue = {"loc": ["body"], "msg": str(exc), "type": "value_error"}
        raise HTTPException(422, [issue]) from None
