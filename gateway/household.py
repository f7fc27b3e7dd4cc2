"""The household file (HEALTHGW_HOUSEHOLD): who lives here, their devices, contacts and
directories. Validated once at start; every problem is reported with its path and line."""

from __future__ import annotations

import json
from datetime import date, datetime
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from gateway.contract import ID_PATTERN, NUMERIC_VITALS, Location
from gateway.errors import ConfigError

Id = Annotated[str, Field(pattern=ID_PATTERN)]
Phone = Annotated[
    str, Field(pattern=r"^\+[1-9][0-9]{6,14}$", description="E.164, e.g. +447700900123")
]
_CFG = ConfigDict(extra="forbid", frozen=True)


class RangeOverride(BaseModel):
    """Per-person override of one vital's ranges: [low, high] pairs. An override that widens a
    critical limit, or puts the normal range outside the computed critical one, is clamped to
    the computed limits unless `clinician_override` carries a note (who decided it, and why):
    a family must not be able to silence an alarm by editing a YAML file."""

    model_config = _CFG
    normal: tuple[float, float] | None = None
    critical: tuple[float, float] | None = None
    plausible: tuple[float, float] | None = None
    clinician_override: str | None = Field(default=None, min_length=3, max_length=500)

    @model_validator(mode="after")
    def _ordered(self) -> RangeOverride:
        for name in ("normal", "critical", "plausible"):
            pair = getattr(self, name)
            if pair is not None and pair[0] >= pair[1]:
                raise ValueError(f"{name} low must be below high")
        return self


class Device(BaseModel):
    model_config = _CFG
    id: Id
    kind: str = "watch"
    interval_s: float = Field(default=60, gt=0, description="expected seconds between readings")


class Contact(BaseModel):
    model_config = _CFG
    name: str = Field(min_length=1, max_length=100)
    phone: Phone
    relation: str | None = None


class Person(BaseModel):
    model_config = _CFG
    id: Id
    name: str = Field(min_length=1, max_length=100)
    birth_date: date
    sex: Literal["female", "male", "other"]
    phone: Phone | None = None
    location: Location
    conditions: list[str] = Field(default_factory=list)
    medications: list[str] = Field(default_factory=list)
    devices: list[Device] = Field(default_factory=list)
    emergency_contacts: list[Contact] = Field(default_factory=list)
    # A care line, GP or midwife: texted (as well as the family) when a value enters the
    # intervention range (docs/clinical.md, "Who is told").
    clinician: Contact | None = Field(
        default=None,
        validation_alias=AliasChoices(
            "clinician", "care_line", "gp", "gp_contact", "care_contact", "clinician_contact"
        ),
    )
    # Used by the medication checks (paracetamol under 50 kg); optional.
    weight_kg: float | None = Field(default=None, gt=0, le=500)
    # Shorthand for `conditions: [pregnancy]` (MEOWS thresholds instead of NEWS2).
    pregnant: bool = False
    ranges: dict[str, RangeOverride] = Field(default_factory=dict)

    @field_validator("devices", mode="before")
    @classmethod
    def _device_shorthand(cls, v: Any) -> Any:
        # `devices: [watch1]` is accepted as shorthand for `[{id: watch1}]`.
        if isinstance(v, list):
            return [{"id": d} if isinstance(d, str) else d for d in v]
        return v

    @field_validator("conditions", "medications")
    @classmethod
    def _lower(cls, v: list[str]) -> list[str]:
        return [s.strip().lower() for s in v if s.strip()]

    @model_validator(mode="after")
    def _pregnant_flag(self) -> Person:
        if self.pregnant and "pregnancy" not in self.conditions:
            object.__setattr__(self, "conditions", [*self.conditions, "pregnancy"])
        return self

    @field_validator("birth_date")
    @classmethod
    def _past(cls, v: date) -> date:
        if v > date.today():
            raise ValueError("birth_date is in the future")
        return v

    @field_validator("ranges")
    @classmethod
    def _known_vitals(cls, v: dict[str, RangeOverride]) -> dict[str, RangeOverride]:
        unknown = sorted(set(v) - set(NUMERIC_VITALS))
        if unknown:
            raise ValueError(f"unknown vital(s) {unknown}; known: {list(NUMERIC_VITALS)}")
        return v

    def age_on(self, day: date) -> int:
        years = day.year - self.birth_date.year
        if (day.month, day.day) < (self.birth_date.month, self.birth_date.day):
            years -= 1
        return years


class Ambulance(BaseModel):
    model_config = _CFG
    id: Id
    phone: Phone
    location: Location
    name: str | None = None


class Slot(BaseModel):
    model_config = _CFG
    start: datetime
    end: datetime


def parse_interval(text: str) -> Slot:
    """ISO 8601 interval `start/end` (end may be a full timestamp)."""
    if "/" not in text:
        raise ValueError(f"slot {text!r} is not an ISO 8601 interval start/end")
    a, b = text.split("/", 1)
    try:
        start = datetime.fromisoformat(a)
        end = datetime.fromisoformat(b)
    except ValueError as exc:
        raise ValueError(f"slot {text!r} is not an ISO 8601 interval start/end") from exc
    if end <= start:
        raise ValueError(f"slot {text!r} ends before it starts")
    return Slot(start=start, end=end)


