"""Per-person normal, critical and plausible ranges for each numeric vital.

Every range is a closed interval `(low, high)`: a value is inside when low <= value <= high.
Classification reads outward: outside `plausible` -> "implausible" (questioned, never alarmed
on); else outside `critical` -> "critical_low"/"critical_high" (a human now); else outside
`normal` -> "low"/"high"; else "normal". Invariant: plausible ⊇ critical ⊇ normal.

Bounds sit on the device resolution (whole numbers; 0.1 °C), so a critical bound like HR
"critical below 41" means "<= 40" for a watch, matching NEWS2's red band; a fractional value
between two steps falls on the abnormal side. docs/clinical.md holds the table and sources.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum
from functools import lru_cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from gateway.contract import NUMERIC_VITALS

if TYPE_CHECKING:
    from gateway.household import Person

Pair = tuple[float, float]
Activity = Literal["rest", "active"]
Sex = Literal["female", "male", "other"]

# Rest below this many steps per minute, averaged over the reading's interval. Tudor-Locke's
# free-living cadence bands: 1-19 incidental, 20-39 sporadic, 40-59 purposeful stepping; only
# from purposeful stepping on is a raised heart rate expected. Calling pottering about "active"
# would hide a resting tachycardia, so the error is put on the safe (rest) side.
ACTIVE_CADENCE_SPM = 40.0
# Age assumed for the 220 - age maximum heart rate when the age is unknown (0.9 x 180 = 162,
# close to the prototype's active threshold of 160).
DEFAULT_AGE_FOR_MAX_HR = 40
ADULT_AGE = 16

RATE_LIMITING_DRUGS: tuple[str, ...] = (
    "metoprolol",
    "bisoprolol",
    "atenolol",
    "propranolol",
    "carvedilol",
    "nebivolol",
    "labetalol",
    "nadolol",
    "sotalol",
    "verapamil",
    "diltiazem",
    "digoxin",
    "ivabradine",
)
KNOWN_CONDITIONS: frozenset[str] = frozenset(
    {"copd_hypercapnic", "copd", "atrial_fibrillation", "hypertension", "pregnancy", "athlete"}
)
# Spellings people write in a household file, mapped onto the names the rules use.
_CONDITION_ALIASES: dict[str, str] = {
    "afib": "atrial_fibrillation",
    "a_fib": "atrial_fibrillation",
    "pregnant": "pregnancy",
}


class RangeClass(StrEnum):
    NORMAL = "normal"
    LOW = "low"
    HIGH = "high"
    CRITICAL_LOW = "critical_low"
    CRITICAL_HIGH = "critical_high"
    IMPLAUSIBLE = "implausible"


@dataclass(frozen=True, slots=True)
class VitalRange:
    normal: Pair
    critical: Pair
    plausible: Pair


@dataclass(frozen=True, slots=True)
class Override:
    """A person's own pairs for one vital; None keeps the computed pair."""

    normal: Pair | None = None
    critical: Pair | None = None
    plausible: Pair | None = None


class _FrozenMap(Mapping[str, Override]):
    """A read-only, hashable mapping so profiles can key the ranges cache."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, Override] | None = None) -> None:
        self._items: dict[str, Override] = dict(items or {})

    def __getitem__(self, key: str) -> Override:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    def __repr__(self) -> str:
        return f"{self._items!r}"


def normalise_condition(text: str) -> str:
    key = re.sub(r"[\s\-]+", "_", text.strip().lower())
    return _CONDITION_ALIASES.get(key, key)


def _check_pair(pair: Pair, what: str) -> Pair:
    low, high = float(pair[0]), float(pair[1])
    if not low < high:
        raise ValueError(f"{what}: low must be below high")
    return (low, high)


@dataclass(frozen=True, slots=True)
class Profile:
    """What the ranges depend on. Hashable; unknown conditions are kept but change nothing."""

    age: int | None = None
    sex: Sex | None = None
    conditions: frozenset[str] = frozenset()
    medications: frozenset[str] = frozenset()
    overrides: Mapping[str, Override] = field(default_factory=_FrozenMap)

    def __post_init__(self) -> None:
        if isinstance(self.conditions, str) or isinstance(self.medications, str):
            raise ValueError("conditions and medications must be collections of names")
        if self.age is not None and not 0 <= self.age <= 150:
            raise ValueError("age must be between 0 and 150")
        if self.sex not in (None, "female", "male", "other"):
            raise ValueError("sex must be female, male or other")
        conditions = frozenset(normalise_condition(c) for c in self.conditions if c.strip())
        medications = frozenset(m.strip().lower() for m in self.medications if m.strip())
        checked: dict[str, Override] = {}
        for vital, ov in self.overrides.items():
            if vital not in NUMERIC_VITALS:
                raise ValueError(f"override for unknown vital; known: {list(NUMERIC_VITALS)}")
            checked[vital] = Override(
                *(
                    None if pair is None else _check_pair(pair, f"{vital} {name} override")
                    for name, pair in (
                        ("normal", ov.normal),
                        ("critical", ov.critical),
                        ("plausible", ov.plausible),
                    )
                )
            )
        object.__setattr__(self, "conditions", conditions)
        object.__setattr__(self, "medications", medications)
        object.__setattr__(self, "overrides", _FrozenMap(checked))

    @classmethod
    def from_person(cls, person: Person, today: date) -> Profile:
        return cls(
            age=person.age_on(today),
            sex=person.sex,
            conditions=frozenset(person.conditions),
            medications=frozenset(person.medications),
            overrides={
                vital: Override(normal=o.normal, critical=o.critical, plausible=o.plausible)
                for vital, o in person.ranges.items()
            },
        )

    @property
    def is_child(self) -> bool:
        return self.age is not None and self.age < ADULT_AGE

    @property
    def rate_limited(self) -> bool:
        """On a beta blocker or another drug that slows the heart (substring match)."""
        return any(drug in med for med in self.medications for drug in RATE_LIMITING_DRUGS)


def spo2_scale_for(profile: Profile) -> Literal[1, 2]:
    """NEWS2 SpO2 scale 2 only for confirmed hypercapnic respiratory failure."""
    return 2 if "copd_hypercapnic" in profile.conditions else 1


def news2_applicable(profile: Profile) -> bool:
    """RCP: NEWS2 is not validated under 16 years or in pregnancy. Unknown age counts as adult."""
    return not profile.is_child and "pregnancy" not in profile.conditions


def activity_from_steps(steps: int | None, interval_s: float) -> Activity:
    """'active' when the steps counted over the reading's interval reach ACTIVE_CADENCE_SPM."""
    if not interval_s > 0:
        raise ValueError("interval_s must be positive")
    if steps is None or steps <= 0:
        return "rest"  # no evidence of movement: the stricter resting limits are the safe side
    return "active" if steps * 60.0 / interval_s >= ACTIVE_CADENCE_SPM else "rest"


