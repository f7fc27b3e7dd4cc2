"""The running gateway: components with start()/stop(), stopped in reverse order.

MQTT in -> validate -> monitor -> events (bus) -> (SOS playbooks | escalation) -> tools ->
notifications / storage. The agents side (SOS playbooks) is attached by healthgw.wiring, the
single place where gateway/ meets agents/."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gateway.alert_questions import TYPES as QUESTION_TYPES
from gateway.alert_questions import AlertQuestions
from gateway.bus import EventBus
from gateway.clock import Clock, SystemClock
from gateway.contract import (
    GATEWAY_EVENT_TYPES,
    GATEWAY_SUBSCRIPTIONS,
    EventType,
    events_topic,
    format_ts,
    gateway_events_topic,
    rejected_topic,
    reply_topic,
)
from gateway.db import Database
from gateway.deadletter import DeadLetter, DeadLetterBox, DeadLetterLimits
from gateway.errors import StorageError
from gateway.escalation import ContactNotifier, EscalationWatcher
from gateway.ha_discovery import HomeAssistantDiscovery
from gateway.household import Household
from gateway.metrics import LatencyHistogram
from gateway.model import Event, Reading
from gateway.monitor.engine import Monitor
from gateway.mqtt import MqttLink
from gateway.notify.dispatcher import TextDispatcher
from gateway.notify.sms import OutboxSender, make_sender
from gateway.person_state import URGENT_EVENTS, PersonStatePublisher
from gateway.ports import ChatHandler, LadderPort, MedicationPort, ReportPort, SosHandler
from gateway.retention import Retention, register_gateway
from gateway.settings import Settings
from gateway.sharding import Shard
from gateway.store import Store
from gateway.supervise import Supervisor
from gateway.tsdb.outbox import Outbox
from gateway.tsdb.writer import (
    InfluxSink,
    TimeSeriesWriter,
    gateway_line,
    make_reading_line,
    ranges_lines,
)
from gateway.validate import AckIn, Deduper, EdgeValidator, IntentIn, Rejection, SosIn, StatusIn

log = logging.getLogger(__name__)

SOS_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# Columns of a stored reading that rebuild a Reading (backfill into the time series).
_READING_KEYS = (
    "person",
    "device",
    "ts",
    "seq",
    *(
        f
        for f in Reading.__dataclass_fields__
        if f not in ("person", "device", "ts", "seq", "received_at")
    ),
)

EventHook = Callable[[Event], Awaitable[None] | None]


class _NoSos:
    """Until wiring attaches the playbooks: refuse loudly rather than pretend."""

    async def start(
        self, person: str, *, device: str | None, location: tuple[float, float] | None, trigger: str
    ) -> bool:
        log.error("hard SOS requested but no SOS handler is attached")
        return False

    async def end(self, person: str, *, device: str | None, trigger: str) -> bool:
        return False


URGENT_HOLD_S = 2.0  # the longest vitals wait for an SOS's first text


class Gateway:
    def __init__(
        self,
        settings: Settings,
        household: Household,
        *,
        clock: Clock | None = None,
        shard: Shard | None = None,
    ) -> None:
        self.settings = settings
        self.household = household
        # Scale-out: `household` is already this shard's part (gateway/sharding.py).
        self.shard = shard
        self.clock: Clock = clock or SystemClock()
        data = Path(settings.data_dir)
        data.mkdir(parents=True, exist_ok=True)
        # Everything below holds PHI: owner-only, whatever the umask was.
        with contextlib.suppress(OSError):
            data.chmod(0o700)
        self.data_dir = data
        self.db = Database(data / "healthgw.db")
        # The SOS journal and the text queue live in their own file, so an SOS's durable
        # writes never queue behind the readings writer's batch transactions.
        self.safety_db = Database(data / "safety.db")
        self.store = Store(
            self.db,
            spill_dir=data / "spill",
            retention_days=settings.retention_days,
            queue_size=settings.store_queue_size,
        )
        self.store.on_state = self._on_store_state
        self._store_failing_at: float | None = None
        self.bus = EventBus()
        # Time series for the family's Grafana (optional): off the hot path, with a disk outbox.
        self.tsdb: TimeSeriesWriter | None = None
        if settings.influx_url is not None:
            token = settings.influx_token.get_secret_value() if settings.influx_token else ""
            self.tsdb = TimeSeriesWriter(
                InfluxSink(
                    str(settings.influx_url).rstrip("/"),
                    settings.influx_org,
                    settings.influx_bucket,
                    token,
                    settings.influx_timeout_s,
                ),
                Outbox(data / "outbox", int(settings.influx_outbox_max_mb * 1024 * 1024)),
                batch_size=settings.influx_batch_size,
                flush_s=settings.influx_flush_s,
                degraded_after_s=settings.influx_degraded_after_s,
                alarm_pct=settings.influx_outbox_alarm_pct,
                on_event=self._on_tsdb_event,
                stop_timeout_s=settings.influx_timeout_s + 5,
            )
            self.tsdb.backfill = self._tsdb_backfill
        sender = make_sender(settings, data)
        self.texts = TextDispatcher(self.safety_db, sender, on_event=self._on_text_event)
        # Background work is restarted when it dies, and says so (gateway/supervise.py).
        self.supervisor = Supervisor(self.emit, now=self.clock.now)
        # QoS 1 messages are acknowledged to the broker once the store has them: a crash
        # loses nothing the broker was told was delivered (gateway/mqtt_acks.py).
        self.link = MqttLink(
            settings,
            self.on_message if shard is None else shard.guard(self.on_message),
            GATEWAY_SUBSCRIPTIONS if shard is None else shard.subscriptions,
            on_event=self.supervisor.event,
            durability=self.store,
            hold=self.urgent,
        )
        self.validator = EdgeValidator(
            household, self.clock, max_age_s=settings.retention_days * 86400
        )
        self.dedupe = Deduper()
        self.monitor = Monitor(household, settings, clock=self.clock, data_dir=data)
        # The retained per-person picture (health/{person}/state) and Home Assistant's
        # discovery configs that read it. Discovery is always built: with the prefix off it
        # removes what an earlier run published.
        self.person_state = PersonStatePublisher(
            household, self.monitor, self.store.latest, self.link.publish, self.clock
        )
        self.ha_discovery = HomeAssistantDiscovery(
            household,
            self.link.publish,
            gateway_id=settings.gateway_id,
            data_dir=data,
            prefix=settings.ha_discovery_prefix,
        )
        self.sos: SosHandler = _NoSos()
        self.chat: ChatHandler | None = None
        self.meds: MedicationPort | None = None
        self.reports: ReportPort | None = None
        self.ladder: LadderPort | None = None
        self._memory_view: Callable[[str], dict[str, Any]] | None = None
        self.contacts: ContactNotifier | None = None
        self.escalation = EscalationWatcher(
            self.safety_db,
            self.link,
            _SosProxy(self),
            self.emit,
            self.clock,
            contacts=_ContactsProxy(self),
            after_contacts=lambda person, ids: self.monitor.remind_later(
                person, alert_ids=ids, after_s=settings.ok_snooze_s
            ),
            window_s=settings.escalation_window_s,
            fall_window_s=settings.fall_window_s,
        )
        self.counters: Counter[str] = Counter()
        # Reading handling time (validate is before; monitor + store enqueue here).
        self.reading_latency = LatencyHistogram()
        # Hard SOS received -> first text handed to the provider (per SOS).
        self.sos_latency = LatencyHistogram(SOS_BUCKETS)
        self._sos_t0: dict[str, float] = {}
        self.tool_metrics: Callable[[], Mapping[str, Mapping[str, float]]] | None = None
        self.rejects: Counter[str] = Counter()
        self.started_at = 0.0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stoppers: list[Callable[[], Awaitable[None]]] = []
        self._before_input: list[Callable[[], Awaitable[Any]]] = []
        self.deadletters = DeadLetterBox(
            data / "deadletter",
            DeadLetterLimits(
                max_total_bytes=settings.deadletter_max_mb << 20,
                source_daily_bytes=settings.deadletter_source_daily_kb << 10,
                retention_days=settings.retention_days,
            ),
        )
        self.retention = Retention(settings.retention_days)
        register_gateway(self.retention, db=self.db, safety_db=self.safety_db, data_dir=data)
        self.retention.add_hook("deadletter", lambda _cutoff: self.deadletters.prune(time.time()))
        if isinstance(sender, OutboxSender):
            self.retention.add_hook("outbox.jsonl", sender.prune)
        self.api_token = self._api_token()
        self._hooks: list[EventHook] = []
        self.bus.subscribe("store", self.store.add_event)
        self.bus.subscribe("mqtt-events", self._publish_event)
        self.questions = AlertQuestions(self.escalation, self.monitor)
        self.bus.subscribe("escalation", self.questions.on_event, types=set(QUESTION_TYPES))
        self.bus.subscribe("hooks", self._run_hooks)
        self.bus.subscribe(
            "person-state", self.person_state.on_event, types={str(t) for t in URGENT_EVENTS}
        )
        if self.tsdb is not None:
            self.bus.subscribe("tsdb", self.tsdb.add_event)

    # --- wiring ---------------------------------------------------------------------------
    def attach_sos(self, handler: SosHandler) -> None:
        self.sos = handler

    def attach_chat(self, handler: ChatHandler) -> None:
        self.chat = handler

    def attach_meds(self, port: MedicationPort) -> None:
        self.meds = port

    def attach_reports(self, port: ReportPort) -> None:
        self.reports = port

    def attach_ladder(self, port: LadderPort) -> None:
        self.ladder = port

    def attach_contacts(self, notifier: ContactNotifier) -> None:
        """Who texts the emergency contacts when an alert's "are you OK?" goes unanswered."""
        self.contacts = notifier

    def attach_memory(self, view: Callable[[str], dict[str, Any]]) -> None:
        """The assistant's long-term memory of a person (complaints, bookings, history)."""
        self._memory_view = view

    def add_event_hook(self, hook: EventHook) -> None:
        """Extra observers (demo screen, websocket feed). Failures are logged, never fatal."""
        self._hooks.append(hook)

    def on_stop(self, fn: Callable[[], Awaitable[None]]) -> None:
        self._stoppers.append(fn)

    def before_input(self, fn: Callable[[], Awaitable[Any]]) -> None:
        """Run at start, after storage, texts and the bus are up, before MQTT input flows."""
        self._before_input.append(fn)

    def _api_token(self) -> str:
        # Checks every API token (a weak one stops the gateway: WeakTokenError) and makes
        # the admin one when none is configured, private to the hub's owner.
        from gateway.api.tokens import admin_token

        return admin_token(self.settings, self.data_dir)

    # --- lifecycle ------------------------------------------------------------------------
    async def start(self, *, offline: bool = False) -> None:
        """Start every part in order. `offline`: no broker link and no background timers;
        the caller feeds `on_message` and drives time with `tick()` (the clinical scenario
        runner does, with a hand-moved clock)."""
        self.started_at = self.clock.now()
        self.store.start()
        self.deadletters.start()
        if self.tsdb is not None:
            self.tsdb.start()
        self.monitor.seed_latest(self.store.latest())
        self.texts.start()
        await self.bus.start()
        await self.monitor.start()
        self._loop = asyncio.get_running_loop()
        self.supervisor.bind(self._loop)
        for fn in self._before_input:
            await fn()
        await self.questions.ask_what_a_crash_left_unasked()
        if offline:
            return
        # Prompts a restart interrupted resume their countdowns before input flows.
        await self.escalation.start()
        await self.link.start()
        await self.ha_discovery.start()
        await self.person_state.start()
        sup = self.supervisor
        sup.task("monitor_tick", self._tick_loop, critical=True, backoff=(0.5, 1, 2, 5))
        sup.task("housekeeping", self._housekeeping, critical=False, backoff=(60, 300, 1800))
        sup.watch("mqtt_link", self.link.running, self.link.start, critical=True)
        # running(): the loop is alive *and* its ticks succeed (3 failures in a row: down).
        sup.watch("escalation", self.escalation.running, self.escalation.start, critical=True)
        sup.watch("person_state", self.person_state.alive, self.person_state.revive, critical=False)
        sup.watch("texts", self.texts.alive, self.texts.revive, critical=True)
        # The store's writer stops only when the disk keeps failing: shown, not restarted.
        sup.watch("store", self.store.alive, None, critical=True)
        sup.watch("deadletter", self.deadletters.is_alive, self.deadletters.revive, critical=False)
        # The bus carries SOS and alert events to the playbooks: critical.
        sup.watch("event_bus", self.bus.alive, self.bus.revive, critical=True)
        if self.tsdb is not None:
            sup.task("tsdb_health", self._tsdb_health, critical=False)
            sup.watch("tsdb_writer", self.tsdb.alive, self.tsdb.revive, critical=False)
        await sup.start()

    async def stop(self) -> None:
        await self.supervisor.stop()  # first: what follows stops its parts on purpose
        await self.person_state.stop()
        await self.ha_discovery.stop()
        for fn in reversed(self._stoppers):
            try:
                await fn()
            except Exception:
                log.exception("stop hook failed")
        await self.escalation.stop()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=10)
        await self.link.stop()
        await self.monitor.stop()
        await self.bus.stop()
        self.texts.stop(timeout=10)
        self.deadletters.stop()
        if self.tsdb is not None:
            self.tsdb.stop()
        self.store.stop()
        self.db.close()
        self.safety_db.close()

    def components(self) -> dict[str, bool]:
        """Every supervised part, up or not (critical or not), for /readyz to show."""
        return {name: bool(c["up"]) for name, c in self.supervisor.stats().items()}

    def texts_mode(self) -> str:
        """/readyz shows it: "offline outbox" means no text, not even an SOS, leaves the house."""
        return self.texts.mode

    def ready(self) -> dict[str, bool]:
        return {
            **self.supervisor.ready(),  # safety-critical parts: mqtt_link, monitor_tick, ...
            "broker": self.link.connected.is_set(),
            "store": self.store.alive(),
            "texts": self.texts.alive(),
            "sos_handler": not isinstance(self.sos, _NoSos),
            "escalation": self.escalation.running(),
        }

    # --- inbound --------------------------------------------------------------------------
    async def on_message(self, topic: str, payload: bytes) -> asyncio.Future[Any] | None:
        """Handle one inbound message. For an SOS, returns the playbook's task: the link
        acknowledges the message to the broker when it ends (gateway/mqtt_acks.py), so a
        crash before the SOS was taken in hand gets it redelivered."""
        self.counters["received"] += 1
        result = self.validator.validate(topic, payload)
        if isinstance(result, Rejection):
            await self._reject(result, payload)
        elif isinstance(result, Reading):
            if self.dedupe.is_duplicate(result):
                self.counters["duplicates"] += 1
                return None
            await self._on_reading(result)
        elif isinstance(result, SosIn):
            self.counters[f"sos_{result.payload.action}"] += 1
            if result.payload.action == "start":
                # Now, before the playbook's task runs: from here vitals wait (urgent()).
                self._mark_sos(result.person)
            return self._spawn(self._on_sos(result))
        elif isinstance(result, AckIn):
            self.counters["acks"] += 1
            answer = result.payload.answer
            if result.payload.prompt_id == "sos" and self.ladder is not None:
                # "I'm helping" for an open SOS (a family member's app, or the wearer).
                await self.ladder.ack(result.person, f"mqtt:{result.device}")
                return None
            # A dose answer (taken / snooze / skip) is not an "are you OK?" answer.
            if (
                answer is not None
                and self.meds is not None
                and await self.meds.on_answer(result.person, result.payload.prompt_id, answer)
            ):
                self.counters["dose_answers"] += 1
                return None
            alert_ids = await self.escalation.on_ack(
                result.person,
                ok=result.payload.ok,
                prompt_id=result.payload.prompt_id,
                device=result.device,
            )
            if alert_ids is not None:
                self.monitor.answered(
                    result.person,
                    ok=result.payload.ok,
                    alert_ids=alert_ids,
                    snooze_s=self.settings.ok_snooze_s,
                )
            elif not result.payload.ok:
                # "Not OK" with nothing pending (the question already escalated, expired, or
                # was never asked) is still a person saying they need help.
                await self.escalation.not_ok(result.person, device=result.device)
        elif isinstance(result, StatusIn):
            for ev in self.monitor.device_status(result.person, result.device, result.online):
                await self.emit(ev)
        elif isinstance(result, IntentIn):
            self.counters["intents"] += 1
            await self.chat_say(result.person, result.payload.text, result.payload.session_id)
        return None

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
        # Off the loop, capped per source and in total (gateway/deadletter.py).
        if not self.deadletters.put(DeadLetter(now, r.topic, r.reason, r.detail, payload)):
            self.counters["deadletter_errors"] += 1

    # --- events ---------------------------------------------------------------------------
    async def emit(self, event: Event) -> None:
        self.counters[f"event_{event.type}"] += 1
        await self.bus.publish(event)

    async def _publish_event(self, event: Event) -> None:
        if event.type in GATEWAY_EVENT_TYPES or not event.person:
            topic = gateway_events_topic(self.settings.gateway_id)
        else:
            topic = events_topic(event.person)
        # Waits for outbound room only briefly (gateway/mqtt_outbound.py): a copy dropped while
        # the broker is away is counted and announced; the event itself is in the store.
        await self.link.publish(topic, event.to_payload())

    async def _run_hooks(self, event: Event) -> None:
        for hook in self._hooks:
            try:
                r = hook(event)
                if r is not None:
                    await r
            except Exception:
                log.exception("event hook failed")

    def _on_text_event(self, kind: str, data: Mapping[str, Any]) -> None:
        """Called from dispatcher worker threads: hop onto the loop."""
        person = str(data.get("person", ""))
        if kind == "notification_sent" and str(data.get("purpose", "")).startswith("sos:"):
            t0 = self._sos_t0.pop(person, None)
            if t0 is not None:
                self._sos_first_text(time.perf_counter() - t0)
        ev = Event(EventType(kind), person, self.clock.now(), dict(data))
        loop = self._loop
        if loop is not None and not loop.is_closed():
            asyncio.run_coroutine_threadsafe(self.emit(ev), loop)

    _loop: asyncio.AbstractEventLoop | None = None

    # --- time series ----------------------------------------------------------------------
    def _on_store_state(self, ok: bool, reason: str) -> None:
        """From the store's writer thread: a failing disk is announced, and its end."""
        now = time.monotonic()
        if not ok:
            self._store_failing_at = now
            kind, data = EventType.MONITORING_DEGRADED, {"sink": "store", "reason": reason,
                                                         "active": True}  # fmt: skip
        else:
            since = self._store_failing_at or now
            kind = EventType.MONITORING_RECOVERED
            data = {"sink": "store", "degraded_s": round(now - since, 1), "active": False,
                    "lost": self.store.stats().get("lost", 0)}  # fmt: skip
        self._on_tsdb_event(kind, data)

    def _on_tsdb_event(self, kind: EventType, data: dict[str, Any]) -> None:
        """From the writer thread: hub events (person "") go through the bus like any other."""
        ev = Event(kind, "", self.clock.now(), data)
        loop = self._loop
        if loop is not None and not loop.is_closed():
            asyncio.run_coroutine_threadsafe(self.emit(ev), loop)

    def urgent(self) -> bool:
        """An SOS started within URGENT_HOLD_S has not texted yet: the link lets vitals wait
        (gateway/mqtt_inbound.py Dispatcher) so nothing competes with that text."""
        if not self._sos_t0:
            return False
        now = time.perf_counter()
        return any(now - t0 < URGENT_HOLD_S for t0 in list(self._sos_t0.values()))

    def _mark_sos(self, person: str) -> None:
        """Start the SOS latency clock; a press during an SOS already timing keeps the first,
        and a mark left by an SOS that never texted (5 min) is replaced."""
        now = time.perf_counter()
        old = self._sos_t0.get(person)
        if old is None or now - old > 300:
            self._sos_t0[person] = now

    def _sos_first_text(self, seconds: float) -> None:
        self.sos_latency.observe(seconds)
        if self.tsdb is not None:
            line = gateway_line(
                self.settings.gateway_id,
                {"sos_latency_ms": round(seconds * 1000, 2)},
                self.clock.now(),
            )
            self.tsdb.add_line(line)

    def _tsdb_backfill(self, since: float, until: float) -> list[str]:
        """Readings of a window the outbox refused (it was full), from the local store.
        Runs on the tsdb writer thread, so it may wait for the store's own writer: the
        window's newest readings may still be queued there, not yet committed."""
        self.store.flush(timeout=5)
        lines: list[str] = []
        for p in self.household.persons:
            for row in self.store.readings(p.id, since=since, until=until + 0.001, limit=10**7):
                r = Reading(
                    **{k: row[k] for k in _READING_KEYS},
                    received_at=float(row["received_at"]),
                )
                ln = make_reading_line(
                    r,
                    news2_total=row["news2_total"],
                    news2_level=row["news2_level"],
                    anomaly=row["anomaly"],
                    flagged=bool(row["flags"]),
                    open_alerts=None,  # not stored: leave the field InfluxDB already has
                )
                if ln is not None:
                    lines.append(ln)
        return lines

    async def _tsdb_health(self) -> None:
        """The hub's own health points, and each person's normal ranges (hourly)."""
        assert self.tsdb is not None
        interval = self.settings.influx_health_interval_s
        last: tuple[float, int, int] | None = None
        next_ranges = 0.0
        while True:
            try:
                now = self.clock.now()
                if now >= next_ranges:
                    for p in self.household.persons:
                        for ln in ranges_lines(p.id, self.monitor.normal_ranges(p.id), now):
                            self.tsdb.add_line(ln)
                    next_ranges = now + 3600
                readings = self.counters["readings"]
                rejected = self.counters["rejected"]
                fields: dict[str, object] = {
                    "messages_total": self.counters["received"],
                    "readings_total": readings,
                    "rejected_total": rejected,
                    "outbox_points": self.tsdb.outbox.points,
                    "outbox_bytes": self.tsdb.outbox.size_bytes,
                    "queue_mqtt_in": self.link.inbound_depth(),
                    "queue_store": self.store.stats().get("queue", 0),
                    "texts_sent": self.texts.stats().get("sent", 0),
                    "texts_failed": self.texts.stats().get("failed", 0),
                    "alerts_total": self.counters["event_soft_sos"],
                }
                if last is not None and now > last[0]:
                    dt = now - last[0]
                    fields["ingest_rate"] = (readings - last[1]) / dt
                    fields["reject_rate"] = (rejected - last[2]) / dt
                last = (now, readings, rejected)
                self.tsdb.add_line(gateway_line(self.settings.gateway_id, fields, now))
            except Exception:
                log.exception("tsdb health point failed")
            await asyncio.sleep(interval)

    def _spawn(self, coro: Awaitable[Any]) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)  # a strong reference: the loop keeps only weak ones
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            # An SOS that failed must be loud (no PHI: the type and the counter only).
            self.counters["sos_task_errors"] += 1
            log.error("SOS task failed: %s", type(task.exception()).__name__)

    async def tick(self) -> None:
        """One second of housekeeping on the monitor's clock: stale devices, urgent alerts
        whose readings stopped, snoozes that ended, prompt deadlines."""
        for ev in self.monitor.tick():
            await self.emit(ev)
        await self.escalation.tick()
        if self.monitor.dirty:
            # Open alerts and snoozes survive a crash, written off the loop.
            await asyncio.to_thread(self.monitor.write_state, self.monitor.state_blob())

    async def _tick_loop(self) -> None:
        self._loop = asyncio.get_running_loop()
        while True:  # a failure ends the loop: the supervisor counts it and restarts it
            await asyncio.sleep(1.0)
            for ev in self.monitor.tick():
                await self.emit(ev)
            if self.monitor.dirty:
                # Open alerts and snoozes survive a crash, written off the loop.
                await asyncio.to_thread(self.monitor.write_state, self.monitor.state_blob())

    async def _housekeeping(self) -> None:
        while True:
            try:
                await asyncio.to_thread(self.store.prune, self.clock.now())
                await asyncio.to_thread(self.retention.sweep, self.clock.now())
                # (monitor state is saved by the tick loop within a second of any change)
                await self.monitor.refit_models(self.store.clean_history)
            except Exception:
                log.exception("housekeeping failed")
            await asyncio.sleep(min(self.settings.anomaly_refit_s, 6 * 3600))

    # --- Backend (API) --------------------------------------------------------------------
    def assess(self, body: Mapping[str, Any]) -> dict[str, Any]:
        from gateway.assess import assess_request

        return assess_request(body, self.household)

    def person_view(self, person_id: str) -> dict[str, Any]:
        p = self.household.person(person_id)
        assert p is not None
        latest = self.store.latest()
        devices = []
        for d in p.devices:
            row = latest.get((p.id, d.id))
            devices.append(
                {
                    "id": d.id,
                    "kind": d.kind,
                    "state": self.monitor.device_state(p.id, d.id),
                    "last_seen": row.get("last_seen") if row else None,
                    "latest": row,
                }
            )
        return {
            "id": p.id,
            "name": p.name,
            "devices": devices,
            "vitals": self.monitor.latest_vitals(p.id),
            "news2": self.monitor.latest_news2(p.id),
            "meows": self.monitor.latest_meows(p.id),
            "open_alerts": self.monitor.open_alerts(p.id),
            "pending_prompts": self.escalation.pending(p.id),
        }

    def vitals_summary(self, person_id: str) -> dict[str, Any]:
        """Latest vitals and NEWS2 (the assistant's long-term memory reads this)."""
        return {
            "latest": self.monitor.latest_vitals(person_id),
            "news2": self.monitor.latest_news2(person_id),
            "open_alerts": len(self.monitor.open_alerts(person_id)),
        }

    def device_views(self) -> list[dict[str, Any]]:
        latest = self.store.latest()
        out = []
        for p in self.household.persons:
            for d in p.devices:
                row = latest.get((p.id, d.id))
                out.append(
                    {
                        "person": p.id,
                        "device": d.id,
                        "kind": d.kind,
                        "interval_s": d.interval_s,
                        "state": self.monitor.device_state(p.id, d.id),
                        "last_seen": row.get("last_seen") if row else None,
                        "battery": row.get("battery") if row else None,
                    }
                )
        return out

    def events(
        self,
        *,
        person: str | None,
        types: Sequence[str] | None,
        since: float | None,
        until: float | None,
        limit: int,
    ) -> list[dict[str, Any]]:
        return self.store.events(person=person, types=types, since=since, until=until, limit=limit)

    def readings(
        self, person: str, *, since: float | None, until: float | None, limit: int
    ) -> list[dict[str, Any]]:
        return self.store.readings(person, since=since, until=until, limit=limit)

    def trajectories(
        self, *, person: str | None, category: str | None, limit: int
    ) -> list[dict[str, Any]]:
        return self.store.trajectories(person=person, category=category, limit=limit)

    def trajectory(self, run_id: str) -> dict[str, Any] | None:
        return self.store.trajectory(run_id)

    async def chat_say(self, person: str, text: str, session_id: str | None) -> str | None:
        """One user message for the assistant. Returns the session id, or None when the
        assistant is not running or busy (the user is told on the reply topic)."""
        why = "The assistant is not enabled on this hub."
        if self.chat is not None:
            try:
                return await self.chat.say(person, text, session_id)
            except RuntimeError:
                self.counters["intents_rejected"] += 1
                why = "The assistant is busy right now. Please try again in a minute."
        await self.link.publish(
            reply_topic(person),
            {"text": why, "session_id": session_id or "none", "expects_answer": False},
        )
        return None

    def chat_listen(
        self, person: str, fn: Callable[[dict[str, Any]], None]
    ) -> Callable[[], None] | None:
        return self.chat.listen(person, fn) if self.chat is not None else None

    def memory(self, person: str) -> dict[str, Any] | None:
        return self._memory_view(person) if self._memory_view is not None else None

    def text_delivery(self, provider_id: str, status: str) -> bool:
        return self.texts.record_delivery(provider_id, status)

    def chat_open(self, session_id: str) -> bool:
        return self.chat is not None and self.chat.session_open(session_id)

    async def clear_alerts(self, person: str, by: str) -> int:
        """The explicit all-clear: someone checked on the person."""
        events = self.monitor.all_clear(person, by)
        self.escalation.resolve(person)  # nothing left to escalate: someone is with them
        for ev in events:
            await self.emit(ev)
        return len(events)

    async def sos_start(self, person: str) -> bool:
        self._mark_sos(person)
        return await self.sos.start(person, device=None, location=None, trigger="api")

    async def sos_end(self, person: str) -> bool:
        return await self.sos.end(person, device=None, trigger="api")

    def stats(self) -> dict[str, Any]:
        return {
            "uptime_s": round(self.clock.now() - self.started_at, 1),
            "persons": len(self.household.persons),
            "shard": self.shard.stats() if self.shard is not None else None,
            "counters": dict(self.counters),
            "rejects_by_reason": dict(self.rejects),
            "duplicates": self.dedupe.duplicates,
            "queues": {
                "mqtt_in": self.link.inbound_depth(),
                "mqtt_out": self.link.outbound_depth(),
                **({"tsdb": self.tsdb.queue_depth()} if self.tsdb is not None else {}),
                **{f"bus_{k}": v for k, v in self.bus.depths().items()},
            },
            "store": self.store.stats(),
            "texts": self.texts.stats(),
            "deadletter": dict(self.deadletters.stats),
            "retention": dict(self.retention.stats),
            "tsdb": self.tsdb.stats() if self.tsdb is not None else None,
            "escalations": self.escalation.escalations,
            "monitor": dict(self.monitor.counters),
            "assistant": self.chat.stats() if self.chat is not None else None,
            "mqtt": self.link.stats(),
            "components": self.supervisor.stats(),
        }


class _ContactsProxy:
    """Lets the escalation watcher reach whichever contact notifier is attached later."""

    def __init__(self, gw: Gateway) -> None:
        self._gw = gw

    async def unanswered(self, person: str, *, prompt_id: str, reason: str, summary: str) -> bool:
        if self._gw.contacts is None:
            log.error("no contact notifier attached: unanswered alert not texted")
            return False
        return await self._gw.contacts.unanswered(
            person, prompt_id=prompt_id, reason=reason, summary=summary
        )


class _SosProxy:
    """Lets the escalation watcher reach whichever SOS handler is attached later."""

    def __init__(self, gw: Gateway) -> None:
        self._gw = gw

    async def start(
        self, person: str, *, device: str | None, location: tuple[float, float] | None, trigger: str
    ) -> bool:
        return await self._gw.sos.start(person, device=device, location=location, trigger=trigger)

    async def end(self, person: str, *, device: str | None, trigger: str) -> bool:
        return await self._gw.sos.end(person, device=device, trigger=trigger)
