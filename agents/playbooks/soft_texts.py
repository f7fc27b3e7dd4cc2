"""The words of a soft SOS: to the wearer, to the family, to the care line, and to the
family when the wearer did not answer. Deterministic templates: the monitor decided who is
told (gateway/monitor/response.py); these only say it, in words and units."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gateway.household import Person

_LABELS = {
    "spo2": "oxygen",
    "heart_rate": "heart rate",
    "respiratory_rate": "breathing rate",
    "systolic_bp": "systolic blood pressure",
    "diastolic_bp": "diastolic blood pressure",
    "temperature_c": "temperature",
}
_UNITS = {"/min": " per minute", "breaths/min": " per minute", "rpm": " per minute"}
URGENT_ADVICE = "Call emergency services now, or press SOS."
DEFAULT_ADVICE = (
    "If you feel unwell, call emergency services or press SOS. Otherwise consider booking an "
    "appointment with your doctor."
)
_URGENT_LEVELS = frozenset({"high", "critical", "emergency"})


def _num(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, float):
        return round(v, 1)
    return v


def _with_unit(value: Any, unit: Any) -> str:
    v = _num(value)
    if not unit:
        return f"{v}"
    unit = str(unit)
    if unit in _UNITS:
        return f"{v}{_UNITS[unit]}"
    return f"{v}{unit}" if unit == "%" else f"{v} {unit}"


def _range_text(r: Any) -> str | None:
    if isinstance(r, Mapping) and "low" in r and "high" in r:
        r = (r["low"], r["high"])
    if isinstance(r, list | tuple) and len(r) == 2:
        return f"normal {_num(r[0])}-{_num(r[1])}"
    return f"normal {r}" if isinstance(r, str) and r else None


def out_of_range(abnormal: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The entries outside their range. The monitor's evidence also carries the vitals that
    are normal (class "normal"); those are context, not what the alert is about."""
    return {k: v for k, v in abnormal.items() if v.get("class") != "normal"}


def vital_text(name: str, v: Mapping[str, Any]) -> str:
    cls = str(v["class"]).replace("_", " ") if v.get("class") else None
    rng = _range_text(v.get("range", v.get("normal")))
    detail = ", ".join(x for x in (cls, rng) if x)
    text = (
        f"{_LABELS.get(name, name.replace('_', ' '))} {_with_unit(v.get('value'), v.get('unit'))}"
    )
    return text + (f" ({detail})" if detail else "")


def and_list(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def soft_user_turn(abnormal: Mapping[str, Mapping[str, Any]]) -> str:
    shown = out_of_range(abnormal) or abnormal
    values = {name: _num(v.get("value")) for name, v in shown.items()}
    return f"Soft SOS triggered. Abnormal Vitals: {values}"


def vitals_phrase(abnormal: Mapping[str, Mapping[str, Any]]) -> str:
    out = out_of_range(abnormal)
    if out:
        return and_list([vital_text(k, v) for k, v in out.items()])
    if abnormal:
        return (
            "readings that together need attention (latest: "
            + and_list([vital_text(k, v) for k, v in abnormal.items()])
            + ")"
        )
    return "readings that need attention"


def soft_message(abnormal: Mapping[str, Mapping[str, Any]], advice: str, severity: str) -> str:
    """Every out-of-range vital with its value and unit (class and normal range when known),
    then the advice. At a high/critical level the advice always says to call emergency
    services now. Information only: the escalation watcher asks "are you OK?" separately."""
    out = out_of_range(abnormal)
    if out:
        tail = "outside your normal range" if len(out) == 1 else "all outside your normal range"
        what = f"your {and_list([vital_text(k, v) for k, v in out.items()])}, {tail}."
    elif abnormal:  # e.g. a NEWS2 or trend alert: each value in range, together a concern
        latest = and_list([vital_text(k, v) for k, v in abnormal.items()])
        what = f"your readings together need attention (latest: {latest})."
    else:
        what = "your readings need attention."
    advice = advice.strip()
    if severity.lower() in _URGENT_LEVELS and "emergency services now" not in advice.lower():
        advice = f"{URGENT_ADVICE} {advice}".strip()
    return f"Soft SOS: {what} {advice or DEFAULT_ADVICE}"


def _score_phrase(params: Mapping[str, Any]) -> str:
    n2 = params.get("news2")
    if isinstance(n2, Mapping) and n2.get("total") is not None:
        partial = "" if n2.get("complete") else ", from partial readings"
        return f" Early warning score NEWS2 {n2['total']} ({n2.get('level')}{partial})."
    meows = params.get("meows")
    if isinstance(meows, Mapping) and meows.get("triggered"):
        return " The obstetric early warning score (MEOWS) has triggered."
    return ""


def family_text(p: Person, params: Mapping[str, Any]) -> str:
    """To the emergency contacts, at once (NEWS2 medium or worse, a child's critical value)."""
    abnormal = params.get("abnormal") or {}
    return (
        f"healthgw: {p.name}'s vital signs need attention: {vitals_phrase(abnormal)}."
        f"{_score_phrase(params)} {p.name} has been asked if they are OK. "
        f"Please check on them. Advice given: {str(params.get('advice', '')).strip()}"
    ).strip()[:1600]


def clinician_text(p: Person, params: Mapping[str, Any]) -> str:
    """To the care line / GP: an intervention-range value is a clinician's call."""
    abnormal = params.get("abnormal") or {}
    contacts = ", ".join(f"{c.name} {c.phone}" for c in p.emergency_contacts) or "none listed"
    return (
        f"healthgw clinical alert for {p.name} (born {p.birth_date.isoformat()}, user ID {p.id})"
        f": {vitals_phrase(abnormal)}.{_score_phrase(params)} These are in the range where a "
        f"clinician should review now. Family contacts: {contacts}. "
        f"Home: {p.location.latitude:.5f}, {p.location.longitude:.5f}."
    )[:1600]


def unanswered_text(p: Person, params: Mapping[str, Any]) -> str:
    """To the emergency contacts when the wearer did not answer "are you OK?"."""
    summary = str(params.get("summary", "")).strip()
    about = f" It was about: {summary}." if summary else ""
    return (
        f"healthgw: {p.name} did not answer a health alert on their watch.{about} "
        "Please check on them now, and call emergency services if you cannot reach them."
    )[:1600]
