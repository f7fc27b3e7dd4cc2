"""Who a person is, as far as their vital-sign ranges are concerned: age, sex, conditions,
medications and the household's per-vital overrides. Hashable, so ranges can be memoised."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Literal

from gateway.contract.topics import NUMERIC_VITALS

if TYPE_CHECKING:
    from gateway.household.model import Person

Pair = tuple[float, float]
Sex = Literal["female", "male", "other"]
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
    {
        "copd_hypercapnic",
        "copd",
        "atrial_fibrillation",
        "hypertension",
        "pregnancy",
        "athlete",
        "pacemaker",
        "home_oxygen",
    }
)
# Spellings people write in a household file, mapped onto the names the rules use.
_CONDITION_ALIASES: dict[str, str] = {
    "afib": "atrial_fibrillation",
    "a_fib": "atrial_fibrillation",
    "pregnant": "pregnancy",
    "paced": "pacemaker",
    "pacemaker_fitted": "pacemaker",
    "permanent_pacemaker": "pacemaker",
    "home_o2": "home_oxygen",
    "ltot": "home_oxygen",
}


@dataclass(frozen=True, slots=True)
class Override:
    """A person's own pairs for one vital; None keeps the computed pair."""

    normal: Pair | None = None
    critical: Pair | None = None
    plausible: Pair | None = None
    clinician: str | None = None  # the clinician's note that allows widening a critical limit


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
    # Age in days, for the rules that change within the first year (infant fever < 3 months).
    age_days: int | None = None
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
            pairs = [
                None if pair is None else _check_pair(pair, f"{vital} {name} override")
                for name, pair in (
                    ("normal", ov.normal),
                    ("critical", ov.critical),
                    ("plausible", ov.plausible),
                )
            ]
            checked[vital] = Override(pairs[0], pairs[1], pairs[2], ov.clinician)
        object.__setattr__(self, "conditions", conditions)
        object.__setattr__(self, "medications", medications)
        object.__setattr__(self, "overrides", _FrozenMap(checked))

    @classmethod
    def from_person(cls, person: Person, today: date) -> Profile:
        return cls(
            age=person.age_on(today),
            age_days=(today - person.birth_date).days,
            sex=person.sex,
            conditions=frozenset(person.conditions),
            medications=frozenset(person.medications),
            overrides={
                vital: Override(
                    normal=o.normal,
                    critical=o.critical,
                    plausible=o.plausible,
                    clinician=o.clinician_override,
                )
                for vital, o in person.ranges.items()
            },
        )

    @property
    def is_child(self) -> bool:
        return self.age is not None and self.age < ADULT_AGE

    @property
    def pregnant(self) -> bool:
        return "pregnancy" in self.conditions

    @property
    def paced(self) -> bool:
        """A pacemaker holds the rate steady: a constant heart rate is not a stuck sensor."""
        return "pacemaker" in self.conditions

    @property
    def rate_limited(self) -> bool:
        """On a beta blocker or another drug that slows the heart (substring match)."""
        return any(drug in med for med in self.medications for drug in RATE_LIMITING_DRUGS)
