"""What an alert says: the "why" (rule, values, ranges, scores) and the advice. Words only;
the decision is `response.py`'s."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.monitor.profile import RATE_LIMITING_DRUGS, Profile
from gateway.vitals import VITALS

# The words and units an alert uses for each numeric vital (gateway/vitals.py has them).
UNITS = {v.name: v.unit for v in VITALS if v.unit is not None}
LABELS = {v.name: v.label for v in VITALS if v.label is not None}

ADVISE = (
    "If you feel unwell, call emergency services or press SOS. "
    "Otherwise consider booking an appointment with your doctor."
)
URGENT = (
    "Please answer the question on your watch. If you feel unwell, call your doctor or the "
    "out-of-hours line now, or press SOS."
)
URGENT_FAMILY = (
    "Contact your doctor urgently now. Your emergency contacts have been told. "
    "Press SOS if you feel worse."
)
URGENT_PREGNANCY = (
    "Contact your maternity unit or midwife now. Your emergency contacts have been told. "
    "Press SOS if you feel worse."
)
EMERGENCY = "Call emergency services now, or press SOS on your watch."
CHILD = "A parent or carer should check on them now."


def advice_for(tier: int, profile: Profile) -> str:
    if tier >= 4:
        text = EMERGENCY
    elif tier == 3:
        text = URGENT_PREGNANCY if profile.pregnant and not profile.is_child else URGENT_FAMILY
    elif tier == 2:
        text = URGENT
    else:
        text = ADVISE
    if profile.is_child and tier >= 2:
        text = f"{CHILD} {text}"
    return text


def medication_note(profile: Profile, vital: str) -> str | None:
    """A heart-rate floor lowered by a drug is named, so nobody wonders why 42 was quiet."""
    if vital != "heart_rate" or not profile.rate_limited or profile.is_child:
        return None
    drugs = sorted({d for d in RATE_LIMITING_DRUGS for m in profile.medications if d in m})
    return f"heart-rate limits lowered for {', '.join(drugs)}"


def why(data: Mapping[str, Any], profile: Profile) -> str:
    parts = list(data["rules"])
    for v, info in data["abnormal"].items():
        lo, hi = info["normal"]
        detail = f"{info['class'].replace('_', ' ')}; normal {lo:g}-{hi:g}"
        if info.get("intervention"):
            detail += "; intervention range"
        if info.get("unconfirmed"):
            detail += "; sudden change, not yet confirmed"
        note = medication_note(profile, v)
        if note:
            detail += f"; {note}"
        parts.append(f"{LABELS[v]} {info['value']:g} {info['unit']} ({detail})")
    n2 = data.get("news2")
    if n2:
        pts = ", ".join(f"{k} {p}" for k, p in n2["parameters"].items() if p)
        partial = "" if n2.get("complete") else ", partial"
        parts.append(f"NEWS2 {n2['total']} ({n2['level']}{partial}{': ' + pts if pts else ''})")
    meows = data.get("meows")
    if meows:
        parts.append(
            f"MEOWS {'trigger' if meows['triggered'] else 'no trigger'} "
            f"(red: {', '.join(meows['red']) or 'none'}; "
            f"yellow: {', '.join(meows['yellow']) or 'none'})"
        )
    if profile.is_child:
        parts.append(f"age {profile.age}: APLS ranges for age (NEWS2 is not used under 16)")
    elif profile.pregnant:
        parts.append("pregnancy: MEOWS and NICE NG133 thresholds (NEWS2 is not used)")
    if data.get("anomaly_score") is not None:
        parts.append(f"anomaly score {data['anomaly_score']}")
    return "; ".join(parts)


def implausible_words(vital: str, value: Any) -> str:
    """ "heart rate as 0 bpm": what a prompt about an implausible reading says."""
    label = LABELS.get(vital, vital.replace("_", " "))
    try:
        shown = f"{float(value):g}"
    except (TypeError, ValueError):
        return label
    return f"{label} as {shown} {UNITS.get(vital, '')}".rstrip()


def summary(abnormal: Mapping[str, Any]) -> str:
    """Plain words for a text to the family: "oxygen saturation 91 % (critical low)"."""
    parts = []
    for v, info in abnormal.items():
        if not isinstance(info, Mapping) or info.get("class") in (None, "normal"):
            continue
        try:
            value = f"{float(info['value']):g}"
        except (KeyError, TypeError, ValueError):
            continue
        cls = str(info["class"]).replace("_", " ")
        parts.append(f"{LABELS.get(v, v)} {value} {UNITS.get(v, '')} ({cls})".replace("  ", " "))
    return ", ".join(parts) or "vital signs outside their normal range"
