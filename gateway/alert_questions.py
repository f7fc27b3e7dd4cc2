"""Monitor events -> "are you OK?" questions: the bus subscriber between the monitor's decision
(each event's `response`) and the escalation watcher that asks and keeps the countdown."""

from __future__ import annotations

from gateway.contract import EventType
from gateway.escalation import EscalationWatcher
from gateway.model import Event
from gateway.monitor.engine import Monitor
from gateway.monitor.wording import implausible_words, summary

# The event types this subscriber needs.
TYPES = frozenset(
    {
        EventType.SOFT_SOS,
        EventType.ALERT_UPDATED,
        EventType.ALERT_CLEARED,
        EventType.IMPLAUSIBLE_READING,
        EventType.FALL_DETECTED,
        EventType.HARD_SOS,
    }
)


class AlertQuestions:
    def __init__(self, escalation: EscalationWatcher, monitor: Monitor) -> None:
        self._esc = escalation
        self._monitor = monitor

    async def on_event(self, event: Event) -> None:
        d = event.data
        esc = self._esc
        if event.type == EventType.HARD_SOS:
            esc.resolve(event.person)
            return
        if event.type == EventType.ALERT_CLEARED:
            esc.on_cleared(event.person, str(d.get("alert_id")))
            return
        if d.get("retrospective"):
            return  # late data: recorded, nobody is woken for yesterday
        if event.type == EventType.FALL_DETECTED:
            await esc.on_fall(event.person, str(d.get("device", "")))
            return
        response = d.get("response") or {}
        if event.type == EventType.IMPLAUSIBLE_READING:
            if d.get("ask"):
                await esc.on_implausible(
                    event.person,
                    device=str(d.get("device", "")),
                    what=implausible_words(str(d.get("vital")), d.get("value")),
                    on_no_answer=response.get("on_no_answer", "hard_sos"),
                )
            return
        if not d.get("notify", False) or not response.get("ask"):
            return
        await esc.on_alert(
            event.person,
            alert_ids=[str(a) for a in d.get("alert_ids") or [d.get("alert_id")]],
            on_no_answer=response.get("on_no_answer", "none"),
            summary=summary(d.get("abnormal") or {}),
        )

    async def ask_what_a_crash_left_unasked(self) -> None:
        """An alert saved as open and told, whose "are you OK?" never reached safety.db (a
        crash between the two), is asked about now."""
        for person, alert_id, resp, text in self._monitor.unasked():
            if resp.ask and not self._esc.has_prompt_for(alert_id):
                await self._esc.on_alert(
                    person, alert_ids=[alert_id], on_no_answer=resp.on_no_answer, summary=text
                )
