"""One-shot assessment of a set of vitals: the single implementation behind `POST /v1/assess`
and `healthgw assess`.

Input: any vitals payload field (ts optional), plus `spo2_scale` (1|2), `person` (household
id, resolved by the caller), the profile keys `age`, `age_days`, `sex`, `conditions`,
`medications`, and `interval_s` (seconds the `steps` were counted over, default 60). Output:
{"news2", "ranges", "plausibility", "activity", "news2_applicable"}. Values that fail the
plausibility check are never scored: they become NEWS2 `missing` plus a plausibility flag.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from datetime import date
from typing import TYPE_CHECKING, Any, Literal, TextIO

from pydantic import ConfigDict, Field, ValidationError, field_validator

from gateway.base.errors import HealthGWError
from gateway.contract.topics import ID_PATTERN, NUMERIC_VITALS, VitalsPayload, parse_ts
from gateway.contract.values import Reading
from gateway.monitor.context import activity_from_steps
from gateway.monitor.news2 import score_news2
from gateway.monitor.plausibility import PlausibilityChecker
from gateway.monitor.ranges import (
    Profile,
    classify,
    news2_applicable,
    ranges_for,
    spo2_scale_for,
)

if TYPE_CHECKING:
    from gateway.household.model import Household

DEFAULT_INTERVAL_S = 60.0


class AssessInputError(HealthGWError, ValueError):
    """The input cannot be assessed. The message names fields, never their values."""


class AssessInput(VitalsPayload):
    """A vitals payload with `ts` optional, plus the assessment's own keys."""

    # Strict types: a JSON true or "72" for a pulse is a mistake to report, not coerce (lax
    # mode would score true as 1 bpm). Merged with the payload's extra=forbid, no NaN/inf.
    model_config = ConfigDict(strict=True)
    ts: float | None = None  # type: ignore[assignment]
    spo2_scale: Literal[1, 2] | None = None
    person: str | None = Field(default=None, pattern=ID_PATTERN)
    age: int | None = Field(default=None, ge=0, le=150)
    # For infants: the fever red flag (>= 38 °C) applies under 3 months (91 days).
    age_days: int | None = Field(default=None, ge=0, le=150 * 366)
    sex: Literal["female", "male", "other"] | None = None
    conditions: list[str] | None = Field(default=None, max_length=50)
    medications: list[str] | None = Field(default=None, max_length=50)
    interval_s: float | None = Field(default=None, gt=0, le=86_400)

    @field_validator("ts", mode="before")
    @classmethod
    def _ts(cls, v: Any) -> float | None:  # type: ignore[override]
        return None if v is None else parse_ts(v)

    @field_validator("spo2_scale", mode="before")
    @classmethod
    def _scale_is_int(cls, v: Any) -> Any:
        # Literal[1, 2] would take True as 1; a boolean scale is a mistake, not a choice.
        if isinstance(v, bool):
            raise ValueError("spo2_scale must be 1 or 2")
        return v


def _problems(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_input=False, include_url=False, include_context=False):
        where = ".".join(str(p) for p in err["loc"]) or "input"
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {msg}")
    return "; ".join(parts)


def validate_input(reading: Mapping[str, Any]) -> AssessInput:
    if not isinstance(reading, Mapping):
        raise AssessInputError("input must be a JSON object")
    try:
        return AssessInput.model_validate(dict(reading))
    except ValidationError as exc:
        raise AssessInputError(_problems(exc)) from None


def _profile(data: AssessInput, base: Profile | None) -> Profile:
    # Keys given with the reading replace the matching fields of the person's profile.
    profile = base or Profile()
    changes: dict[str, Any] = {}
    if data.age is not None:
        changes["age"] = data.age
    if data.age_days is not None:
        changes["age_days"] = data.age_days
        if data.age is None:
            changes["age"] = data.age_days // 365
    if data.sex is not None:
        changes["sex"] = data.sex
    if data.conditions is not None:
        changes["conditions"] = frozenset(data.conditions)
    if data.medications is not None:
        changes["medications"] = frozenset(data.medications)
    if not changes:
        return profile
    try:
        return dataclasses.replace(profile, **changes)
    except ValueError as exc:
        raise AssessInputError(str(exc)) from None


