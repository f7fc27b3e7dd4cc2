"""Per-person normal, critical and plausible ranges for each numeric vital.

Every range is a closed interval `(low, high)`: a value is inside when low <= value <= high.
Classification reads outward: outside `plausible` -> "implausible" (the wearer is asked);
else outside `critical` -> "critical_low"/"critical_high" (a human now); else outside
`normal` -> "low"/"high"; else "normal". Outside `intervention` (inside plausible) a critical
value is also an intervention value: a clinician is brought in. Invariant:
plausible ⊇ critical ⊇ normal; `intervention` is an independent pair of thresholds (unbounded
on a side with no limit) applied to plausible values.

Bounds sit on the device resolution (whole numbers; 0.1 °C), so a critical bound like HR
"critical below 41" means "<= 40" for a watch, matching NEWS2's red band; a fractional value
between two steps falls on the abnormal side. docs/clinical.md holds the table and sources.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from types import MappingProxyType
from typing import Literal

from gateway.contract.topics import NUMERIC_VITALS
from gateway.monitor.populations import (
    ADULT_INTERVENTION,
    INF,
    PREGNANCY,
    PREGNANCY_INTERVENTION,
    child_band,
    child_intervention,
    infant_temperature,
    pals_hypotension,
)
from gateway.monitor.profile import (
    ADULT_AGE,
    KNOWN_CONDITIONS,
    RATE_LIMITING_DRUGS,
    Override,
    Pair,
    Profile,
    Sex,
    normalise_condition,
)

__all__ = [
    "ADULT_AGE",
    "KNOWN_CONDITIONS",
    "RATE_LIMITING_DRUGS",
    "Override",
    "Pair",
    "Profile",
    "Sex",
    "normalise_condition",
]

Activity = Literal["rest", "active"]

# Age assumed for the 220 - age maximum heart rate when the age is unknown (0.9 x 180 = 162,
# close to the prototype's active threshold of 160).
DEFAULT_AGE_FOR_MAX_HR = 40
# Breathing while active (adults): 25-35 /min at moderate and 35-50 at vigorous exercise
# (Nicolo et al., Front Physiol 2017).
ACTIVE_RR_NORMAL_HIGH = 35.0
ACTIVE_RR_CRITICAL_HIGH = 50.0
# Asleep, adults (never a NEWS2 red band or a critical limit): heart rate falls 10-15 % in
# sleep, breathing runs 12-19 /min in 90 % of nights (Natarajan, npj Digit Med 2021) and a
# healthy older sleeper spends a tenth of the night at or below 93 % (Gries & Brooks 1996).
SLEEP_HR_DROP = 10.0
SLEEP_RR_NORMAL_LOW = 10.0
SLEEP_SPO2_NORMAL_LOW = 93.0
# Exertional desaturation in chronic lung disease: a fall of 4 points or more on a walk is
# common and, without symptoms, not dangerous (1,136 COPD patients: nadirs under 85 % on a
# 6-minute walk carried no more adverse events, Roberts 2015; 11 % of 549 rehabilitation
# patients fell under 80 % without any, Afzal 2018). While active and recovering the
# SpO2 floor drops by EXERTION_SPO2_DROP; under EXERTION_SPO2_FLOOR still needs help.
CHRONIC_LUNG: frozenset[str] = frozenset({"copd", "copd_hypercapnic", "home_oxygen"})
EXERTION_SPO2_DROP = 4.0
EXERTION_SPO2_FLOOR = 80.0


def max_heart_rate(profile: Profile) -> float:
    """Age-predicted maximum: 220 - age, or on a rate-limiting drug Brawner's 164 - 0.7 x age
    (Am Heart J 2004: patients on beta-blockade)."""
    age = DEFAULT_AGE_FOR_MAX_HR if profile.age is None else profile.age
    return 164.0 - 0.7 * age if profile.rate_limited and not profile.is_child else 220.0 - age


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
    intervention: Pair = (-INF, INF)


def spo2_scale_for(profile: Profile) -> Literal[1, 2]:
    """NEWS2 SpO2 scale 2 only for confirmed hypercapnic respiratory failure."""
    return 2 if "copd_hypercapnic" in profile.conditions else 1


def news2_applicable(profile: Profile) -> bool:
    """RCP: NEWS2 is not validated under 16 years or in pregnancy. Unknown age counts as adult."""
    return not profile.is_child and "pregnancy" not in profile.conditions


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


def is_intervention(value: float, rng: VitalRange) -> bool:
    """Plausible, and outside the intervention range: hand over to a clinician now."""
    i_low, i_high = rng.intervention
    p_low, p_high = rng.plausible
    return p_low <= value <= p_high and (value < i_low or value > i_high)


# --- defaults ---------------------------------------------------------------------------------


def _hull(inner: Pair, outer: Pair) -> Pair:
    return (min(inner[0], outer[0]), max(inner[1], outer[1]))


def _nested(
    normal: Pair, critical: Pair, plausible: Pair, intervention: Pair = (-INF, INF)
) -> VitalRange:
    # Widen outward only: a range is never narrowed below what was asked for.
    normal = (float(normal[0]), float(normal[1]))
    critical = _hull(normal, (float(critical[0]), float(critical[1])))
    # Intervention limits are independent thresholds (SBP >= 180 is "high", not critical, but
    # still needs a clinician), so they are not nested into the others.
    intervention = (float(intervention[0]), float(intervention[1]))
    plausible = _hull(critical, (float(plausible[0]), float(plausible[1])))
    return VitalRange(normal, critical, plausible, intervention)


# Adult resting defaults: (normal, critical, plausible). At whole numbers (0.1 °C) a value is
# critical exactly when NEWS2 gives it 3 points, plus diastolic and temperature >= 40.0 °C.
ADULT_DEFAULTS: Mapping[str, VitalRange] = MappingProxyType(
    {
        "heart_rate": _nested((50, 100), (41, 130), (25, 250)),
        "spo2": _nested((95, 100), (92, 100), (50, 100), ADULT_INTERVENTION["spo2"]),
        # BP "normal" means "no soft SOS needed", not textbook normotension: a hub texting the
        # family about stage-1 hypertension (140-159) would cry wolf. 160/100 is stage 2.
        "systolic_bp": _nested((100, 160), (91, 219), (50, 260), ADULT_INTERVENTION["systolic_bp"]),
        "diastolic_bp": _nested(
            (60, 100), (40, 130), (25, 160), ADULT_INTERVENTION["diastolic_bp"]
        ),
        "temperature_c": _nested((36.1, 38.0), (35.1, 39.9), (30, 43)),
        "respiratory_rate": _nested((12, 20), (9, 24), (4, 60)),
    }
)


def _pregnant_adult(profile: Profile) -> bool:
    return profile.pregnant and not profile.is_child


def _pregnancy_range(vital: str) -> VitalRange:
    normal, critical = PREGNANCY[vital]
    base = ADULT_DEFAULTS[vital]
    return _nested(normal, critical, base.plausible, PREGNANCY_INTERVENTION.get(vital, (-INF, INF)))


def _heart_rate(profile: Profile, activity: Activity, asleep: bool = False) -> VitalRange:
    base = ADULT_DEFAULTS["heart_rate"]
    normal, critical, plausible = base.normal, base.critical, base.plausible
    intervention: Pair = (-INF, INF)
    child = profile.is_child and profile.age is not None
    if child and profile.age is not None:
        band = child_band(profile.age)
        normal, critical, plausible = band.hr_normal, band.hr_critical, band.hr_plausible
        intervention = child_intervention(profile.age).get("heart_rate", intervention)
    elif _pregnant_adult(profile):
        normal, critical = PREGNANCY["heart_rate"]
    n_low, n_high = normal
    c_low, c_high = critical
    adult = not profile.is_child
    conditions = profile.conditions
    # Slowing factors lower the floor from 12 (adult critical limits) but never for younger
    # children (45 bpm is not a safe floor for an infant) nor in pregnancy (MEOWS has no net
    # below the floor). NEWS2 still scores HR <= 40 as red for adults whatever the floor.
    lowers = (profile.age is None or profile.age >= 12) and not profile.pregnant
    if lowers and profile.rate_limited:
        n_low, c_low = min(n_low, 45), min(c_low, 35)
    if lowers and "athlete" in conditions:
        n_low, c_low = min(n_low, 40), min(c_low, 33)
    # Additive factors first, then the rate-control target as a floor (so AF stays at 110).
    # Pregnancy has its own MEOWS band, which already allows for the higher rate.
    if adult and profile.sex == "female" and not profile.pregnant:
        n_high += 5
    if "atrial_fibrillation" in conditions:
        n_high = max(n_high, 110)
    if activity == "active":
        max_hr = max_heart_rate(profile)
        # Activity only ever widens. A child's band is its own limit: the normal upper may
        # rise to the band's critical limit, which never moves (PALS SVT rates).
        if child:
            n_high = max(n_high, min(round(0.9 * max_hr, 1), c_high))
        else:
            n_high = max(n_high, round(0.9 * max_hr, 1))
            c_high = max(c_high, max_hr + 15)
    elif asleep and adult and not profile.pregnant:
        # A lower floor asleep, never past the critical limit (NEWS2's red band stays).
        n_low = max(c_low, n_low - SLEEP_HR_DROP)
    return _nested((n_low, n_high), (c_low, c_high), plausible, intervention)


def exertional_desaturation(profile: Profile) -> bool:
    """An adult with chronic lung disease: SpO2 on exertion is judged by its own floor."""
    return not profile.is_child and not profile.pregnant and bool(profile.conditions & CHRONIC_LUNG)


def _spo2(
    profile: Profile, asleep: bool = False, wrist: bool = False, activity: Activity = "rest"
) -> VitalRange:
    if activity == "active" and exertional_desaturation(profile):
        rest = _spo2(profile, False, wrist)
        floor = min(rest.critical[0], EXERTION_SPO2_FLOOR)
        return _nested((rest.normal[0] - EXERTION_SPO2_DROP, rest.normal[1]),
                       (floor, rest.critical[1]), rest.plausible,
                       (min(rest.intervention[0], floor), rest.intervention[1]))  # fmt: skip
    base = ADULT_DEFAULTS["spo2"]
    if _pregnant_adult(profile):
        rng = _pregnancy_range("spo2")
        if asleep or wrist:
            # MEOWS's red below 95 % is a clinical oximeter's spot value taken awake. In late
            # pregnancy 93-94 % is within the healthy range (Green 2020: 3rd centile 93-94 % by
            # 34 weeks), lower still lying asleep, and a wrist oximeter errs by more than that
            # margin (±6 %, Rafl 2022). From a wrist or asleep, 92-94 % is a yellow (93-94 asleep)
            # and the adult red band (91 % or less) a red.
            low = SLEEP_SPO2_NORMAL_LOW if asleep else rng.normal[0]
            return _nested((low, 100), base.critical, rng.plausible, rng.intervention)
        return rng
    if "copd_hypercapnic" in profile.conditions:
        # Target 88-92 (BTS); above 92 on oxygen is NEWS2 scale 2's job, not a range alarm.
        return _nested((88, 100), (85, 100), base.plausible, base.intervention)
    if "copd" in profile.conditions:
        return _nested((92, 100), base.critical, base.plausible, base.intervention)
    if asleep and not profile.is_child:
        low = max(base.critical[0], SLEEP_SPO2_NORMAL_LOW)
        return _nested((low, base.normal[1]), base.critical, base.plausible, base.intervention)
    return base


def _systolic(profile: Profile) -> VitalRange:
    base = ADULT_DEFAULTS["systolic_bp"]
    if _pregnant_adult(profile):
        return _pregnancy_range("systolic_bp")
    normal, critical, intervention = base.normal, base.critical, base.intervention
    if profile.is_child and profile.age is not None:
        band = child_band(profile.age)
        if band.sbp_normal is not None:
            normal = band.sbp_normal
            critical = (pals_hypotension(profile.age), critical[1])
            intervention = (pals_hypotension(profile.age), intervention[1])
    n_low, n_high = normal
    if (profile.age is not None and profile.age >= 80) or "hypertension" in profile.conditions:
        n_high = max(n_high, 170)
    return _nested((n_low, n_high), critical, base.plausible, intervention)


def _diastolic(profile: Profile) -> VitalRange:
    if _pregnant_adult(profile):
        return _pregnancy_range("diastolic_bp")
    return ADULT_DEFAULTS["diastolic_bp"]


def _temperature(profile: Profile) -> VitalRange:
    base = ADULT_DEFAULTS["temperature_c"]
    infant = infant_temperature(profile.age_days) if profile.is_child else None
    if infant is not None:
        normal, critical, intervention = infant
        return _nested(normal, critical, base.plausible, intervention or (-INF, INF))
    if _pregnant_adult(profile):
        return _pregnancy_range("temperature_c")
    return base


def _respiratory(profile: Profile, activity: Activity = "rest", asleep: bool = False) -> VitalRange:
    base = ADULT_DEFAULTS["respiratory_rate"]
    if profile.is_child and profile.age is not None:
        band = child_band(profile.age)
        (n_low, n_high), critical = band.rr_normal, band.rr_critical
        if activity == "active":
            # A child's band is its own limit: playing, the normal upper may rise towards the
            # band's critical limit (PALS: > 60 needs help at any activity), never past it.
            n_high = max(n_high, min(1.5 * n_high, critical[1] - 5))
        return _nested(
            (n_low, n_high),
            critical,
            band.rr_plausible,
            child_intervention(profile.age).get("respiratory_rate", (-INF, INF)),
        )
    if _pregnant_adult(profile):
        rng = _pregnancy_range("respiratory_rate")
        if activity == "active":
            return _nested((rng.normal[0], 30), (rng.critical[0], 40), rng.plausible)
        return rng
    normal, critical = base.normal, base.critical
    if profile.conditions & {"copd", "copd_hypercapnic"}:
        # Chronic tachypnoea of 20-24 is common at rest in COPD: alarming on it is crying
        # wolf. The critical limit (NEWS2's 3 points at 25) does not move.
        normal = (normal[0], 24)
    if activity == "active":
        # Breathing rises with exercise (NEWS2 is a resting score and does not judge it).
        normal = (normal[0], max(normal[1], ACTIVE_RR_NORMAL_HIGH))
        critical = (critical[0], max(critical[1], ACTIVE_RR_CRITICAL_HIGH))
    elif asleep:
        normal = (min(normal[0], SLEEP_RR_NORMAL_LOW), normal[1])
    return _nested(normal, critical, base.plausible)


def computed_ranges(
    profile: Profile, activity: Activity = "rest", asleep: bool = False, wrist: bool = False
) -> dict[str, VitalRange]:
    """The ranges from age, sex, conditions, medication, activity and sleep, before
    overrides. `asleep` only lowers floors at rest (docs/clinical.md §2, "Context");
    `wrist`: the SpO2 comes from a consumer wrist sensor (only pregnancy's red band moves)."""
    asleep = asleep and activity == "rest"
    return {
        "heart_rate": _heart_rate(profile, activity, asleep),
        "spo2": _spo2(profile, asleep, wrist, activity),
        "systolic_bp": _systolic(profile),
        "diastolic_bp": _diastolic(profile),
        "temperature_c": _temperature(profile),
        "respiratory_rate": _respiratory(profile, activity, asleep),
    }


# One object per distinct range, not per person and context: ~10 for 1,000 persons, 2.5 MB less.
_SHARED: dict[VitalRange, VitalRange] = {}


@lru_cache(maxsize=4096)
def ranges_for(
    profile: Profile, activity: Activity = "rest", asleep: bool = False, wrist: bool = False
) -> Mapping[str, VitalRange]:
    """The ranges for this person, activity, sleep and SpO2 source (read-only; memoised)."""
    if activity not in ("rest", "active"):
        raise ValueError("activity must be rest or active")
    computed = computed_ranges(profile, activity, asleep, wrist)
    out = {v: apply_override(computed[v], profile.overrides.get(v)) for v in NUMERIC_VITALS}
    return MappingProxyType({v: _SHARED.setdefault(r, r) for v, r in out.items()})


def apply_override(computed: VitalRange, ov: Override | None) -> VitalRange:
    """A household override on top of the computed range.

    Without a clinician's note an override may make alarms more sensitive, never less: the
    normal and critical ranges may only narrow (clamped to the computed ones) and the
    plausible range only widen. With `clinician_override` it is applied as written, widening
    outward to keep the ranges nested."""
    if ov is None:
        return computed
    normal = ov.normal or computed.normal
    critical = ov.critical or computed.critical
    plausible = ov.plausible or computed.plausible
    if ov.clinician:
        return _nested(normal, critical, plausible, computed.intervention)
    c_low = max(critical[0], computed.critical[0])
    c_high = min(critical[1], computed.critical[1])
    if not c_low < c_high:  # an override narrower than nothing: keep the computed limits
        c_low, c_high = computed.critical
    # Normal may only narrow too: widening it would silence the "high"/"low" alerts between
    # the computed normal and critical limits (a systolic of 200 scores 0 in NEWS2).
    n_low = max(normal[0], computed.normal[0], c_low)
    n_high = min(normal[1], computed.normal[1], c_high)
    if not n_low < n_high:
        n_low, n_high = max(computed.normal[0], c_low), min(computed.normal[1], c_high)
    if not n_low < n_high:  # a critical range narrower than normal: it is the normal range
        n_low, n_high = c_low, c_high
    # Plausible only widens: narrowing it would turn critical values into mere questions.
    plausible = _hull(plausible, computed.plausible)
    return _nested((n_low, n_high), (c_low, c_high), plausible, computed.intervention)