SPECIALIZATIONS: tuple[str, ...] = (
    "general physician",
    "cardiologist",
    "pulmonologist",
    "gastroenterologist",
    "neurologist",
    "orthopedist",
    "dermatologist",
    "endocrinologist",
    "nephrologist",
    "urologist",
    "gynecologist",
    "ophthalmologist",
    "ent specialist",
    "psychiatrist",
    "oncologist",
    "rheumatologist",
    "hematologist",
    "dietician",
)


WEEKDAYS: tuple[str, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_HOURS = r"^([01][0-9]|2[0-3]):[0-5][0-9]-([01][0-9]|2[0-3]):[0-5][0-9]$"


class Specialist(BaseModel):
    """A bookable specialist: explicit `slots` (ISO intervals, household-local when naive) and/or
    weekly `hours` (weekday -> "HH:MM-HH:MM" ranges) cut into `slot_minutes` appointments."""

    model_config = _CFG
    id: Id
    name: str
    specialization: str
    slots: list[Slot] = Field(default_factory=list)
    hours: dict[str, list[Annotated[str, Field(pattern=_HOURS)]]] = Field(default_factory=dict)
    slot_minutes: int = Field(default=30, ge=5, le=240)

    @field_validator("hours", mode="before")
    @classmethod
    def _hours(cls, v: Any) -> Any:
        # `mon: "09:00-12:00"` is shorthand for a one-range list.
        if isinstance(v, dict):
            out = {}
            for day, ranges in v.items():
                key = str(day).strip().lower()[:3]
                if key not in WEEKDAYS:
                    raise ValueError(f"unknown weekday {day!r}; use mon..sun")
                out[key] = [ranges] if isinstance(ranges, str) else ranges
            return out
        return v

    @field_validator("hours")
    @classmethod
    def _ranges_ordered(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for day, ranges in v.items():
            for r in ranges:
                a, b = r.split("-")
                if b <= a:
                    raise ValueError(f"{day} {r}: the range ends before it starts")
        return v

    @field_validator("specialization")
    @classmethod
    def _known(cls, v: str) -> str:
        v = v.strip().lower()
        if v not in SPECIALIZATIONS:
            raise ValueError(f"unknown specialization {v!r}; known: {', '.join(SPECIALIZATIONS)}")
        return v

    @field_validator("slots", mode="before")
    @classmethod
    def _slots(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [parse_interval(s) if isinstance(s, str) else s for s in v]
        return v


class Household(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    timezone: str = "UTC"
    persons: list[Person] = Field(min_length=1)
    ambulances: list[Ambulance] = Field(default_factory=list)
    specialists: list[Specialist] = Field(default_factory=list)

    @field_validator("timezone")
    @classmethod
    def _tz(cls, v: str) -> str:
        from zoneinfo import ZoneInfo

        try:
            ZoneInfo(v)
        except Exception as exc:
            raise ValueError(f"unknown timezone {v!r}") from exc
        return v

    @model_validator(mode="after")
    def _unique(self) -> Household:
        seen: set[str] = set()
        devices: set[str] = set()
        for p in self.persons:
            if p.id in seen:
                raise ValueError(f"person id {p.id!r} is used twice")
            seen.add(p.id)
            for d in p.devices:
                if d.id in devices:
                    raise ValueError(f"device id {d.id!r} is used twice")
                devices.add(d.id)
        return self

    @cached_property
    def by_id(self) -> dict[str, Person]:
        return {p.id: p for p in self.persons}

    def person(self, person_id: str) -> Person | None:
        return self.by_id.get(person_id)

    def device(self, person_id: str, device_id: str) -> Device | None:
        p = self.by_id.get(person_id)
        if p is None:
            return None
        for d in p.devices:
            if d.id == device_id:
                return d
        return None


# --- loading with line numbers ----------------------------------------------------------------


def _line_map(text: str) -> dict[tuple[Any, ...], int]:
    """Map each YAML path (keys and list indices) to its 1-based line."""
    lines: dict[tuple[Any, ...], int] = {}

    def walk(node: yaml.Node, path: tuple[Any, ...]) -> None:
        lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = k.value
                lines[(*path, key)] = k.start_mark.line + 1
                walk(v, (*path, key))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, (*path, i))

    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if root is not None:
        walk(root, ())
    return lines


def _nearest_line(lines: dict[tuple[Any, ...], int], loc: tuple[Any, ...]) -> int | None:
    for cut in range(len(loc), -1, -1):
        if loc[:cut] in lines:
            return lines[loc[:cut]]
    return None


def load_household(path: Path | str) -> Household:
    """Load and validate; raise ConfigError listing `path:line: where: problem` for each issue."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read household file: {exc}") from exc
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: ~10x faster
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=loader)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        line = (mark.line + 1) if mark is not None else getattr(exc, "lineno", "?")
        kind = path.suffix.lstrip(".") or "YAML"
        raise ConfigError(f"{path}:{line}: not valid {kind}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: the household file must be a mapping with a `persons` list")
    try:
        return Household.model_validate(data)
    except ValidationError as exc:
        lines = _line_map(text)  # only on failure: a large household loads fast when valid
        problems = []
        for err in exc.errors(include_input=False, include_url=False):
            loc = tuple(err["loc"])
            line = _nearest_line(lines, loc)
            where = ".".join(str(p) for p in loc) or "(top level)"
            problems.append(f"{path}:{line or '?'}: {where}: {err['msg']}")
        raise ConfigError("invalid household file:\n  " + "\n  ".join(problems)) from None
