"""The household file (HEALTHGW_HOUSEHOLD): who lives here, their devices, contacts and
directories. Validated once at start; every problem is reported with its path and line."""

from __future__ import annotations

from datetime import date, datetime
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from gateway.base.errors import ConfigError
from gateway.contract.device_kinds import DEFAULT_KIND, KIND_NAMES, DeviceKindName
from gateway.contract.topics import ID_PATTERN, NUMERIC_VITALS, Location
from gateway.household.load import (
    MAX_REPORTED,
    Problem,
    line_map,
    nearest_line,
    parse,
    read_text,
    where_of,
)

Id = Annotated[str, Field(pattern=ID_PATTERN)]
Phone = Annotated[
    str, Field(pattern=r"^\+[1-9][0-9]{6,14}$", description="E.164, e.g. +447700900123")
]
# `.inf` or `.nan` is never a real interval, weight or range limit (nan compares false, so it
# would slip past every bound).
_CFG = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


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
    """One device. `kind` is one of gateway/contract/device_kinds.py's list (watch, ring, oximeter,
    bp_cuff, thermometer, manual): it says how far one reading can be trusted. A wrist device
    that measures core temperature (not skin) says so with `core_temperature: true`."""

    model_config = _CFG
    id: Id
    kind: DeviceKindName = DEFAULT_KIND
    interval_s: float = Field(default=60, gt=0, description="expected seconds between readings")
    core_temperature: bool = False

    @field_validator("kind", mode="before")
    @classmethod
    def _known_kind(cls, v: Any) -> Any:
        if isinstance(v, str):
            name = v.strip().lower().replace("-", "_").replace(" ", "_")
            if name not in KIND_NAMES:
                raise ValueError(f"unknown device kind; known: {', '.join(KIND_NAMES)}")
            return name
        return v


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
        today = date.today()
        if v > today:
            raise ValueError("birth_date is in the future")
        if today.year - v.year > 130:
            raise ValueError("birth_date is more than 130 years ago")
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

    def watch_wearers(self) -> frozenset[str]:
        """Persons with a watch: the ones an SOS button can be offered to."""
        return frozenset(p.id for p in self.persons if any(d.kind == "watch" for d in p.devices))

    def device(self, person_id: str, device_id: str) -> Device | None:
        p = self.by_id.get(person_id)
        if p is None:
            return None
        for d in p.devices:
            if d.id == device_id:
                return d
        return None


# --- loading with line numbers ----------------------------------------------------------------

# Kept for gateway/monitor/overrides.py, which maps its findings to lines the same way.
_line_map = line_map
_nearest_line = nearest_line


def load_household(path: Path | str) -> Household:
    """Load and validate; raise ConfigError listing `path:line: where: what` for each problem
    (docs/configuration.md). Only a file that cannot be opened at all has no line."""
    path = Path(path)
    try:
        text = read_text(path)
        data = parse(path, text)
        if not isinstance(data, dict):
            raise Problem(1, "(top level)", "the household file must be a mapping with `persons`")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read household file: {exc.strerror or exc}") from None
    except Problem as p:
        raise ConfigError("invalid household file:\n  " + p.render(path)) from None
    try:
        return Household.model_validate(data)
    except ValidationError as exc:
        lines = line_map(text)  # only on failure: a large household loads fast when valid
        errors = exc.errors(include_input=False, include_url=False)
        problems = []
        for err in errors[:MAX_REPORTED]:
            loc = tuple(err["loc"])
            problems.append(Problem(nearest_line(lines, loc) or 1, where_of(loc), err["msg"]))
        if len(errors) > MAX_REPORTED:
            problems.append(Problem(1, "(file)", f"{len(errors) - MAX_REPORTED} more not shown"))
        out = [p.render(path) for p in problems]
        raise ConfigError("invalid household file:\n  " + "\n  ".join(out)) from None
