"""Inbound messages, routed by their validated type (a table, not an isinstance chain):
readings to the monitor and the store, SOS presses to the playbooks in their own task, acks
to the ladder, the medication service or the escalation watcher, device status to the
monitor, intents to the assistant, rejects to the dead letters (`Router`). Also the SOS
latency clock and the hold that makes vitals wait while an SOS has not texted yet
(`SosClock`)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from gateway.base.clock import Clock
from gateway.base.errors import StorageError
from gateway.base.metrics import LatencyHistogram
from gateway.base.ports import LadderPort, MedicationPort, SosHandler
from gateway.base.settings import Settings
from gateway.contract.topics import format_ts, rejected_topic
from gateway.contract.values import Event, Reading
from gateway.edge.deadletter import DeadLetter, DeadLetterBox
from gateway.edge.validate import (
    Deduper,
    EdgeValidator,
    IntentIn,
    Rejection,
    SosIn,
    StatusIn,
    WatchAck,
)
from gateway.escalation.watcher import EscalationWatcher
from gateway.household.state import PersonStatePublisher
from gateway.monitor.engine import Monitor
from gateway.mqtt.link import MqttLink
from gateway.store import Store
from gateway.tsdb.lines import gateway_line
from gateway.tsdb.writer import TimeSeriesWriter

log = logging.getLogger(__name__)

URGENT_HOLD_S = 2.0  # the longest vitals wait for an SOS's first text
SOS_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

Emit = Callable[[Event], Awaitable[None]]
ChatSay = Callable[[str, str, str | None], Awaitable[str | None]]


class _NoSos:
    """A gateway built without the playbooks (tests, tools): refuse loudly, never pretend."""

    async def start(
        self, person: str, *, device: str | None, location: tuple[float, float] | None, trigger: str
    ) -> bool:
        log.error("hard SOS requested but this gateway has no SOS playbooks")
        return False

    async def end(self, person: str, *, device: str | None, trigger: str) -> bool:
        return False


class SosClock:
    """Hard SOS received -> first text handed to the provider, per person (`latency`, and a
    point in the time series when there is one). While an SOS started within URGENT_HOLD_S
    has not texted yet, `urgent()` says so: the link lets vitals wait
    (gateway/mqtt/inbound_queue.py Dispatcher) so nothing competes with that text."""

    def __init__(self, tsdb: TimeSeriesWriter | None, gateway_id: str, clock: Clock) -> None:
        self.latency = LatencyHistogram(SOS_BUCKETS)
        self._tsdb = tsdb
        self._gateway_id = gateway_id
        self._clock = clock
        self._t0: dict[str, float] = {}

    def mark(self, person: str) -> None:
        """Start the clock; a press during an SOS already timing keeps the first, and a mark
        left by an SOS that never texted (5 min) is replaced."""
        now = time.perf_counter()
        old = self._t0.get(person)
        if old is None or now - old > 300:
            self._t0[person] = now

    def urgent(self) -> bool:
        if not self._t0:
            return False
        now = time.perf_counter()
        return any(now - t0 < URGENT_HOLD_S for t0 in list(self._t0.values()))

    def on_text_event(self, kind: str, data: Mapping[str, Any]) -> None:
        """From the text dispatcher's worker threads: an SOS's first text stops its clock."""
        if kind != "notification_sent" or not str(data.get("purpose", "")).startswith("sos:"):
            return
        t0 = self._t0.pop(str(data.get("person", "")), None)
        if t0 is None:
            return
        seconds = time.perf_counter() - t0
        self.latency.observe(seconds)
        if self._tsdb is not None:
            fields = {"sos_latency_ms": round(seconds * 1000, 2)}
            self._tsdb.add_line(gateway_line(self._gateway_id, fields, self._clock.now()))


class Router:
    """One inbound message at a time (`on_message`), to the part its type belongs to. Owns
    the SOS playbooks' tasks it starts (`finish_sos_tasks` waits for them at stop)."""

    def __init__(
        self,
        settings: Settings,
        clock: Clock,
        *,
        validator: EdgeValidator,
        dedupe: Deduper,
        monitor: Monitor,
        store: Store,
        tsdb: TimeSeriesWriter | None,
        person_state: PersonStatePublisher,
        escalation: EscalationWatcher,
        deadletters: DeadLetterBox,
        link: MqttLink,
        sos_clock: SosClock,
        emit: Emit,
        chat_say: ChatSay,
        sos: SosHandler,
        ladder: LadderPort | None,
        meds: MedicationPort | None,
        counters: Counter[str],
        rejects: Counter[str],
        reading_latency: LatencyHistogram,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.validator = validator
        self.dedupe = dedupe
        self.monitor = monitor
        self.store = store
        self.tsdb = tsdb
        self.person_state = person_state
        self.escalation = escalation
        self.deadletters = deadletters
        self.link = link
        self.sos_clock = sos_clock
        self.emit = emit
        self.chat_say = chat_say
        self.sos = sos
        self.ladder = ladder
        self.meds = meds
        self.counters = counters
        self.rejects = rejects
        # Reading handling time (validate is before; monitor + store enqueue here).
        self.reading_latency = reading_latency
        self.tasks: set[asyncio.Task[Any]] = set()

    async def on_message(self, topic: str, payload: bytes) -> asyncio.Future[Any] | None:
        """Handle one inbound message. For an SOS, returns the playbook's task: the link
        acknowledges the message to the broker when it ends (gateway/mqtt/acks.py), so a
        crash before the SOS was taken in hand gets it redelivered."""
        self.counters["received"] += 1
        result = self.validator.validate(topic, payload)
        route = _ROUTES.get(type(result))
        return None if route is None else await route(self, result, payload)

    async def _route_rejection(self, r: Rejection, payload: bytes) -> None:
        await self._reject(r, payload)

    async def _route_reading(self, r: Reading, _payload: bytes) -> None:
        if self.dedupe.is_duplicate(r):
            self.counters["duplicates"] += 1
            return
        await self._on_reading(r)

    async def _route_sos(self, sos: SosIn, _payload: bytes) -> asyncio.Future[Any]:
        self.counters[f"sos_{sos.payload.action}"] += 1
        if sos.payload.action == "start":
            # Now, before the playbook's task runs: from here vitals wait (SosClock.urgent).
            self.sos_clock.mark(sos.person)
        return self._spawn(self._on_sos(sos))

    async def _route_ack(self, ack: WatchAck, _payload: bytes) -> None:
        self.counters["acks"] += 1
        answer = ack.payload.answer
        if ack.payload.prompt_id == "sos" and self.ladder is not None:
            # "I'm helping" for an open SOS (a family member's app, or the wearer).
            await self.ladder.ack(ack.person, f"mqtt:{ack.device}")
            return
        # A dose answer (taken / snooze / skip) or the yes / no to a `confirm` prompt (a
        # proposed prescription) is not an "are you OK?" answer: a "no" there never escalates.
        if (
            (answer is not None or ack.payload.prompt_id is not None)
            and self.meds is not None
            and await self._meds_took(ack, answer)
        ):
            self.counters["dose_answers"] += 1
            return
        alert_ids = await self.escalation.on_ack(
            ack.person, ok=ack.payload.ok, prompt_id=ack.payload.prompt_id, device=ack.device
        )
        if alert_ids is not None:
            self.monitor.answered(
                ack.person,
                ok=ack.payload.ok,
                alert_ids=alert_ids,
                snooze_s=self.settings.ok_snooze_s,
            )
        elif not ack.payload.ok:
            # "Not OK" with nothing pending (the question already escalated, expired, or
            # was never asked) is still a person saying they need help.
            await self.escalation.not_ok(ack.person, device=ack.device)

    async def _meds_took(self, ack: WatchAck, answer: str | None) -> bool:
        """Whether the medication side took this answer. If it fails, the answer goes on to
        the "are you OK?" prompts: a "Not OK" lost to a medication error is the worse loss."""
        if self.meds is None:
            return False
        try:
            return await self.meds.on_answer(
                ack.person, ack.payload.prompt_id, answer, ok=ack.payload.ok
            )
        except Exception:
            self.counters["dose_answer_errors"] += 1
            log.exception("watch answer failed in the medication side; taken as a prompt answer")
            return False

    async def _route_status(self, st: StatusIn, _payload: bytes) -> None:
        for ev in self.monitor.device_status(st.person, st.device, st.online):
            await self.emit(ev)

    async def _route_intent(self, intent: IntentIn, _payload: bytes) -> None:
        self.counters["intents"] += 1
        await self.chat_say(intent.person, intent.payload.text, intent.payload.session_id)

    async def _on_reading(self, reading: Reading) -> None:
        self.counters["readings"] += 1
        t0 = time.perf_counter()
        out = self.monitor.process(reading)
        try:
            self.store.add_reading(
                reading,
                news2_total=out.news2_total,
                news2_level=out.news2_level,
                anomaly=out.anomaly,
                flags=out.flags,
            )
        except StorageError:
            # Memory bound hit and the disk refuses the spill: counted and announced (the
            # store's failing episode), and the alerts below still go out.
            self.counters["readings_lost"] += 1
        if self.tsdb is not None:
            self.tsdb.add_reading(
                reading,
                news2_total=out.news2_total,
                news2_level=out.news2_level,
                anomaly=out.anomaly,
                flagged=bool(out.flags),
                open_alerts=self.monitor.open_alert_count(reading.person),
            )
        self.person_state.note_reading(reading.person, out.news2_level)
        if out.moved:
            self.escalation.on_movement(reading.person)
        self.reading_latency.observe(time.perf_counter() - t0)
        for ev in out.events:
            await self.emit(ev)

    async def _on_sos(self, sos: SosIn) -> None:
        p = sos.payload
        if p.action == "start":
            loc = (p.location.latitude, p.location.longitude) if p.location else None
            await self.sos.start(sos.person, device=sos.device, location=loc, trigger="button")
        else:
            await self.sos.end(sos.person, device=sos.device, trigger="button")

    async def _reject(self, r: Rejection, payload: bytes) -> None:
        self.counters["rejected"] += 1
        self.rejects[r.reason] += 1
        now = self.clock.now()
        # The dead letter keeps the raw bytes on the hub (local, for debugging); the
        # published notice names the reason only, never the values.
        self._dead_letter(r, payload, now)
        # Informational and one per bad message: best effort, never waits on the outbound
        # queue (a flood must not stall inbound handling); a drop is counted by the link.
        self.link.publish_nowait(
            rejected_topic(self.settings.gateway_id),
            {
                "topic": r.topic,
                "reason": r.reason,
                "detail": r.detail,
                "bytes": r.size,
                "ts": format_ts(now),
            },
        )

    def _dead_letter(self, r: Rejection, payload: bytes, now: float) -> None:
        # Off the loop, capped per source and in total (gateway/edge/deadletter.py).
        if not self.deadletters.put(DeadLetter(now, r.topic, r.reason, r.detail, payload)):
            self.counters["deadletter_errors"] += 1

    def _spawn(self, coro: Awaitable[Any]) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)  # a strong reference: the loop keeps only weak ones
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            # An SOS that failed must be loud (no PHI: the type and the counter only).
            self.counters["sos_task_errors"] += 1
            log.error("SOS task failed: %s", type(task.exception()).__name__)

    async def finish_sos_tasks(self) -> None:
        if self.tasks:
            await asyncio.wait(self.tasks, timeout=10)


# What the edge validator returns -> its handler (the validator maps each topic of the
# contract's table to one of these types).
_Route = Callable[[Router, Any, bytes], Awaitable[asyncio.Future[Any] | None]]
_ROUTES: dict[type, _Route] = {
    Rejection: Router._route_rejection,
    Reading: Router._route_reading,
    SosIn: Router._route_sos,
    WatchAck: Router._route_ack,
    StatusIn: Router._route_status,
    IntentIn: Router._route_intent,
}
