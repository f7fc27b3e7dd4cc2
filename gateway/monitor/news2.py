"""NEWS2: the Royal College of Physicians' National Early Warning Score 2 (2017), exactly.

Pure functions over one set of observations. Each parameter's chart row is a list of
`(upper_bound, points)` bands read top to bottom: a value scores the points of the first
band whose upper bound it does not exceed (x <= bound), and the row's last points when it
exceeds every bound. Values are first rounded to the chart's precision (whole numbers; 0.1 °C
for temperature), half away from zero, as an observer would write them down: respiration 8.4
is 8 (3 points), pulse 40.5 is 41 (1 point). docs/clinical.md reproduces the chart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Literal

Level = Literal["low", "low-medium", "medium", "high"]
SpO2Scale = Literal[1, 2]

# Parameter names, in chart order; the keys of News2Result.parameters.
PARAMETERS: tuple[str, ...] = (
    "respiratory_rate",
    "spo2",
    "supplemental_o2",
    "systolic_bp",
    "heart_rate",
    "consciousness",
    "temperature_c",
)
# Parameters that need a measurement; the other two fall back to a documented assumption.
MEASURED: tuple[str, ...] = (
    "respiratory_rate",
    "spo2",
    "systolic_bp",
    "heart_rate",
    "temperature_c",
)
CONSCIOUSNESS_LEVELS: frozenset[str] = frozenset({"A", "C", "V", "P", "U"})

_Bands = tuple[tuple[float, int], ...]

# (upper bound inclusive, points); the value after the table is the points above the last bound.
_RESPIRATORY_RATE: tuple[_Bands, int] = (((8, 3), (11, 1), (20, 0), (24, 2)), 3)
_SPO2_SCALE_1: tuple[_Bands, int] = (((91, 3), (93, 2), (95, 1)), 0)
# Scale 2 up to 92 is the same on air or oxygen; above 92 only oxygen scores (over-oxygenation
# in hypercapnic respiratory failure). On air everything >= 93 scores 0.
_SPO2_SCALE_2_LOW: tuple[_Bands, int] = (((83, 3), (85, 2), (87, 1), (92, 0)), -1)
_SPO2_SCALE_2_HIGH_ON_O2: tuple[_Bands, int] = (((94, 1), (96, 2)), 3)
_SYSTOLIC_BP: tuple[_Bands, int] = (((90, 3), (100, 2), (110, 1), (219, 0)), 3)
_HEART_RATE: tuple[_Bands, int] = (((40, 3), (50, 1), (90, 0), (110, 1), (130, 2)), 3)
_TEMPERATURE_C: tuple[_Bands, int] = (((35.0, 3), (36.0, 1), (38.0, 0), (39.0, 1)), 2)
_OXYGEN_POINTS = 2
_NOT_ALERT_POINTS = 3


def _band(value: float, row: tuple[_Bands, int]) -> int:
    bands, above = row
    for upper, points in bands:
        if value <= upper:
            return points
    return above


def _finite(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    # bool is an int subclass; True as a pulse is a caller bug, not 1 bpm.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite")
    return number


def chart_precision(value: float, places: int = 0) -> float:
    """Round to the chart's precision, half away from zero (8.5 -> 9, 35.05 -> 35.1).

    The RCP chart is written in whole numbers (0.1 °C for temperature); an observer writes
    8.4 breaths/min down as 8, which scores 3. Comparing the raw 8.4 with "<= 8" would move it
    into a milder band. Decimal of the shortest repr, so 35.05 is not 35.0499999.
    """
    scaled = value * 10**places
    if scaled == int(scaled):
        return value  # already at chart precision (the usual case: a watch reports integers)
    q = Decimal(1).scaleb(-places)
    return float(Decimal(repr(value)).quantize(q, rounding=ROUND_HALF_UP))


def _rounded(value: float | None, places: int) -> float | None:
    if value is None or (places == 0 and value.is_integer()):
        return value  # the usual case: watches report whole numbers
    return chart_precision(value, places)


def score_spo2(spo2: float, *, on_supplemental_o2: bool, spo2_scale: SpO2Scale = 1) -> int:
    """Points for one SpO2 value (%). Scale 2 is only for confirmed hypercapnic failure."""
    if spo2_scale == 1:
        return _band(spo2, _SPO2_SCALE_1)
    if spo2_scale == 2:
        low = _band(spo2, _SPO2_SCALE_2_LOW)
        if low >= 0:
            return low
        return _band(spo2, _SPO2_SCALE_2_HIGH_ON_O2) if on_supplemental_o2 else 0
    raise ValueError("spo2_scale must be 1 or 2")


@dataclass(frozen=True, slots=True)
class News2Result:
    """One NEWS2 assessment. `parameters` holds points per chart row (None = not measured)."""

    total: int
    level: Level
    parameters: dict[str, int | None]
    missing: tuple[str, ...]
    assumed: tuple[str, ...]
    complete: bool
    spo2_scale: SpO2Scale
    red: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "level": self.level,
            "parameters": dict(self.parameters),
            "missing": list(self.missing),
            "assumed": list(self.assumed),
            "complete": self.complete,
            "spo2_scale": self.spo2_scale,
            "red": list(self.red),
        }


def news2_level(total: int, red: bool) -> Level:
    """RCP clinical risk: >=7 high, 5-6 medium, a single red 3 low-medium, else low."""
    if total >= 7:
        return "high"
    if total >= 5:
        return "medium"
    if red:
        return "low-medium"
    return "low"


def score_news2(
    *,
    respiratory_rate: float | None = None,
    spo2: float | None = None,
    on_supplemental_o2: bool | None = None,
    systolic_bp: float | None = None,
    heart_rate: float | None = None,
    consciousness: str | None = None,
    temperature_c: float | None = None,
    spo2_scale: int = 1,
) -> News2Result:
    """Score one set of observations on the RCP 2017 chart.

    Missing measurements score nothing and are listed in `missing` (the total is then a lower
    bound). Unknown oxygen is scored as air and unknown consciousness as Alert, both 0 points,
    and listed in `assumed` so nobody mistakes an assumption for an observation.
    """
    if spo2_scale not in (1, 2):
        raise ValueError("spo2_scale must be 1 or 2")
    scale: SpO2Scale = 1 if spo2_scale == 1 else 2
    if on_supplemental_o2 is not None and not isinstance(on_supplemental_o2, bool):
        raise ValueError("on_supplemental_o2 must be true, false or missing")
    if consciousness is not None and consciousness not in CONSCIOUSNESS_LEVELS:
        raise ValueError("consciousness must be one of A, C, V, P, U")

    rr = _rounded(_finite("respiratory_rate", respiratory_rate), 0)
    sat = _rounded(_finite("spo2", spo2), 0)
    sbp = _rounded(_finite("systolic_bp", systolic_bp), 0)
    hr = _rounded(_finite("heart_rate", heart_rate), 0)
    temp = _rounded(_finite("temperature_c", temperature_c), 1)

    assumed: list[str] = []
    if on_supplemental_o2 is None:
        assumed.append("supplemental_o2")
    if consciousness is None:
        assumed.append("consciousness")
    on_o2 = bool(on_supplemental_o2)

    parameters: dict[str, int | None] = {
        "respiratory_rate": None if rr is None else _band(rr, _RESPIRATORY_RATE),
        "spo2": None
        if sat is None
        else score_spo2(sat, on_supplemental_o2=on_o2, spo2_scale=scale),
        "supplemental_o2": _OXYGEN_POINTS if on_o2 else 0,
        "systolic_bp": None if sbp is None else _band(sbp, _SYSTOLIC_BP),
        "heart_rate": None if hr is None else _band(hr, _HEART_RATE),
        "consciousness": 0 if consciousness in (None, "A") else _NOT_ALERT_POINTS,
        "temperature_c": None if temp is None else _band(temp, _TEMPERATURE_C),
    }
    missing = tuple(name for name in MEASURED if parameters[name] is None)
    red = tuple(name for name in PARAMETERS if parameters[name] == 3)
    total = sum(points for points in parameters.values() if points is not None)
    return News2Result(
        total=total,
        level=news2_level(total, bool(red)),
        parameters=parameters,
        missing=missing,
        assumed=tuple(assumed),
        complete=not missing,
        spo2_scale=scale,
        red=red,
    )
