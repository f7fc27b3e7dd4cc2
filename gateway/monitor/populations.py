"""Range tables for the people NEWS2 was not validated on: children (APLS/PALS bands, NICE
fever red flags) and pregnancy (MEOWS, NICE NG133 blood pressure). docs/clinical.md gives each
row with its source; `ranges.py` applies them.

Pairs are closed intervals (low, high) on the device's resolution: a value is inside when
low <= value <= high. `math.inf` marks a side with no limit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

Pair = tuple[float, float]
INF = math.inf

# Infants younger than this many days with a temperature >= 38 °C are a NICE NG143 red flag
# (high risk of serious illness at any value of the other signs).
YOUNG_INFANT_DAYS = 91


@dataclass(frozen=True, slots=True)
class ChildBand:
    hr_normal: Pair
    hr_critical: Pair
    rr_normal: Pair
    rr_critical: Pair
    sbp_normal: Pair | None  # None: adult systolic ranges
    hr_plausible: Pair = (25, 300)  # infant SVT can reach 300
    rr_plausible: Pair = (4, 100)  # a distressed infant can breathe faster than 60


# Upper normal limits are APLS's (awake). The lower normal limits are lowered to about the 1st
# centile of Fleming et al. (Lancet 2011), because a watch is worn asleep and APLS's awake
# ranges would call every sleeping school child "low" each night. Critical limits are
# PALS's: bradycardia < 60 under 5 (consider CPR); school-age children sleep in the 50s, so
# < 50 from 5 to 11; heart rates above which SVT rather than sinus tachycardia is likely
# (infant 220, child 180); respiratory rate < 10 or > 60 needs immediate help. 12-15 use the
# adult critical limits.
CHILD_BANDS: tuple[tuple[int, ChildBand], ...] = (
    (0, ChildBand((90, 160), (60, 220), (25, 40), (10, 60), (70, 90))),
    (1, ChildBand((80, 150), (60, 180), (20, 35), (10, 60), (80, 95))),
    (4, ChildBand((70, 140), (60, 180), (18, 30), (10, 60), (80, 100))),
    (11, ChildBand((55, 120), (50, 180), (14, 25), (10, 60), (90, 110))),
    (15, ChildBand((50, 100), (41, 130), (12, 20), (9, 24), None, (25, 250), (4, 60))),
)
# Under 5 a pulse below 60 is a resuscitation threshold even asleep (an intervention value);
# from 5 a slow pulse is a critical value for the carers, not an automatic ambulance.
BRADYCARDIA_INTERVENTION_MAX_AGE = 4


# NICE NG143 (fever in under 5s), amber features with a fever: breathing faster than 50 /min
# at 6-12 months or 40 /min over 12 months; a pulse above 160 under 12 months, 150 at 12-24
# months, 140 at 2-5 years. Amber: "a healthcare professional should assess the child".
FEVER_C = 38.0
FEVER_AMBER_MAX_AGE = 4  # whole years: under 5


def fever_amber_limits(age_days: int | None, age: int) -> tuple[float, float]:
    """(breathing, pulse) above which a febrile child under 5 has an NG143 amber feature."""
    months = (age_days or age * 365) / 30.4
    rr = 50.0 if months < 12 else 40.0
    hr = 160.0 if months < 12 else 150.0 if months < 24 else 140.0
    return rr, hr


def child_band(age: int) -> ChildBand:
    for last_age, band in CHILD_BANDS:
        if age <= last_age:
            return band
    raise ValueError("not a child age")


def pals_hypotension(age: int) -> float:
    """Lowest non-critical systolic: PALS hypotension is < 70 + 2 x age (1-10 y), < 90 from 10 y."""
    if age < 1:
        return 70.0
    return float(min(70 + 2 * age, 90))


# --- pregnancy: MEOWS triggers, NICE NG133 blood pressure -------------------------------------
# MEOWS (CEMACH 2007; Singh et al., Anaesthesia 2012): a red trigger is critical, a yellow one
# abnormal; one red or two yellows call for urgent obstetric review. Blood pressure follows
# NICE NG133: >= 140/90 is hypertension in pregnancy (raises an alert), >= 160/110 is severe
# (urgent: treat within hours), which is also the intervention limit here.
PREGNANCY: Mapping[str, tuple[Pair, Pair]] = MappingProxyType(
    {
        # vital: (normal, critical)
        "heart_rate": ((50, 100), (40, 120)),  # yellow 40-50 and 100-120; red < 40, > 120
        "respiratory_rate": ((10, 20), (10, 30)),  # yellow 21-30; red < 10, > 30
        "spo2": ((95, 100), (95, 100)),  # red < 95; no yellow band
        "temperature_c": ((36.0, 37.9), (35.0, 38.0)),  # yellow 35-36; red < 35, > 38
        "systolic_bp": ((100, 139), (90, 159)),  # NG133 >= 140 raises, >= 160 severe
        "diastolic_bp": ((50, 89), (40, 109)),  # NG133 >= 90 raises, >= 110 severe
    }
)
PREGNANCY_INTERVENTION: Mapping[str, Pair] = MappingProxyType(
    {"systolic_bp": (-INF, 159), "diastolic_bp": (-INF, 109), "spo2": (85, INF)}
)

# --- intervention ranges: hand over to a human clinician now ------------------------------
# Outside these the care line / GP is texted as well as the family, and an unanswered
# "are you OK?" becomes a hard SOS. Adults: SpO2 < 85 % (BTS 2017 emergency oxygen guideline:
# severe hypoxaemia), BP >= 180/120 (NICE NG136: same-day specialist review); NEWS2 >= 7 is
# applied by the monitor. Children: the PALS limits that call for resuscitation (bradycardia
# < 60 under 5, hypotension for age, respiratory rate < 10) and SpO2 < 85.
ADULT_INTERVENTION: Mapping[str, Pair] = MappingProxyType(
    {"spo2": (85, INF), "systolic_bp": (-INF, 179), "diastolic_bp": (-INF, 119)}
)


def child_intervention(age: int) -> Mapping[str, Pair]:
    band = child_band(age)
    out: dict[str, Pair] = {
        "spo2": (85, INF),
        "respiratory_rate": (band.rr_critical[0], INF),
    }
    if age <= BRADYCARDIA_INTERVENTION_MAX_AGE:
        out["heart_rate"] = (band.hr_critical[0], INF)
    if band.sbp_normal is not None:
        out["systolic_bp"] = (pals_hypotension(age), INF)
    return out


def infant_temperature(age_days: int | None) -> tuple[Pair, Pair, Pair | None] | None:
    """(normal, critical, intervention) temperature for a young infant, or None for others.
    NICE NG143: >= 38 °C under 3 months is red; < 36 °C is hypothermia in a neonate."""
    if age_days is None or age_days >= YOUNG_INFANT_DAYS:
        return None
    return (36.0, 37.9), (35.1, 37.9), (-INF, 37.9)
