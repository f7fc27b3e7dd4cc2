"""Who is told, and what happens when nobody answers: the decision, kept apart from the
scores (river's rule: score first, decide second). docs/clinical.md §6, "Who is told", has
the table and its sources.

Tiers (the worst condition in an event decides), with their IEC 60601-1-8 priority:

=====  ==================================================  ==========================
tier   when                                                 response
=====  ==================================================  ==========================
0      late data (retrospective); a tier-1    information   recorded only
       value usual for the person (baseline)
1      a vital outside its normal range;      low           recorded and shown; nobody
       MEOWS one yellow                                     prompted or texted
2      NEWS2 single red parameter (low-       medium        wearer told and asked;
       medium); an adult's critical value                   no answer -> contacts
3      NEWS2 medium (5-6); MEOWS trigger; a   medium        + contacts texted now
       child's or a pregnant woman's                        (pregnancy: + clinician)
       critical value
4      NEWS2 high (>= 7); an intervention-    high          + clinician texted now;
       range value (SpO2 < 85, BP >= 180/120,               no answer -> hard SOS
       pregnancy >= 160/110, infant < 3
       months >= 38 °C, PALS limits)
=====  ==================================================  ==========================

While a hard SOS is open for the person (the ambulance and the family are already on it), a
new alert is recorded and shown and asks nobody anything; an intervention value still goes
to the care line.

A physically possible but implausible value (a pulse of 0 from a watch that was reading
one) is asked about at once and, unanswered, becomes a hard SOS: it cannot be told from an
arrest. With movement in the same reading it is more likely a loose strap: contacts instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gateway.contract.response import RECORD, Response
from gateway.monitor.profile import Profile
from gateway.monitor.severity import severity_rank


def tier_for(condition: str, severity: str, profile: Profile) -> int:
    rank = severity_rank(severity)
    if severity == "intervention" or severity == "high" or rank >= 4:
        return 4
    if severity == "medium" or rank >= 3:
        return 3
    if rank >= 2:  # low-medium (NEWS2 single red) or a critical value
        special = profile.is_child or profile.pregnant
        return 3 if special and severity == "critical" else 2
    return 1 if rank >= 1 else 0


def usual_for_them(condition: str, severity: str, evidence: Mapping[str, Any]) -> bool:
    """A mild alert on one vital whose value lies inside the person's own usual resting range
    (baseline.py puts `usual` into the vital's evidence once it has learnt enough days).
    Never a red NEWS2 parameter, a critical or an intervention value: those are not mild."""
    vital, _, side = condition.rpartition("_")
    if severity != "abnormal" or side not in ("low", "high"):
        return False
    info = (evidence.get("abnormal") or {}).get(vital)
    if not info or info.get("class") not in ("low", "high") or info.get("intervention"):
        return False
    usual = info.get("usual")
    red = ((evidence.get("news2") or {}).get("parameters") or {}).get(vital, 0) >= 3
    value = info.get("value")
    return (
        bool(usual)
        and not red
        and isinstance(value, int | float)
        and (usual[0] <= value <= usual[1])
    )


def alert_tier(condition: str, severity: str, evidence: Mapping[str, Any], profile: Profile) -> int:
    """`tier_for`, with a low-priority alert that is usual for the person an information
    signal (tier 0): shown as "usual for them", never an alarm."""
    tier = tier_for(condition, severity, profile)
    return 0 if tier == 1 and usual_for_them(condition, severity, evidence) else tier


def for_tier(tier: int, profile: Profile) -> Response:
    if tier <= 0:
        return RECORD
    if tier == 1:
        # Low priority: shown on the console, the report and Home Assistant; a mild value
        # alone never wakes anyone (hospital monitors' 87-99 % non-actionable alarms,
        # Bonafide 2015, are the failure this avoids).
        return Response(1, False, False, False, False, "none")
    if tier == 2:
        return Response(2, True, True, False, False, "contacts")
    if tier == 3:
        # MEOWS' trigger is by definition a call for the obstetric team.
        return Response(3, True, True, True, profile.pregnant, "contacts")
    return Response(4, True, True, True, True, "hard_sos")


def decide(
    severities: Iterable[tuple[str, str]],
    profile: Profile,
    *,
    retrospective: bool,
    sos_open: bool = False,
) -> Response:
    """The response to an event about these (condition, severity) pairs. `sos_open`: a hard
    SOS is running for the person: recorded and shown, nobody asked, the care line still
    told of an intervention value."""
    if retrospective:
        return RECORD
    tier = max((tier_for(c, s, profile) for c, s in severities), default=0)
    r = for_tier(tier, profile)
    if sos_open and tier >= 1:
        return Response(tier, False, False, False, r.clinician_now, "none")
    return r


def unconfirmed_value(*, moving: bool, retrospective: bool) -> Response:
    """A possible-but-implausible value: ask now; no answer is a hard SOS (or, when the
    reading shows movement, the contacts)."""
    if retrospective:
        return RECORD
    return Response(4, False, True, False, False, "contacts" if moving else "hard_sos")
