"""What an alert says: the "why" (rule, values, ranges, scores) and the advice. Words only;
the decision is `response.py`'s."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.contract.vital_words import (
    NOT_MEASURED,
    UNREADABLE,
    and_list,
    evidence_words,
    label,
    num_text,
    number,
    user_text,
    value_words,
    vital_words,
    words_only,
)
from gateway.contract.vitals import VITALS
from gateway.monitor.profile import RATE_LIMITING_DRUGS, Profile

# The words and units of each ranged vital, which an alert's evidence carries (gateway/contract/vitals.py
# has them; gateway/contract/vital_words.py says them).
UNITS = {v.name: v.unit for v in VITALS if v.numeric and v.unit is not None}
LABELS = {v.name: v.label for v in VITALS if v.numeric}

# Low priority: shown on the console and in the daily report, never sent to the wearer.
ADVISE = (
    "Recorded for the daily report; nobody was woken. If it keeps happening, mention it to "
    "your doctor."
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


@user_text
def why(data: Mapping[str, Any], profile: Profile) -> str:
    """The alert's reasons in words (the console shows it): rules, each vital with its class,
    normal range and notes, the scores. gateway/contract/vital_words.py words every value."""
    parts = [words_only(r) for r in data.get("rules") or () if isinstance(r, str)]
    for v, info in (data.get("abnormal") or {}).items():
        note = medication_note(profile, v)
        parts.append(evidence_words(v, info, full=True, notes=[note] if note else []))
    n2 = data.get("news2")
    total = number(n2.get("total")) if isinstance(n2, Mapping) else None
    if isinstance(n2, Mapping) and total is not None:
        params = n2.get("parameters")
        scored = params.items() if isinstance(params, Mapping) else ()
        pts = ", ".join(f"{label(k)} {num_text(x)}" for k, p in scored if (x := number(p)))
        level = words_only(n2["level"]) if isinstance(n2.get("level"), str) else ""
        partial = "" if n2.get("complete") else "partial"
        how = ", ".join(x for x in (level, partial) if x) + (f": {pts}" if pts else "")
        parts.append(f"NEWS2 {num_text(total)}" + (f" ({how})" if how else ""))
    meows = data.get("meows")
    if isinstance(meows, Mapping):
        red = and_list(label(x) for x in meows.get("red") or () if isinstance(x, str)) or "none"
        yellow = and_list(label(x) for x in meows.get("yellow") or () if isinstance(x, str))
        what = "trigger" if meows.get("triggered") else "no trigger"
        parts.append(f"MEOWS {what} (red: {red}; yellow: {yellow or 'none'})")
    if profile.is_child:
        parts.append(f"age {profile.age}: APLS ranges for age (NEWS2 is not used under 16)")
    elif profile.pregnant:
        parts.append("pregnancy: MEOWS and NICE NG133 thresholds (NEWS2 is not used)")
    score = number(data.get("anomaly_score"))
    if score is not None:
        parts.append(f"anomaly score {num_text(score, 3)}")
    return "; ".join(p for p in parts if p)


@user_text
def implausible_words(vital: str, value: Any) -> str:
    """ "heart rate as 0 bpm": what a prompt about an implausible reading says."""
    shown = value_words(vital, value)
    return label(vital) if shown in (NOT_MEASURED, UNREADABLE) else f"{label(vital)} as {shown}"


@user_text
def summary(abnormal: Mapping[str, Any]) -> str:
    """Plain words for a text to the family: "oxygen saturation 91% (critical low)"."""
    parts = []
    for v, info in abnormal.items():
        if not isinstance(info, Mapping) or info.get("class") in (None, "normal"):
            continue
        if value_words(v, info.get("value"), info.get("unit")) in (NOT_MEASURED, UNREADABLE):
            continue
        cls = info["class"]
        how = f" ({words_only(cls)})" if isinstance(cls, str) and words_only(cls) else ""
        parts.append(vital_words(v, info.get("value"), info.get("unit")) + how)
    return ", ".join(parts) or "vital signs outside their normal range"