def assess(
    reading: Mapping[str, Any],
    *,
    profile: Profile | None = None,
    spo2_scale: int | None = None,
) -> dict[str, Any]:
    """Assess one set of vitals. spo2_scale: the reading's key, else this argument, else the
    profile (copd_hypercapnic -> 2), else 1. Raises AssessInputError (a ValueError)."""
    if spo2_scale not in (None, 1, 2) or isinstance(spo2_scale, bool):
        raise AssessInputError("spo2_scale must be 1 or 2")
    data = validate_input(reading)
    prof = _profile(data, profile)
    scale = data.spo2_scale or spo2_scale or spo2_scale_for(prof)
    # The SpO2 ranges follow the scale asked for: scale 2 means a hypercapnic target.
    if scale == 2 and spo2_scale_for(prof) != 2:
        prof = dataclasses.replace(prof, conditions=prof.conditions | {"copd_hypercapnic"})
    elif scale == 1 and spo2_scale_for(prof) == 2:
        prof = dataclasses.replace(
            prof, conditions=frozenset(c for c in prof.conditions if c != "copd_hypercapnic")
        )

    activity = activity_from_steps(data.steps, data.interval_s or DEFAULT_INTERVAL_S)
    ranges = ranges_for(prof, activity)
    values = {v: getattr(data, v) for v in NUMERIC_VITALS if getattr(data, v) is not None}
    # A fresh checker has no history, so only the range and consistency rules can fire here.
    checked = PlausibilityChecker().check(
        Reading(person=data.person or "assess", device="assess", ts=data.ts or 0.0, **values),
        ranges,
    )
    ok = checked.accepted
    news2 = score_news2(
        respiratory_rate=ok.get("respiratory_rate"),
        spo2=ok.get("spo2"),
        on_supplemental_o2=data.on_supplemental_o2,
        systolic_bp=ok.get("systolic_bp"),
        heart_rate=ok.get("heart_rate"),
        consciousness=data.consciousness,
        temperature_c=ok.get("temperature_c"),
        spo2_scale=scale,
    )
    return {
        "news2": news2.to_dict(),
        "ranges": {v: str(classify(x, ranges[v])) for v, x in values.items()},
        "plausibility": [
            {"vital": f.vital, "kind": f.kind, "detail": f.detail} for f in checked.flags
        ],
        "activity": activity,
        "news2_applicable": news2_applicable(prof),
    }


def profile_for(
    reading: Mapping[str, Any], household: Household | None, today: date | None = None
) -> Profile | None:
    """The household profile a reading's `person` names (None when it names nobody)."""
    person_id = reading.get("person") if isinstance(reading, Mapping) else None
    if person_id is None or not isinstance(person_id, str):
        return None  # absent, or a wrong type the input validation reports
    if household is None:
        raise AssessInputError("person: no household file is loaded to look the person up")
    person = household.person(person_id)
    if person is None:
        raise AssessInputError("person: not in the household")
    return Profile.from_person(person, today or date.today())


def assess_request(
    body: Mapping[str, Any], household: Household | None, today: date | None = None
) -> dict[str, Any]:
    """`POST /v1/assess`: resolve `person` against the household, then assess."""
    return assess(body, profile=profile_for(body, household, today))


def run_cli(
    lines: Iterable[str],
    out: TextIO,
    err: TextIO,
    household: Household | None,
    *,
    today: date | None = None,
) -> int:
    """JSON lines in, JSON lines out (one per non-blank input line). A bad line becomes
    {"line": N, "error": ...} in place and a message on `err`; returns 1 if any line failed."""
    failed = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise AssessInputError(f"not valid JSON ({exc.msg}, column {exc.colno})") from None
            if not isinstance(obj, dict):
                raise AssessInputError("each line must be a JSON object")
            result: dict[str, Any] = assess_request(obj, household, today)
        except AssessInputError as exc:
            failed = True
            result = {"line": number, "error": str(exc)}
            err.write(f"healthgw assess: line {number}: {exc}\n")
        out.write(json.dumps(result, sort_keys=True, separators=(",", ":")) + "\n")
    return 1 if failed else 0
