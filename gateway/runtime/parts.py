"""What the Gateway's parts share: the attributes Gateway.__init__ sets, declared once for
the mixins that split the gateway by job (inbound.py: routing inbound messages;
tsdb_feed.py: the time-series feed; api_reads.py: the read facade for the API)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.base.bus import EventBus
    from gateway.base.clock import Clock
    from gateway.base.metrics import LatencyHistogram
    from gateway.base.ports import ChatHandler, LadderPort, MedicationPort, SosHandler
    from gateway.base.retention import Retention
    from gateway.base.settings import Settings
    from gateway.base.supervise import Supervisor
    from gateway.contract.values import Event
    from gateway.edge.deadletter import DeadLetterBox
    from gateway.edge.validate import Deduper, EdgeValidator
    from gateway.escalation.watcher import ContactNotifier, EscalationWatcher
    from gateway.household.model import Household
    from gateway.household.state import PersonStatePublisher
    from gateway.monitor.engine import Monitor
    from gateway.mqtt.link import MqttLink
    from gateway.notify.dispatcher import TextDispatcher
    from gateway.runtime.sharding import Shard
    from gateway.store import Store
    from gateway.tsdb.writer import TimeSeriesWriter


class GatewayParts:
    """Declarations only (Gateway.__init__ assigns every one)."""

    settings: Settings
    household: Household
    shard: Shard | None
    clock: Clock
    store: Store
    tsdb: TimeSeriesWriter | None
    texts: TextDispatcher
    supervisor: Supervisor
    link: MqttLink
    validator: EdgeValidator
    dedupe: Deduper
    monitor: Monitor
    person_state: PersonStatePublisher
    escalation: EscalationWatcher
    bus: EventBus
    retention: Retention
    deadletters: DeadLetterBox
    sos: SosHandler
    chat: ChatHandler | None
    meds: MedicationPort | None
    ladder: LadderPort | None
    contacts: ContactNotifier | None
    _memory_view: Callable[[str], dict[str, Any]] | None
    counters: Counter[str]
    rejects: Counter[str]
    reading_latency: LatencyHistogram
    sos_latency: LatencyHistogram
    _sos_t0: dict[str, float]
    _store_failing_at: float | None
    started_at: float
    _loop: asyncio.AbstractEventLoop | None = None

    if TYPE_CHECKING:

        async def emit(self, event: Event) -> None: ...
        def _spawn(self, coro: Awaitable[Any]) -> asyncio.Future[Any]: ...
        def _mark_sos(self, person: str) -> None: ...
        async def chat_say(self, person: str, text: str, session_id: str | None) -> str | None: ...