def classify(value: float, rng: VitalRange) -> RangeClass:
    p_low, p_high = rng.plausible
    if not p_low <= value <= p_high:  # also catches NaN
        return RangeClass.IMPLAUSIBLE
    c_low, c_high = rng.critical
    if value < c_low:
        return RangeClass.CRITICAL_LOW
    if value > c_high:
        return RangeClass.CRITICAL_HIGH
    n_low, n_high = rng.normal
    if value < n_low:
        return RangeClass.LOW
    if value > n_high:
        return RangeClass.HIGH
    return RangeClass.NORMAL


# --- defaults ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _ChildBand:
    hr_normal: Pair
    hr_critical: Pair
    rr_normal: Pair
    rr_critical: Pair
    sbp_normal: Pair | None  # None: adult systolic ranges
    hr_plausible: Pair = (25, 300)  # infant SVT can reach 300
    rr_plausible: Pair = (4, 100)  # a distressed infant can breathe faster than 60


# APLS normal ranges by age in whole years; PALS critical limits: bradycardia < 60 (consider
# CPR), heart rates above which SVT rather than sinus tachycardia is likely (infant 220,
# child 180), respiratory rate < 10 or > 60 needs immediate help. 12-15 use adult critical.
_CHILD_BANDS: tuple[tuple[int, _ChildBand], ...] = (
    (0, _ChildBand((110, 160), (60, 220), (30, 40), (10, 60), (70, 90))),
    (1, _ChildBand((100, 150), (60, 180), (25, 35), (10, 60), (80, 95))),
    (4, _ChildBand((95, 140), (60, 180), (25, 30), (10, 60), (80, 100))),
    (11, _ChildBand((80, 120), (60, 180), (20, 25), (10, 60), (90, 110))),
    (15, _ChildBand((60, 100), (41, 130), (15, 20), (9, 24), None, (25, 250), (4, 60))),
)


def _child_band(age: int) -> _ChildBand:
    for last_age, band in _CHILD_BANDS:
        if age <= last_age:
            return band
    raise ValueError("not a child age")


def _pals_hypotension(age: int) -> float:
    """Lowest non-critical systolic: PALS hypotension is < 70 + 2 x age (1-10 y), < 90 from 10 y."""
    if age < 1:
        return 70.0
    return float(min(70 + 2 * age, 90))


def _hull(inner: Pair, outer: Pair) -> Pair:
    return (min(inner[0], outer[0]), max(inner[1], outer[1]))


def _nested(normal: Pair, critical: Pair, plausible: Pair) -> VitalRange:
    # Widen outward only: a range is never narrowed below what was asked for.
    normal = (float(normal[0]), float(normal[1]))
    critical = _hull(normal, (float(critical[0]), float(critical[1])))
    return VitalRange(normal, critical, _hull(critical, (float(plausible[0]), float(plausible[1]))))


