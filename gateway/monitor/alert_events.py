"""Alert transitions -> events, each with its why, advice and response (who is told, what
happens without an answer). One reading can open several alerts (SpO2 low and heart rate
high together): the person hears about them once, in one event."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gateway.base.clock import Clock
from gateway.contract.events import AlertPayload
from gateway.contract.response import RECORD
from gateway.contract.topics import EventType
from gateway.contract.values import Event
from gateway.monitor.alerts import Transition
from gateway.monitor.profile import Profile
from gateway.monitor.response import decide, tier_for, usual_for_them
from gateway.monitor.severity import severity_rank
from gateway.monitor.wording import advice_for, why

_KIND = {
    "opened": EventType.SOFT_SOS,
    "reopened": EventType.SOFT_SOS,
    "recurred": EventType.SOFT_SOS,
    "updated": EventType.ALERT_UPDATED,
    "persisting": EventType.ALERT_UPDATED,
    "cleared": EventType.ALERT_CLEARED,
}


def _current(t: Transition) -> str:
    """The severity that decides the response: the worst pending one when it opened, the
    present one when it recurred or is asked about again."""
    return t.severity if t.kind in ("recurred", "persisting") else t.peak_severity


class EventBuilder:
    def __init__(
        self,
        clock: Clock,
        profile_of: Callable[[str], Profile],
        sos_open: Callable[[str], bool] | None = None,
    ) -> None:
        self._clock = clock
        self._profile = profile_of
        self._sos_open = sos_open or (lambda _person: False)

    def from_transitions(
        self,
        transitions: list[Transition],
        *,
        retrospective: bool,
        at: float,
        device: str | None = None,
        reading_ts: float | None = None,
    ) -> list[Event]:
        """`reading_ts`: the time of the reading that caused these transitions (none for the
        clock's own: persisting, expiry). Kept in the payload so the daily report counts the
        event in the day of its reading, whenever it was stored."""
        out: list[Event] = []
        groups: dict[tuple[str, EventType], list[Transition]] = {}
        for t in transitions:
            kind = _KIND[t.kind]
            if kind is EventType.ALERT_CLEARED:
                out.append(self._event(kind, [t], retrospective, at, device, reading_ts))
            else:
                groups.setdefault((t.person, kind), []).append(t)
        for (_person, kind), ts in groups.items():
            out.append(self._event(kind, ts, retrospective, at, device, reading_ts))
        return out

    def _event(
        self,
        kind: EventType,
        ts: list[Transition],
        retrospective: bool,
        at: float,
        device: str | None,
        reading_ts: float | None,
    ) -> Event:
        ts = sorted(ts, key=lambda t: -severity_rank(_current(t)))
        lead = ts[0]
        profile = self._profile(lead.person)
        abnormal: dict[str, Any] = {}
        news2: Any = None
        meows: Any = None
        score: Any = None
        for t in ts:
            for v, info in (t.evidence.get("abnormal") or {}).items():
                if info.get("class") != "normal":
                    abnormal[v] = info
            news2 = news2 or t.evidence.get("news2")
            meows = meows or t.evidence.get("meows")
            score = score if score is not None else t.evidence.get("anomaly_score")
        clearing = kind is EventType.ALERT_CLEARED
        sos_open = not clearing and not retrospective and self._sos_open(lead.person)
        response = decide(
            [] if clearing else [(t.condition, _current(t)) for t in ts],
            profile,
            retrospective=retrospective,
            sos_open=sos_open,
        )
        if (
            response.tier == 1
            and not sos_open
            and all(usual_for_them(t.condition, _current(t), t.evidence) for t in ts)
        ):
            # Mild and inside the person's own usual range (baseline.py): an information
            # signal, "usual for them", not a low-priority alarm.
            response = RECORD
            usual = True
        else:
            usual = False
        if lead.kind == "persisting":
            # Asking again after "I'm OK": the wearer only. The family and the care line were
            # told when it started and hear again only if it gets worse (`updated`).
            response = replace(response, contacts_now=False, clinician_now=False)
        # Low priority (a mild value) and anything during an open hard SOS: recorded and
        # shown, nobody prompted or told (an intervention value still reaches the care line).
        quiet = response.tier == 1 or usual or (sos_open and not response.clinician_now)
        notify = not clearing and not retrospective and not quiet and any(t.notify for t in ts)
        if not clearing and not retrospective and (response.tier == 1 or usual):
            kind = EventType.ADVISORY
        rules = tuple(str(t.evidence.get("rule", t.condition)) for t in ts)
        payload = AlertPayload(
            alert_id=lead.alert_id,
            alert_ids=tuple(t.alert_id for t in ts),
            condition=lead.condition,
            conditions=tuple(t.condition for t in ts),
            transition=lead.kind,
            severity=_current(lead),
            peak_severity=lead.peak_severity,
            high=response.tier >= 4,
            # An alert that only ever was low priority ends as quietly as it began.
            notify=notify
            if not clearing
            else (
                lead.notify
                and not retrospective
                and tier_for(lead.condition, lead.peak_severity, profile) >= 2
            ),
            opened_at=lead.opened_at,
            abnormal=abnormal,
            news2=news2,
            meows=meows,
            anomaly_score=score,
            rules=rules,
            response=response,
            retrospective=retrospective,
            device=device,
            # Late data is placed at its own time (`at` is the reading's then).
            reading_ts=at if retrospective else reading_ts,
        )
        if not clearing:
            payload = replace(
                payload,
                why=why(payload.to_data(), profile)
                + ("; a hard SOS is open: recorded, nobody asked" if sos_open else "")
                + ("; usual for them" if usual else ""),
                advice=advice_for(1 if usual else response.tier, profile),
            )
        data = payload.to_data()
        if retrospective:
            return Event(EventType.RETROSPECTIVE_ALERT, lead.person, at, data)
        return Event(kind, lead.person, at, data)
