"""Scores -> alert observations: for each condition, is this reading abnormal, in the
hysteresis band, recovering on partial evidence, or clear? Pure functions; the monitor feeds
the results to the alert tracker."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.contract.vital_words import label
from gateway.monitor.alerts import Status
from gateway.monitor.meows import MeowsResult
from gateway.monitor.news2 import News2Result
from gateway.monitor.plausibility import Flag
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
_LOW = {v: f"{v}_low" for v in HYSTERESIS}
_HIGH = {v: f"{v}_high" for v in HYSTERESIS}
_CRITICAL = (RangeClass.CRITICAL_LOW, RangeClass.CRITICAL_HIGH)


@dataclass(frozen=True, slots=True)
class Observation:
    condition: str
    status: Status
    severity: str
    rule: str
    vitals: Mapping[str, float]  # the values this observation is about (for the evidence)
    per_device: bool = False  # one device's normal must not cancel another's abnormal


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
    usual: Mapping[str, tuple[float, float]] | None = None,
) -> dict[str, Any]:
    """`usual`: the person's own usual resting range per vital (baseline.py), quoted beside
    the value; the response decides what it means (response.usual_for_them)."""
    abnormal = {}
    for v, value in vitals.items():
        rng = ranges.get(v)
        if rng is not None:
            abnormal[v] = {
                **vital_info(value, rng, unconfirmed=v in unconfirmed),
                "unit": UNITS[v],
            }
            if usual and v in usual:
                abnormal[v]["usual"] = list(usual[v])
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
    intervention = is_intervention(value, rng)
    if intervention:
        severity = "intervention"
    elif cls in _CRITICAL:
        severity = "critical"
    else:
        severity = "abnormal"
    i_low, i_high = rng.intervention
    out = []
    # An intervention value is abnormal whatever its class (a clinician's override may have
    # widened normal past it).
    for side, abnormal, cleared in (
        ("low", cls in (RangeClass.LOW, RangeClass.CRITICAL_LOW)
         or (intervention and value < i_low), value >= lo + margin),
        ("high", cls in (RangeClass.HIGH, RangeClass.CRITICAL_HIGH)
         or (intervention and value > i_high), value <= hi - margin),
    ):  # fmt: skip
        status: Status = "abnormal" if abnormal else "cleared" if cleared else "band"
        where = "below" if side == "low" else "above"
        out.append(
            Observation(
                f"{v}_{side}",
                status,
                severity,
                f"{label(v)} {where} normal range",
                {v: value},
                True,
            )
        )
    return out


def news2_observation(
    n: News2Result, vitals: Mapping[str, float], *, clearable: bool
) -> Observation:
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


def meows_observation(m: MeowsResult, vitals: Mapping[str, float]) -> Observation:
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


def fever_amber_observation(
    temperature: float | None, rr: float | None, hr: float | None, limits: tuple[float, float]
) -> Observation | None:
    """A child under 5 with a fever (a thermometer's 38.0 °C or more within the last hours) and
    fast breathing or a fast pulse: a NICE NG143 amber feature, the carers should have them
    seen (critical: the family is told at once). Cleared by a temperature under 38 or
    breathing and pulse back under the limits."""
    rr_max, hr_max = limits
    fast = {v: x for v, x in (("respiratory_rate", rr), ("heart_rate", hr))
            if x is not None and x > (rr_max if v == "respiratory_rate" else hr_max)}  # fmt: skip
    if temperature is None:
        return None
    vitals = {"temperature_c": temperature, **fast}
    febrile = temperature >= 38.0
    if febrile and fast:
        status: Status = "abnormal"
    elif not febrile or (rr is not None and rr <= rr_max and (hr is None or hr <= hr_max)):
        status = "cleared"
    else:
        status = "band"
    what = " and ".join(label(v) for v in fast) or "breathing and pulse"
    rule = f"fever with a fast {what} under 5 (NICE NG143 amber)"
    return Observation("fever_amber", status, "critical", rule, vitals)


def consciousness_observation(level: str) -> Observation:
    """Outside NEWS2 (children, pregnancy) anything but Alert is critical on its own."""
    status: Status = "cleared" if level == "A" else "abnormal"
    return Observation("consciousness", status, "critical", f"consciousness {level} (ACVPU)", {})


def collect(
    accepted: Mapping[str, float],
    ranges: Mapping[str, VitalRange],
    flags: Sequence[Flag],
    *,
    news2: News2Result | None,
    clearable: bool,
    meows: MeowsResult | None,
    consciousness: str | None,
    tracked: Collection[str] | None = None,
    extra: Sequence[Observation] = (),
) -> tuple[list[Observation], dict[str, float]]:
    """Every observation one reading makes, and the jump-flagged critical values among them.
    `tracked`: the conditions the alert tracker holds state for (None: all); a normal value of
    an untracked condition makes no observation (the hot path: most readings are normal)."""
    obs: list[Observation] = []
    for v, x in accepted.items():
        rng = ranges.get(v)
        if rng is None:
            continue
        lo, hi = rng.normal
        i_low, i_high = rng.intervention
        if (
            tracked is not None
            and lo <= x <= hi
            and i_low <= x <= i_high
            and _LOW[v] not in tracked
            and _HIGH[v] not in tracked
        ):
            continue
        obs += vital(v, x, rng)
    # A sudden jump into the critical band is not yet believed, but it counts towards the
    # alert (and its time rule): an arrest looks exactly like a jump.
    jumped = {
        f.vital: f.value
        for f in flags
        if f.kind == "jump"
        and f.vital in ranges
        and classify(f.value, ranges[f.vital]) in _CRITICAL
    }
    obs += [o for v, x in jumped.items() for o in vital(v, x, ranges[v]) if o.status == "abnormal"]
    if news2 is not None and (
        tracked is None or news2.level in NEWS2_ALERT_LEVELS or "news2" in tracked
    ):
        obs.append(news2_observation(news2, accepted, clearable=clearable))
    if meows is not None and (tracked is None or meows.triggered or "meows" in tracked):
        obs.append(meows_observation(meows, accepted))
    if consciousness is not None:
        obs.append(consciousness_observation(consciousness))
    obs += [o for o in extra if o.status == "abnormal" or tracked is None or o.condition in tracked]
    return obs, jumped


# Measured on watch-like data: training maxima sit near 0.64, so 0.6 plus "a vital out of
# range" marks readings unusual for this person without firing on the forest alone.
ANOMALY_OPEN = 0.60
ANOMALY_CLEAR = 0.52


def anomaly(
    score: float, vitals: Mapping[str, float], classes: Mapping[str, str], *, about: set[str]
) -> Observation:
    """The forest alone never raises an alert: it needs a vital outside its normal range too.
    It clears only when the vitals it was about (`about`) are measured and back in range."""
    off = {v: vitals[v] for v, c in classes.items() if c != "normal"}
    abnormal = score >= ANOMALY_OPEN and bool(off)
    cleared = (score < ANOMALY_CLEAR or not off) and about <= set(vitals)
    status: Status = "abnormal" if abnormal else "cleared" if cleared else "band"
    rule = f"isolation-forest score {score:.2f} ≥ {ANOMALY_OPEN} with vitals out of range"
    return Observation("anomaly", status, "abnormal", rule, off)
