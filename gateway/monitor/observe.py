"""Scores -> alert observations: for each condition, is this reading abnormal, in the
hysteresis band, recovering on partial evidence, or clear? Pure functions; the monitor feeds
the results to the alert tracker."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.monitor.alerts import Status
from gateway.monitor.meows import MeowsResult
from gateway.monitor.news2 import News2Result
from gateway.monitor.ranges import RangeClass, VitalRange, classify, is_intervention
from gateway.monitor.wording import UNITS

# How far back inside the normal range a value must come before an alert may clear.
HYSTERESIS = {
    "heart_rate": 5.0,
    "spo2": 1.0,
    "systolic_bp": 5.0,
    "diastolic_bp": 5.0,
    "temperature_c": 0.2,
    "respiratory_rate": 2.0,
}
NEWS2_ALERT_LEVELS = frozenset({"low-medium", "medium", "high"})
_CRITICAL = (RangeClass.CRITICAL_LOW, RangeClass.CRITICAL_HIGH)


@dataclass(frozen=True, slots=True)
class Observation:
    condition: str
    status: Status
    severity: str
    rule: str
    vitals: Mapping[str, float]  # the values this observation is about (for the evidence)


def vital_info(value: float, rng: VitalRange, *, unconfirmed: bool = False) -> dict[str, Any]:
    return {
        "value": value,
        "class": str(classify(value, rng)),
        "normal": list(rng.normal),
        "critical": list(rng.critical),
        "intervention": is_intervention(value, rng),
        **({"unconfirmed": True} if unconfirmed else {}),
    }


def evidence(
    vitals: Mapping[str, float],
    ranges: Mapping[str, VitalRange],
    *,
    news2: News2Result | None,
    meows: MeowsResult | None,
    score: float | None,
    unconfirmed: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    abnormal = {}
    for v, value in vitals.items():
        rng = ranges.get(v)
        if rng is not None:
            abnormal[v] = {
                **vital_info(value, rng, unconfirmed=v in unconfirmed),
                "unit": UNITS[v],
            }
    return {
        "abnormal": abnormal,
        "news2": news2.to_dict() if news2 else None,
        "meows": meows.to_dict() if meows else None,
        "anomaly_score": None if score is None else round(score, 3),
    }


def vital(v: str, value: float, rng: VitalRange) -> list[Observation]:
    """One observation per side (low, high) of one vital."""
    cls = classify(value, rng)
    lo, hi = rng.normal
    margin = HYSTERESIS[v]
    if is_intervention(value, rng):
        severity = "intervention"
    elif cls in _CRITICAL:
        severity = "critical"
    else:
        severity = "abnormal"
    out = []
    for side, abnormal, cleared in (
        ("low", cls in (RangeClass.LOW, RangeClass.CRITICAL_LOW), value >= lo + margin),
        ("high", cls in (RangeClass.HIGH, RangeClass.CRITICAL_HIGH), value <= hi - margin),
    ):
        status: Status = "abnormal" if abnormal else "cleared" if cleared else "band"
        where = "below" if side == "low" else "above"
        out.append(
            Observation(f"{v}_{side}", status, severity, f"{v} {where} normal range", {v: value})
        )
    return out


def news2(n: News2Result, vitals: Mapping[str, float], *, clearable: bool) -> Observation:
    """NEWS2 alerts at a single red parameter (low-medium) and above. It may raise on partial
    data (a lower bound is still a fact) but clears only on complete evidence."""
    status: Status
    if n.level in NEWS2_ALERT_LEVELS:
        status = "abnormal"
    elif n.total <= 3:
        status = "cleared" if clearable else "recovering"
    else:
        status = "band"  # 4: low, but not clearly back
    scored = {v: x for v, x in vitals.items() if n.parameters.get(v)}
    return Observation("news2", status, n.level, f"NEWS2 aggregate {n.total} ({n.level})", scored)


def meows(m: MeowsResult, vitals: Mapping[str, float]) -> Observation:
    """MEOWS triggers at one red or two yellows; clears on a complete chart without yellows."""
    status: Status
    if m.triggered:
        status = "abnormal"
    elif not m.yellow:
        status = "cleared" if m.complete else "recovering"
    else:
        status = "band"
    scored = {v: x for v, x in vitals.items() if m.colours.get(v) in ("red", "yellow")}
    what = "trigger" if m.triggered else "no trigger"
    return Observation("meows", status, m.level, f"MEOWS {what}", scored)


def consciousness(level: str) -> Observation:
    """Outside NEWS2 (children, pregnancy) anything but Alert is critical on its own."""
    status: Status = "cleared" if level == "A" else "abnormal"
    return Observation("consciousness", status, "critical", f"consciousness {level} (ACVPU)", {})
