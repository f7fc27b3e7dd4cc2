"""The gateway as the API sees it (gateway/api/deps.py Backend): people, devices, events,
readings, trajectories, chat, alerts and SOS, readiness and counters. Reads only, apart from
the few actions the API offers (clear alerts, start or end an SOS, say something in a chat)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from gateway.base.bus import EventBus
from gateway.base.clock import Clock
from gateway.base.metrics import LatencyHistogram
from gateway.base.ports import ChatHandler, LadderPort, MedicationPort, ReportPort, SosHandler
from gateway.base.retention import Retention
from gateway.base.supervise import Supervisor
from gateway.contract.topics import reply_topic
from gateway.contract.values import Event
from gateway.edge.deadletter import DeadLetterBox
from gateway.edge.validate import Deduper
from gateway.escalation.watcher import EscalationWatcher
from gateway.export import ExportSource
from gateway.household.model import Household
from gateway.monitor.engine import Monitor
from gateway.mqtt.link import MqttLink
from gateway.notify.dispatcher import TextDispatcher
from gateway.runtime.extensions import EventHook, EventHooks
from gateway.runtime.routing import SosClock, _NoSos
from gateway.runtime.sharding import Shard
from gateway.store import Store
from gateway.tsdb.writer import TimeSeriesWriter

log = logging.getLogger(__name__)


def vitals_summary(monitor: Monitor, person_id: str) -> dict[str, Any]:
    """Latest vitals and NEWS2 (the assistant's long-term memory reads this)."""
    return {
        "latest": monitor.latest_vitals(person_id),
        "news2": monitor.latest_news2(person_id),
        "open_alerts": len(monitor.open_alerts(person_id)),
    }


class ApiBackend:
    """Built last by the Gateway, from the parts it reads and the agents side's ports.
    `started_at` is set when the gateway starts."""

    def __init__(
        self,
        household: Household,
        clock: Clock,
        *,
        monitor: Monitor,
        store: Store,
        escalation: EscalationWatcher,
        texts: TextDispatcher,
        link: MqttLink,
        bus: EventBus,
        supervisor: Supervisor,
        dedupe: Deduper,
        deadletters: DeadLetterBox,
        retention: Retention,
        tsdb: TimeSeriesWriter | None,
        shard: Shard | None,
        hooks: EventHooks,
        emit: Callable[[Event], Awaitable[None]],
        sos: SosHandler,
        sos_clock: SosClock,
        chat: ChatHandler | None,
        memory: Callable[[str], dict[str, Any]] | None,
        meds: MedicationPort | None,
        reports: ReportPort | None,
        ladder: LadderPort | None,
        tool_metrics: Callable[[], Mapping[str, Mapping[str, float]]] | None,
        counters: Counter[str],
        rejects: Counter[str],
        reading_latency: LatencyHistogram,
    ) -> None:
        self.household = household
        self.clock = clock
        self.monitor = monitor
        self.store = store
        self.escalation = escalation
        self.texts = texts
        self.link = link
        self.bus = bus
        self.supervisor = supervisor
        self.dedupe = dedupe
        self.deadletters = deadletters
        self.retention = retention
        self.tsdb = tsdb
        self.shard = shard
        self._hooks = hooks
        self._emit = emit
        self.sos = sos
        self.sos_clock = sos_clock
        self.chat = chat
        self._memory_view = memory
        self.meds = meds
        self.reports = reports
        self.ladder = ladder
        self.tool_metrics = tool_metrics
        self.counters = counters
        self.rejects = rejects
        self.reading_latency = reading_latency
        self.sos_latency = sos_clock.latency
        self.started_at = 0.0

    def add_event_hook(self, hook: EventHook) -> None:
        """The live feed's (gateway/api/live_feed.py EventSource)."""
        self._hooks.add(hook)

    # --- readiness ------------------------------------------------------------------------
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

    # --- reads ----------------------------------------------------------------------------
    def assess(self, body: Mapping[str, Any]) -> dict[str, Any]:
        from gateway.monitor.assess import assess_request

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
            # The bands the console's charts shade (age, conditions and overrides applied).
            "normal_ranges": {v: list(r) for v, r in self.monitor.normal_ranges(p.id).items()},
        }

    def export_source(self) -> ExportSource:
        """What the FHIR export reads (gateway/api/routes_export.py): the store's and the
        texts' databases, and the store's audit rows."""
        return ExportSource(
            self.household, self.store._db, self.texts._db, audit=self.store.add_audit
        )

    def vitals_summary(self, person_id: str) -> dict[str, Any]:
        return vitals_summary(self.monitor, person_id)

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
            await self._emit(ev)
        return len(events)

    async def sos_start(self, person: str) -> bool:
        self.sos_clock.mark(person)
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