# Adult resting defaults: (normal, critical, plausible). At whole numbers (0.1 °C) a value is
# critical exactly when NEWS2 gives it 3 points, plus diastolic and temperature >= 40.0 °C.
ADULT_DEFAULTS: Mapping[str, VitalRange] = MappingProxyType(
    {
        "heart_rate": _nested((50, 100), (41, 130), (25, 250)),
        "spo2": _nested((95, 100), (92, 100), (50, 100)),
        # BP "normal" means "no soft SOS needed", not textbook normotension: a hub texting the
        # family about stage-1 hypertension (140-159) would cry wolf. 160/100 is stage 2.
        "systolic_bp": _nested((100, 160), (91, 219), (50, 260)),
        "diastolic_bp": _nested((60, 100), (40, 130), (25, 160)),
        "temperature_c": _nested((36.1, 38.0), (35.1, 39.9), (30, 43)),
        "respiratory_rate": _nested((12, 20), (9, 24), (4, 60)),
    }
)


def _heart_rate(profile: Profile, activity: Activity) -> VitalRange:
    base = ADULT_DEFAULTS["heart_rate"]
    normal, critical, plausible = base.normal, base.critical, base.plausible
    if profile.is_child and profile.age is not None:
        band = _child_band(profile.age)
        normal, critical, plausible = band.hr_normal, band.hr_critical, band.hr_plausible
    n_low, n_high = normal
    c_low, c_high = critical
    adult = not profile.is_child
    conditions = profile.conditions
    # Slowing factors lower the floor for adults only: 45 bpm is not a safe floor for an infant.
    if adult and profile.rate_limited:
        n_low, c_low = min(n_low, 45), min(c_low, 35)
    if adult and "athlete" in conditions:
        n_low, c_low = min(n_low, 40), min(c_low, 33)
    # Additive factors first, then the rate-control target as a floor (so AF stays at 110).
    if adult and profile.sex == "female":
        n_high += 5
    if "pregnancy" in conditions:
        n_high += 15
    if "atrial_fibrillation" in conditions:
        n_high = max(n_high, 110)
    if activity == "active":
        age = DEFAULT_AGE_FOR_MAX_HR if profile.age is None else profile.age
        max_hr = 220 - age
        share = 0.8 if profile.rate_limited else 0.9
        # Activity only ever widens: the active limits never undercut the resting ones.
        n_high = max(n_high, round(share * max_hr, 1))
        c_high = max(c_high, max_hr + 15)
    return _nested((n_low, n_high), (c_low, c_high), plausible)


def _spo2(profile: Profile) -> VitalRange:
    base = ADULT_DEFAULTS["spo2"]
    if "copd_hypercapnic" in profile.conditions:
        # Target 88-92 (BTS); above 92 on oxygen is NEWS2 scale 2's job, not a range alarm.
        return _nested((88, 100), (85, 100), base.plausible)
    if "copd" in profile.conditions:
        return _nested((92, 100), base.critical, base.plausible)
    return base


def _systolic(profile: Profile) -> VitalRange:
    base = ADULT_DEFAULTS["systolic_bp"]
    normal, critical = base.normal, base.critical
    if profile.is_child and profile.age is not None:
        band = _child_band(profile.age)
        if band.sbp_normal is not None:
            normal = band.sbp_normal
            critical = (_pals_hypotension(profile.age), critical[1])
    n_low, n_high = normal
    if (profile.age is not None and profile.age >= 80) or "hypertension" in profile.conditions:
        n_high = max(n_high, 170)
    return _nested((n_low, n_high), critical, base.plausible)


def _respiratory(profile: Profile) -> VitalRange:
    base = ADULT_DEFAULTS["respiratory_rate"]
    if profile.is_child and profile.age is not None:
        band = _child_band(profile.age)
        return _nested(band.rr_normal, band.rr_critical, band.rr_plausible)
    if profile.conditions & {"copd", "copd_hypercapnic"}:
        # Chronic tachypnoea of 20-24 is common at rest in COPD: alarming on it is crying
        # wolf. The critical limit (NEWS2's 3 points at 25) does not move.
        return _nested((base.normal[0], 24), base.critical, base.plausible)
    return base


def _apply_override(computed: VitalRange, ov: Override | None) -> VitalRange:
    if ov is None:
        return computed
    return _nested(
        ov.normal or computed.normal,
        ov.critical or computed.critical,
        ov.plausible or computed.plausible,
    )


@lru_cache(maxsize=4096)
def ranges_for(profile: Profile, activity: Activity = "rest") -> Mapping[str, VitalRange]:
    """The ranges for this person and activity (read-only; memoised per profile)."""
    if activity not in ("rest", "active"):
        raise ValueError("activity must be rest or active")
    computed = {
        "heart_rate": _heart_rate(profile, activity),
        "spo2": _spo2(profile),
        "systolic_bp": _systolic(profile),
        "diastolic_bp": ADULT_DEFAULTS["diastolic_bp"],
        "temperature_c": ADULT_DEFAULTS["temperature_c"],
        "respiratory_rate": _respiratory(profile),
    }
    return MappingProxyType(
        {
            vital: _apply_override(computed[vital], profile.overrides.get(vital))
            for vital in NUMERIC_VITALS
        }
    )
