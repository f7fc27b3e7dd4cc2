"""Monitor events -> "are you OK?" questions: the bus subscriber between the monitor's decision
(each event's `response`) and the escalation watcher that asks and keeps the countdown."""

from __future__ import annotations

from gateway.contract.events import (
    AlertPayload,
    FallPayload,
    HardSosPayload,
    ImplausiblePayload,
    parse_payload,
)
from gateway.contract.topics import EventType
from gateway.contract.values import Event
from gateway.escalation.watcher import EscalationWatcher
from gateway.monitor.engine import Monitor
from gateway.monitor.wording import implausible_words, summary

# The event types this subscriber needs.
TYPES = frozenset(
    {
        EventType.SOFT_SOS,
        EventType.ALERT_UPDATED,
        EventType.ALERT_CLEARED,
        EventType.IMPLAUSIBLE_READING,
        EventType.UNCONFIRMED_READING,
        EventType.QUESTION_WITHDRAWN,
        EventType.FALL_DETECTED,
        EventType.HARD_SOS,
    }
)


class AlertQuestions:
    def __init__(self, escalation: EscalationWatcher, monitor: Monitor) -> None:
        self._esc = escalation
        self._monitor = monitor

    async def on_event(self, event: Event) -> None:
        esc = self._esc
        if event.type == EventType.QUESTION_WITHDRAWN:
            # The next readings refuted a single reading: the question goes, nobody is told.
            await esc.withdraw(event.person, device=str(event.data.get("device", "")))
            return
        payload = parse_payload(event.type, event.data)
        if isinstance(payload, HardSosPayload):
            esc.resolve(event.person)
        elif isinstance(payload, AlertPayload) and event.type == EventType.ALERT_CLEARED:
            esc.on_cleared(event.person, payload.alert_id)
        elif payload is None or payload.retrospective:
            return  # late data: recorded, nobody is woken for yesterday
        elif isinstance(payload, FallPayload):
            await esc.on_fall(event.person, payload.device)
        elif isinstance(payload, ImplausiblePayload):
            if payload.ask:
                await esc.on_implausible(
                    event.person,
                    device=payload.device,
                    what=implausible_words(payload.vital, payload.value),
                    on_no_answer=payload.response.on_no_answer if payload.response else "hard_sos",
                    unconfirmed=event.type == EventType.UNCONFIRMED_READING,
                    window_s=payload.window_s,
                    since=payload.since,
                )
        elif isinstance(payload, AlertPayload):
            response = payload.response
            if not payload.notify or response is None or not response.ask:
                return
            await esc.on_alert(
                event.person,
                alert_ids=list(payload.alert_ids),
                on_no_answer=response.on_no_answer,
                summary=summary(payload.abnormal),
            )

    async def ask_what_a_crash_left_unasked(self) -> None:
        """An alert saved as open and told, whose "are you OK?" never reached safety.db (a
        crash between the two), is asked about now."""
        for person, alert_id, resp, text in self._monitor.unasked():
            if resp.ask and not self._esc.has_prompt_for(alert_id):
                await self._esc.on_alert(
                    person, alert_ids=[alert_id], on_no_answer=resp.on_no_answer, summary=text
                )
