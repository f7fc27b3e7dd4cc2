"""MEOWS: the Modified Early Obstetric Warning Score, used instead of NEWS2 in pregnancy
(NEWS2 is not validated there; RCP 2017).

Each parameter is white, yellow or red against the pregnancy ranges (`populations.PREGNANCY`:
yellow = outside normal, red = outside critical). One red or two yellows trigger an urgent
obstetric review (CEMACH 2007; Singh et al., Anaesthesia 2012). Consciousness: Voice is
yellow; Pain, Unresponsive or new Confusion are red.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gateway.monitor.ranges import RangeClass, VitalRange, classify

# The parameters a complete MEOWS chart has (blood pressure counts as one row, systolic).
PARAMETERS: tuple[str, ...] = (
    "heart_rate",
    "respiratory_rate",
    "spo2",
    "temperature_c",
    "systolic_bp",
)
Colour = Literal["white", "yellow", "red"]


@dataclass(frozen=True, slots=True)
class MeowsResult:
    colours: dict[str, Colour]
    red: tuple[str, ...]
    yellow: tuple[str, ...]
    missing: tuple[str, ...]

    @property
    def triggered(self) -> bool:
        return bool(self.red) or len(self.yellow) >= 2

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def level(self) -> str:
        """`medium` when triggered (urgent review), else `low`."""
        return "medium" if self.triggered else "low"

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": "MEOWS",
            "level": self.level,
            "triggered": self.triggered,
            "red": list(self.red),
            "yellow": list(self.yellow),
            "missing": list(self.missing),
            "complete": self.complete,
            "colours": dict(self.colours),
        }


def score_meows(
    vitals: Mapping[str, float], ranges: Mapping[str, VitalRange], consciousness: str | None
) -> MeowsResult:
    colours: dict[str, Colour] = {}
    for name, value in vitals.items():
        rng = ranges.get(name)
        if rng is None:
            continue
        cls = classify(value, rng)
        if cls in (RangeClass.CRITICAL_LOW, RangeClass.CRITICAL_HIGH):
            colours[name] = "red"
        elif cls in (RangeClass.LOW, RangeClass.HIGH):
            colours[name] = "yellow"
        elif cls == RangeClass.NORMAL:
            colours[name] = "white"
    if consciousness is not None:
        colours["consciousness"] = (
            "white" if consciousness == "A" else "yellow" if consciousness == "V" else "red"
        )
    red = tuple(k for k, c in colours.items() if c == "red")
    yellow = tuple(k for k, c in colours.items() if c == "yellow")
    missing = tuple(p for p in PARAMETERS if p not in vitals)
    return MeowsResult(colours, red, yellow, missing)
