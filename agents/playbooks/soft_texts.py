"""The words of a soft SOS: to the wearer, to the family, to the care line, and to the
family when the wearer did not answer. Deterministic templates: the monitor decided who is
told (gateway/monitor/response.py); these only say it, in words and units."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.tools.sos_tools import NOTIFY_MAX, SMS_MAX
from gateway.contract.vital_words import (
    and_list,
    evidence_words,
    num_text,
    number,
    user_text,
    words_only,
)
from gateway.household.model import Person

URGENT_ADVICE = "Call emergency services now, or press SOS."
DEFAULT_ADVICE = (
    "If you feel unwell, call emergency services or press SOS. Otherwise consider booking an "
    "appointment with your doctor."
)
_URGENT_LEVELS = frozenset({"high", "critical", "emergency"})


def out_of_range(abnormal: Mapping[str, Any]) -> dict[str, Any]:
    """The entries outside their range. The monitor's evidence also carries the vitals that
    are normal (class "normal"); those are context, not what the alert is about."""
    return {
        k: v
        for k, v in abnormal.items()
        if not isinstance(v, Mapping) or v.get("class") != "normal"
    }


@user_text
def vital_text(name: str, v: Any) -> str:
    """ "oxygen saturation 87% (low, normal 94-100)" (gateway/contract/vital_words.py words it)."""
    return evidence_words(name, v)


def _num(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return round(v, 1) if isinstance(v, float) else v


def soft_user_turn(abnormal: Mapping[str, Any]) -> str:
    """The run's trajectory "user" state, in the paper's machine format (a dict of values the
    planner and agents/eval read back): an agent-log line, never a text sent to a person."""
    shown = out_of_range(abnormal) or abnormal
    values = {n: _num(v.get("value") if isinstance(v, Mapping) else v) for n, v in shown.items()}
    return f"Soft SOS triggered. Abnormal Vitals: {values}"


@user_text
def vitals_phrase(abnormal: Mapping[str, Any]) -> str:
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


@user_text
def soft_message(abnormal: Mapping[str, Any], advice: Any, severity: Any) -> str:
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
    advice = _said(advice)
    if str(severity).lower() in _URGENT_LEVELS and "emergency services now" not in advice.lower():
        advice = f"{URGENT_ADVICE} {advice}".strip()
    advice = advice or DEFAULT_ADVICE
    head = f"Soft SOS: {what}"
    room = NOTIFY_MAX - len(advice) - 1  # the advice is kept whole: it says what to do
    if len(head) > room:
        head = head[: room - 1].rstrip() + "…"
    return f"{head} {advice}"


def _said(value: Any) -> str:
    """Free text from the run's params (advice, a summary) as words: absent is empty."""
    return words_only(value) if isinstance(value, str) else ""


def _score_phrase(params: Mapping[str, Any]) -> str:
    n2 = params.get("news2")
    total = number(n2.get("total")) if isinstance(n2, Mapping) else None
    if isinstance(n2, Mapping) and total is not None:
        level = _said(n2.get("level"))
        partial = "" if n2.get("complete") else "from partial readings"
        how = ", ".join(x for x in (level, partial) if x)
        return f" Early warning score NEWS2 {num_text(total)}" + (f" ({how})." if how else ".")
    meows = params.get("meows")
    if isinstance(meows, Mapping) and meows.get("triggered"):
        return " The obstetric early warning score (MEOWS) has triggered."
    return ""


@user_text
def family_text(p: Person, params: Mapping[str, Any]) -> str:
    """To the emergency contacts, at once (NEWS2 medium or worse, a child's critical value)."""
    abnormal = params.get("abnormal") or {}
    return (
        f"healthgw: {p.name}'s vital signs need attention: {vitals_phrase(abnormal)}."
        f"{_score_phrase(params)} {p.name} has been asked if they are OK. "
        f"Please check on them. Advice given: {_said(params.get('advice')) or DEFAULT_ADVICE}"
    ).strip()[:SMS_MAX]


@user_text
def clinician_text(p: Person, params: Mapping[str, Any]) -> str:
    """To the care line / GP: an intervention-range value is a clinician's call."""
    abnormal = params.get("abnormal") or {}
    contacts = ", ".join(f"{c.name} {c.phone}" for c in p.emergency_contacts) or "none listed"
    return (
        f"healthgw clinical alert for {p.name} (born {p.birth_date.isoformat()}, user ID {p.id})"
        f": {vitals_phrase(abnormal)}.{_score_phrase(params)} These are in the range where a "
        f"clinician should review now. Family contacts: {contacts}. "
        f"Home: {p.location.latitude:.5f}, {p.location.longitude:.5f}."
    )[:SMS_MAX]


@user_text
def unanswered_text(p: Person, params: Mapping[str, Any]) -> str:
    """To the emergency contacts when the wearer did not answer "are you OK?"."""
    summary = _said(params.get("summary"))
    about = f" It was about: {summary}." if summary else ""
    return (
        f"healthgw: {p.name} did not answer a health alert on their watch.{about} "
        "Please check on them now, and call emergency services if you cannot reach them."
    )[:SMS_MAX]
