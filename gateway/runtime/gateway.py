"""The running gateway, composed of explicit parts: components with start()/stop(), started
in order on one AsyncExitStack and stopped in reverse.

MQTT in -> validate -> route (routing.Router) -> monitor -> events (bus) -> (SOS playbooks |
escalation) -> tools -> notifications / storage. The API reads through api_backend.ApiBackend;
the time series is fed by tsdb_feed.TsdbFeed. The agents side (SOS playbooks, assistant,
medication) is handed in whole at construction as `Extensions` (gateway/runtime/extensions.py)
by healthgw.assembly.hub, the single place where gateway/ meets agents/."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from gateway.api.tokens import admin_token
from gateway.base.bus import EventBus
from gateway.base.clock import Clock, SystemClock
from gateway.base.db import Database
from gateway.base.metrics import LatencyHistogram
from gateway.base.ports import ReportPort
from gateway.base.retention import Retention, register_gateway
from gateway.base.settings import Settings
from gateway.base.supervise import Supervisor
from gateway.contract.topics import (
    GATEWAY_EVENT_TYPES,
    GATEWAY_SUBSCRIPTIONS,
    EventType,
    events_topic,
    gateway_events_topic,
)
from gateway.contract.values import Event
from gateway.edge.deadletter import DeadLetterBox, DeadLetterLimits
from gateway.edge.validate import Deduper, EdgeValidator
from gateway.escalation.from_alerts import TYPES as QUESTION_TYPES
from gateway.escalation.from_alerts import AlertQuestions
from gateway.escalation.watcher import EscalationWatcher
from gateway.ha.discovery import HomeAssistantDiscovery
from gateway.household.model import Household
from gateway.household.state import URGENT_EVENTS, PersonStatePublisher
from gateway.monitor.engine import Monitor
from gateway.mqtt.link import MqttLink
from gateway.notify.dispatcher import TextDispatcher
from gateway.notify.sms import OutboxSender, make_sender
from gateway.runtime.api_backend import ApiBackend
from gateway.runtime.extensions import EventHook, EventHooks, Extensions, Part, Step, enter
from gateway.runtime.routing import Router, SosClock, _NoSos
from gateway.runtime.sharding import Shard
from gateway.runtime.tsdb_feed import HealthPoints, TsdbFeed
from gateway.store import Store

log = logging.getLogger(__name__)


class Gateway:
    """Holds its parts as attributes: `router` (inbound messages), `api` (what the REST API
    reads, gateway/api/deps.py Backend), `feed` (the time series), the store, the link, the
    monitor, the escalation watcher and the rest. Each part gets what it uses in its
    constructor; the Gateway only builds them in order and runs their lifecycle."""

    def __init__(
        self,
        settings: Settings,
        household: Household,
        *,
        clock: Clock | None = None,
        shard: Shard | None = None,
        extend: Callable[[Gateway], Extensions] | None = None,
    ) -> None:
        self.settings = settings
        self.household = household
        # Scale-out: `household` is already this shard's part (gateway/runtime/sharding.py).
        self.shard = shard
        self.clock: Clock = clock or SystemClock()
        data = Path(settings.data_dir)
        data.mkdir(parents=True, exist_ok=True)
        # Everything below holds PHI: owner-only, whatever the umask was.
        with contextlib.suppress(OSError):
            data.chmod(0o700)
        self.data_dir = data
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        # Until start(online): nothing else ticks the prompt deadlines (see tick()).
        self._ticks_escalation = True
        self.counters: Counter[str] = Counter()
        self.rejects: Counter[str] = Counter()
        # Reading handling time (validate is before; monitor + store enqueue here).
        self.reading_latency = LatencyHistogram()
        self.hooks = EventHooks()
        self.db = Database(data / "healthgw.db")
        # The SOS journal and text queue's own file: never behind the readings writer's batches,
        # checkpointed on a thread of its own, not in a commit on the loop (gateway/base/db.py).
        self.safety_db = Database(data / "safety.db", background_checkpoint=True)
        self.store = Store(
            self.db,
            spill_dir=data / "spill",
            retention_days=settings.retention_days,
            queue_size=settings.store_queue_size,
            on_state=self._on_store_state,
        )
        self._store_failing_at: float | None = None
        self.bus = EventBus()
        # Time series for the family's Grafana (optional): off the hot path, with a disk outbox.
        self.feed = TsdbFeed(
            settings, data, household, self.store, self.clock, self.emit_from_thread
        )
        self.tsdb = self.feed.writer
        self.sos_clock = SosClock(self.tsdb, settings.gateway_id, self.clock)
        sender = make_sender(settings, data)
        # On the gateway's clock: a replay on a virtual clock reads the queue's times back.
        self.texts = TextDispatcher(self.safety_db, sender, on_event=self._on_text_event,
                                    clock=self.clock.now)  # fmt: skip
        # Background work is restarted when it dies, and says so (gateway/base/supervise.py).
        self.supervisor = Supervisor(self.emit, now=self.clock.now)
        # QoS 1 messages are acknowledged to the broker once the store has them: a crash
        # loses nothing the broker was told was delivered (gateway/mqtt/acks.py).
        self.link = MqttLink(
            settings,
            self.on_message if shard is None else shard.guard(self.on_message),
            GATEWAY_SUBSCRIPTIONS if shard is None else shard.subscriptions,
            on_event=self.supervisor.event,
            durability=self.store,
            hold=self.sos_clock.urgent,
        )
        self.validator = EdgeValidator(
            household, self.clock, max_age_s=settings.retention_days * 86400
        )
        self.dedupe = Deduper()
        self.monitor = Monitor(
            household, settings, clock=self.clock, data_dir=data, sos_open=self._sos_open
        )
        self.ha_discovery = HomeAssistantDiscovery(
            household,
            self.link.publish,
            gateway_id=settings.gateway_id,
            data_dir=data,
            prefix=settings.ha_discovery_prefix,
        )
        # Their retained state is another instance's now: never cleared from here.
        self.ha_discovery.foreign_persons = shard.others if shard is not None else frozenset()
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
        # Checks every API token (a weak one stops the gateway: WeakTokenError) and makes
        # the admin one when none is configured, private to the hub's owner.
        self.api_token = admin_token(settings, data)
        self.bus.subscribe("store", self.store.add_event)
        self.bus.subscribe("mqtt-events", self._publish_event)
        self.bus.subscribe("hooks", self.hooks.run)
        if self.tsdb is not None:
            self.bus.subscribe("tsdb", self.tsdb.add_event)
        # The agents side plugs in here, whole (healthgw.assembly.hub): its ports and its parts.
        ext = extend(self) if extend is not None else Extensions()
        self.sos = ext.sos or _NoSos()
        self._sos_open_port = ext.sos_open
        self.ladder = ext.ladder
        self.meds = ext.meds
        self.reports: ReportPort | None = ext.reports
        self._extension_parts: tuple[Part, ...] = tuple(ext.parts)
        # The retained per-person picture (health/{person}/state) that Home Assistant's
        # discovery configs read.
        self.person_state = PersonStatePublisher(
            household,
            self.monitor,
            self.store.latest,
            self.link.publish,
            self.clock,
            sos_open=ext.sos_open,
        )
        self.escalation = EscalationWatcher(
            self.safety_db,
            self.link,
            self.sos,
            self.emit,
            self.clock,
            contacts=ext.contacts,
            after_contacts=lambda person, ids: self.monitor.remind_later(
                person, alert_ids=ids, after_s=settings.ok_snooze_s
            ),
            window_s=settings.escalation_window_s,
            fall_window_s=settings.fall_window_s,
        )
        self.questions = AlertQuestions(self.escalation, self.monitor)
        self.bus.subscribe("escalation", self.questions.on_event, types=set(QUESTION_TYPES))
        self.bus.subscribe(
            "person-state", self.person_state.on_event, types={str(t) for t in URGENT_EVENTS}
        )
        self.api = ApiBackend(
            household, self.clock,
            monitor=self.monitor, store=self.store, escalation=self.escalation,
            texts=self.texts, link=self.link, bus=self.bus, supervisor=self.supervisor,
            dedupe=self.dedupe, deadletters=self.deadletters, retention=self.retention,
            tsdb=self.tsdb, shard=shard, hooks=self.hooks, emit=self.emit,
            sos=self.sos, sos_clock=self.sos_clock,
            chat=ext.chat, memory=ext.memory, meds=ext.meds, reports=ext.reports,
            ladder=ext.ladder, tool_metrics=ext.tool_metrics,
            counters=self.counters, rejects=self.rejects, reading_latency=self.reading_latency,
        )  # fmt: skip
        self.router = Router(
            settings, self.clock,
            validator=self.validator, dedupe=self.dedupe, monitor=self.monitor,
            store=self.store, tsdb=self.tsdb, person_state=self.person_state,
            escalation=self.escalation, deadletters=self.deadletters, link=self.link,
            sos_clock=self.sos_clock, emit=self.emit, chat_say=self.api.chat_say,
            sos=self.sos, ladder=ext.ladder, meds=ext.meds,
            counters=self.counters, rejects=self.rejects, reading_latency=self.reading_latency,
        )  # fmt: skip
        self.health_points = None if self.tsdb is None else HealthPoints(
            self.tsdb, settings, household, self.monitor, self.store, self.link, self.texts,
            self.counters, self.clock,
        )  # fmt: skip

    # --- what the outside world calls (the router and the API backend do the work) ---------
    async def on_message(self, topic: str, payload: bytes) -> asyncio.Future[Any] | None:
        """One inbound message (Router.on_message); the link and offline callers feed it."""
        return await self.router.on_message(topic, payload)

    def add_event_hook(self, hook: EventHook) -> None:
        """Extra observers (demo screen, websocket feed). Failures are logged, never fatal."""
        self.hooks.add(hook)

    def ready(self) -> dict[str, bool]:
        return self.api.ready()

    def components(self) -> dict[str, bool]:
        return self.api.components()

    def stats(self) -> dict[str, Any]:
        return self.api.stats()

    def _sos_open(self, person: str) -> bool:  # the agents side's journal says so
        port = getattr(self, "_sos_open_port", None)
        return bool(port(person)) if port is not None else False

    # --- lifecycle ------------------------------------------------------------------------
    async def start(self, *, offline: bool = False) -> None:
        """Start every part in order (`_parts`); `stop()` stops them in reverse. `offline`:
        no broker link and no background timers; the caller feeds `on_message` and drives time
        with `tick()` (the clinical scenario runner does, with a hand-moved clock)."""
        self.api.started_at = self.clock.now()
        self._loop = asyncio.get_running_loop()
        # Running, the escalation watcher's own loop ticks the prompt deadlines (tick()).
        self._ticks_escalation = offline
        self.supervisor.bind(self._loop)
        stack = contextlib.AsyncExitStack()
        try:
            for part in self._parts(offline=offline):
                await enter(stack, part)
        except BaseException:
            await stack.aclose()  # what had started stops again, in reverse
            raise
        self._stack = stack

    async def stop(self) -> None:
        stack, self._stack = self._stack, None
        if stack is None:  # built but never started (or stopped already)
            self._close_databases()
            return
        await stack.aclose()

    def _parts(self, *, offline: bool) -> Iterator[Part]:
        """The start order; stop is its reverse. Storage, texts and the bus first (everything
        after may write, text or emit); the agents' parts before MQTT input flows (unfinished
        SOS runs resume first); the supervisor last, so it stops first and restarts nothing
        that is being stopped on purpose."""
        yield Step("databases", on_stop=self._close_databases)
        yield Step("store", self.store.start, self.store.stop)
        if self.tsdb is not None:
            yield Step("tsdb", self.tsdb.start, self.tsdb.stop)
        yield Step("deadletters", self.deadletters.start, self.deadletters.stop)
        yield Step("seed_latest", lambda: self.monitor.seed_latest(self.store.latest()))
        yield Step("texts", self.texts.start, lambda: self.texts.stop(timeout=10))
        yield Step("bus", self.bus.start, self.bus.stop)
        yield Step("monitor", self.monitor.start, self.monitor.stop)
        # Stops after every part that may still publish (SOS runs, the ladder, replies): the
        # last notifications leave, what was handled is acknowledged, then the goodbye.
        yield Step("mqtt_link", on_stop=self.link.stop)
        yield Step("sos_tasks", on_stop=self.router.finish_sos_tasks)
        yield from self._extension_parts
        yield Step("unasked_questions", self.questions.ask_what_a_crash_left_unasked)
        if offline:
            return
        # Prompts a restart interrupted resume their countdowns before input flows.
        yield Step("escalation", self.escalation.start, self.escalation.stop)
        yield Step("mqtt_input", self.link.start)  # stops with "mqtt_link" above
        yield Step("ha_discovery", self.ha_discovery.start, self.ha_discovery.stop)
        yield Step("person_state", self.person_state.start, self.person_state.stop)
        yield Step("supervisor", self._supervise, self.supervisor.stop)

    async def _supervise(self) -> None:
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
            assert self.health_points is not None
            sup.task("tsdb_health", self.health_points.run, critical=False)
            sup.watch("tsdb_writer", self.tsdb.alive, self.tsdb.revive, critical=False)
        await sup.start()

    def _close_databases(self) -> None:
        self.db.close()
        self.safety_db.close()

    # --- events ---------------------------------------------------------------------------
    async def emit(self, event: Event) -> None:
        self.counters[f"event_{event.type}"] += 1
        await self.bus.publish(event)

    def emit_from_thread(self, event: Event) -> None:
        """From a worker thread (texts, the tsdb writer, the store's writer): onto the loop."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            asyncio.run_coroutine_threadsafe(self.emit(event), loop)

    async def _publish_event(self, event: Event) -> None:
        if event.type in GATEWAY_EVENT_TYPES or not event.person:
            topic = gateway_events_topic(self.settings.gateway_id)
        else:
            topic = events_topic(event.person)
        # Waits for outbound room only briefly (gateway/mqtt/outbound_queue.py): a copy dropped while
        # the broker is away is counted and announced; the event itself is in the store.
        await self.link.publish(topic, event.to_payload())

    def _on_text_event(self, kind: str, data: Mapping[str, Any]) -> None:
        """From the text dispatcher's worker threads: the SOS clock stops at an SOS's first
        text, and every text event goes on the bus."""
        self.sos_clock.on_text_event(kind, data)
        person = str(data.get("person", ""))
        self.emit_from_thread(Event(EventType(kind), person, self.clock.now(), dict(data)))

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
        self.emit_from_thread(Event(kind, "", self.clock.now(), data))

    # --- time -----------------------------------------------------------------------------
    async def tick(self) -> None:
        """One second of housekeeping on the monitor's clock: stale devices, urgent alerts
        whose readings stopped, snoozes that ended, prompt deadlines. The one tick: the running
        gateway's loop and offline callers (scenario runner, replay) both run it. Running, the
        escalation watcher ticks prompt deadlines on its own supervised loop (every 0.25 s);
        ticking them here too would only let a failing or slow escalation stall or end the
        monitor's tick. Offline no such loop runs: this tick acts on a passed deadline."""
        for ev in self.monitor.tick():
            await self.emit(ev)
        if self._ticks_escalation:
            await self.escalation.tick()
        if self.monitor.dirty:
            # Open alerts and snoozes survive a crash, written off the loop.
            await asyncio.to_thread(self.monitor.write_state, self.monitor.state_blob())

    async def _tick_loop(self) -> None:
        while True:  # a failure ends the loop: the supervisor counts it and restarts it
            await asyncio.sleep(1.0)
            await self.tick()

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
