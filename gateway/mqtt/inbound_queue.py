"""The broker link's inbound queue: priority classes, and bounds that never cost an SOS or ack.

aiomqtt hands every message to `put_nowait` from paho's read callback (on the event loop) and
*discards it with a warning* on `QueueFull`, whatever it is (aiomqtt/client.py `_on_message`).
So this queue never reports itself full: it makes room on its own.

- vitals (telemetry): the total `bound` is kept by shedding the OLDEST queued vitals. The
  monitor's picture and its alerts are about now: the newest reading of a device supersedes
  the ones queued before it, and a backlog's oldest readings would arrive as late data anyway
  (recorded, never alerted on); dropping the newest would blind the monitor to the present.
- device status and intents: each class has its own small bound (`class_bound`), kept by
  shedding the oldest of that class. They used to be unbounded: one device account could fill
  memory with 1 MiB status or intent payloads (security review).
- SOS and acks: never shed (each is a person asking for help or answering). An SOS identical
  to the last one from the same device still waiting (a redelivery, a replayed packet) is not
  queued twice. Only the last one: start, end, start must stay three messages.

`Dispatcher` drains the queue into the gateway's handler, one message at a time, for the link's
whole life, connected or not; it never waits on a connection, nor a connection on it."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from typing import Any

import aiomqtt

from gateway.base.supervise import describe
from gateway.contract.topics import EventType
from gateway.mqtt.acks import GEN_ATTR

log = logging.getLogger(__name__)

# Lower is sooner. An SOS press must never wait behind a backlog of vitals.
SOS, ACK, STATUS, INTENT = 0, 1, 2, 3
_PRIORITY_BY_LEAF = {"sos": SOS, "ack": ACK, "status": STATUS, "intent": INTENT}
TELEMETRY = 5  # every other topic (vitals)
_CLASSES = (SOS, ACK, STATUS, INTENT, TELEMETRY)
# Classes with their own bound, and the reason their sheds are counted under.
_CAPPED = {STATUS: "shed_status", INTENT: "shed_intent"}


def topic_priority(topic: str) -> int:
    return _PRIORITY_BY_LEAF.get(topic.rsplit("/", 1)[-1], TELEMETRY)


def default_class_bound(bound: int) -> int:
    """The status and intent classes' own bound: a tenth of the total, at least 100."""
    return max(100, bound // 10)


class PriorityMessageQueue(asyncio.Queue[aiomqtt.Message]):
    """FIFO within a priority class, classes in priority order. `bound` (0 = none) caps the
    total depth by shedding the oldest telemetry; `class_bound` caps status and intents each.
    `on_shed(n)` (vitals shed), `on_drop(reason)` (a status or intent shed) and `on_empty()` let the owner count and announce it (all run on the event loop, inside
    paho's callback or a get)."""

    def __init__(
        self,
        bound: int = 0,
        *,
        class_bound: int | None = None,
        on_shed: Callable[[int], None] | None = None,
        on_drop: Callable[[str], None] | None = None,
        on_empty: Callable[[], None] | None = None,
        on_discard: Callable[[aiomqtt.Message], None] | None = None,
    ) -> None:
        self.bound = bound
        self.class_bound = default_class_bound(bound) if class_bound is None else class_bound
        self.keep: int | None = None  # set while shedding a backlog (see cap())
        self.shed = 0
        self.coalesced_sos = 0  # identical SOS presses queued once
        self._on_shed = on_shed
        self._on_drop = on_drop
        self._on_empty = on_empty
        # Every message dropped here, one by one (the link acknowledges it to the broker).
        self.on_discard = on_discard
        super().__init__(0)  # unbounded to asyncio: put_nowait must never raise QueueFull

    def _init(self, maxsize: int) -> None:
        self._classes: dict[int, deque[aiomqtt.Message]] = {p: deque() for p in _CLASSES}
        self._last_sos: dict[str, aiomqtt.Message] = {}  # topic -> its newest queued SOS
        self._size = 0

    def _put(self, item: aiomqtt.Message) -> None:
        topic = item.topic.value
        p = topic_priority(topic)
        if p == SOS:
            last = self._last_sos.get(topic)
            if last is not None and last.payload == item.payload:
                self.coalesced_sos += 1  # the same press twice in a row: handled once
                if self.on_discard is not None:
                    self.on_discard(item)
                return
            self._last_sos[topic] = item
        cls = self._classes[p]
        cls.append(item)
        self._size += 1
        if p in _CAPPED and len(cls) > self.class_bound:
            dropped = cls.popleft()
            self._size -= 1
            if self.on_discard is not None:
                self.on_discard(dropped)
            if self._on_drop is not None:
                self._on_drop(_CAPPED[p])
        cap = self.cap()
        if 0 < cap < self._size:
            telemetry = self._classes[TELEMETRY]
            n = 0
            while self._size > cap and telemetry:
                dropped = telemetry.popleft()
                self._size -= 1
                n += 1
                if self.on_discard is not None:
                    self.on_discard(dropped)
            if n:
                self.shed += n
                if self._on_shed is not None:
                    self._on_shed(n)

    def cap(self) -> int:
        """The depth kept now: `bound`, or `keep` while the link sheds a backlog it is
        falling behind on (gateway/mqtt/backlog.py); 0 = none."""
        if self.keep is None:
            return self.bound
        return min(self.bound, self.keep) if self.bound else self.keep

    def _get(self) -> aiomqtt.Message:
        for p in _CLASSES:
            q = self._classes[p]
            if q:
                item = q.popleft()
                self._size -= 1
                break
        else:  # asyncio only calls _get on a non-empty queue
            raise asyncio.QueueEmpty
        if p == SOS and self._last_sos.get(item.topic.value) is item:
            del self._last_sos[item.topic.value]
        if not self._size and self._on_empty is not None:
            self._on_empty()
        return item

    def qsize(self) -> int:
        return self._size

    def telemetry_depth(self) -> int:
        return len(self._classes[TELEMETRY])

    def head_priority(self) -> int | None:
        """The class the next get() returns from; None when empty."""
        return next((p for p in _CLASSES if self._classes[p]), None)

    def empty(self) -> bool:
        return not self._size

    def full(self) -> bool:
        return False


class Forwarder(asyncio.Queue[aiomqtt.Message]):
    """The queue handed to aiomqtt: every message goes straight on to the shared priority
    queue (which outlives connections). It stays empty itself, so aiomqtt's message iterator
    over it yields nothing and only ever ends, in MqttError, when the connection drops: the
    link watches the connection with it while its own dispatcher drains the shared queue."""

    def __init__(
        self,
        target: PriorityMessageQueue,
        gen: int = 0,
        probe: tuple[str, Callable[[aiomqtt.Message], None]] | None = None,
        after_put: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(0)
        self._target = target
        self._gen = gen
        self._after_put = after_put  # backpressure: may pause reading (mqtt_backlog.ReadGate)
        # The backlog probe (gateway/mqtt/backlog.py) is timed as it leaves the broker: it
        # must never wait in, or be shed from, the gateway's own queue.
        self._probe = probe
        self.count = 0  # messages forwarded (the pump's progress signal)

    def put_nowait(self, item: aiomqtt.Message) -> None:
        # Which connection it came on: only that connection may acknowledge it.
        setattr(item, GEN_ATTR, self._gen)
        self.count += 1
        if self._probe is not None and item.topic.value == self._probe[0]:
            self._probe[1](item)
            return
        self._target.put_nowait(item)
        if self._after_put is not None:
            self._after_put()


async def cancel_and_wait(
    task: asyncio.Task[Any], within: float = 10.0, every: float = 1.0
) -> bool:
    """Cancel `task` until it ends (True), or `within` passed. Once is not always enough: on
    Python 3.11, asyncio.wait_for (inside aiomqtt's publish) drops a cancellation that lands
    together with the result, and the task carries on (a link that then hung in teardown)."""
    deadline = time.monotonic() + within
    while not task.done() and (left := deadline - time.monotonic()) > 0:
        task.cancel()
        await asyncio.wait({task}, timeout=min(every, left))
    return task.done()


class Dispatcher:
    """One task hands queued messages to `handler`, straight from the queue (no task or
    asyncio.wait per message: that would halve sustained throughput). Progress watchdog: with
    messages waiting and no dispatch done for `stall_s`, it is `stalled` (the link is then not
    alive) and `ensure_running` restarts it, abandoning the message in hand."""

    YIELD_EVERY = 16  # during a backlog, let the sender and paho's reads run now and then
    # aiomqtt reads one packet per event-loop turn, slower than dispatch: without a pump a
    # backlog stays in the socket and at the broker, in arrival order, an SOS behind it.
    PUMP_EVERY = 8

    def __init__(
        self,
        queue: PriorityMessageQueue,
        handler: Callable[[str, bytes], Awaitable[object]],
        stall_s: float,
        *,
        on_done: Callable[[aiomqtt.Message, object], None] | None = None,
        on_idle: Callable[[], None] | None = None,
        pump: Callable[[], None] | None = None,
        hold: Callable[[], bool] | None = None,
    ) -> None:
        self._q = queue
        self.handler = handler
        # on_done(message, handler result): handled, failed or abandoned; on_idle: queue dry.
        self._on_done = on_done
        self._on_idle = on_idle
        # Reads what the socket holds into the queue, every PUMP_EVERY dispatches (see there).
        self._pump = pump
        # While hold() (an SOS being texted), vitals wait: the loop idles, and the text's
        # worker thread gets the GIL at once instead of sharing it with a flood of readings.
        self._hold = hold
        self._stall_s = stall_s
        self._task: asyncio.Task[None] | None = None
        self._busy_since: float | None = None  # monotonic: when the dispatch in hand began
        self.received = 0
        self.handler_errors = 0
        self.stalls = 0  # restarts because no progress was made

    def stalled(self) -> bool:
        busy = self._busy_since
        return busy is not None and not self._q.empty() and time.monotonic() - busy >= self._stall_s

    def alive(self) -> bool:
        return self._task is not None and not self._task.done() and not self.stalled()

    async def ensure_running(self) -> None:
        task = self._task
        if task is not None and not task.done() and self.stalled():
            self.stalls += 1
            stuck_s = time.monotonic() - (self._busy_since or time.monotonic())
            # The rest of the queue, an SOS included, matters more than the message in hand.
            log.error("inbound dispatch stuck for %.0fs with %d waiting; restarting it",
                      stuck_s, self._q.qsize())  # fmt: skip
            await cancel_and_wait(task, within=5)
            task = None
        if task is None or task.done():
            self._busy_since = None
            self._task = asyncio.create_task(self._loop(), name="mqtt-dispatch")

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)

    async def _loop(self) -> None:
        q, n = self._q, 0
        while True:
            while (  # noqa: ASYNC110 - a poll: hold() is a clock, nothing to wait on
                self._hold is not None and q.head_priority() == TELEMETRY and self._hold()
            ):
                await asyncio.sleep(0.005)
            if q.empty():
                if self._on_idle is not None:
                    self._on_idle()
                message = await q.get()
            else:
                message = q.get_nowait()
            self._busy_since = time.monotonic()
            try:
                await self._dispatch(message)
            finally:
                self._busy_since = None
            n += 1
            if self._pump is not None and not n % self.PUMP_EVERY:
                self._pump()
            if not n % self.YIELD_EVERY:
                await asyncio.sleep(0)

    async def _dispatch(self, message: aiomqtt.Message) -> None:
        self.received += 1
        payload = message.payload
        if isinstance(payload, str):
            payload = payload.encode()
        elif not isinstance(payload, bytes | bytearray):
            payload = b"" if payload is None else str(payload).encode()
        result: object = None
        try:
            result = await self.handler(message.topic.value, bytes(payload))
        except Exception as exc:
            # The loop never dies on one message; the handler reports its own rejects. The
            # class and code path only: the message could quote the payload.
            self.handler_errors += 1
            log.error("message handler failed: %s", describe(exc))
        finally:
            # Also when abandoned by a stall restart: its ack must not hold the broker's window.
            if self._on_done is not None:
                self._on_done(message, result)


class InboundPressure:
    """Counts and announces the queue's shedding (called on the loop, from paho's read
    callback or a get): `monitoring_degraded` once per episode, `monitoring_recovered` when
    the backlog drains, one log line per power of two for status/intent drops."""

    def __init__(self, emit: Callable[[EventType, dict[str, Any]], None]) -> None:
        self._emit = emit
        self.queue: PriorityMessageQueue | None = None
        self.shed: Counter[str] = Counter()
        self._since: float | None = None  # monotonic; while shedding, until drained
        self._episode = 0

    def degraded(self) -> bool:
        return self._since is not None

    def _bounds(self) -> tuple[int, int]:
        q = self.queue
        return (0, 0) if q is None else (q.bound, q.class_bound)

    def on_shed(self, n: int) -> None:
        # "behind": live input outran the gateway for longer than the bound (mqtt_backlog);
        # "queue_full": the broker sent more than the queue holds (no in-flight window).
        behind = self.queue is not None and self.queue.keep is not None
        reason = "behind" if behind else "queue_full"
        self.shed[reason] += n
        self._episode += n
        if self._since is None:  # once per episode
            self._since = time.monotonic()
            bound = self.queue.cap() if self.queue is not None else 0
            log.error("inbound vitals shed (%s, keeping %d): the oldest go first; SOS and "
                      "acks kept", reason, bound)  # fmt: skip
            self._emit(
                EventType.MONITORING_DEGRADED,
                {"sink": "mqtt_inbound", "reason": reason, "bound": bound, "active": True},
            )

    def on_drop(self, reason: str) -> None:
        self.shed[reason] += 1  # a status or intent over its class's bound
        n = self.shed[reason]
        if not n & (n - 1):  # 1, 2, 4, 8...: visible, never a log line per message
            log.warning("inbound %s over its bound (%d): %d shed so far",
                        reason.removeprefix("shed_"), self._bounds()[1], n)  # fmt: skip

    def on_drained(self) -> None:
        if self._since is None:
            return
        degraded_s = time.monotonic() - self._since
        shed, self._episode, self._since = self._episode, 0, None
        log.warning("inbound backlog drained after %.1fs; %d vitals shed", degraded_s, shed)
        self._emit(
            EventType.MONITORING_RECOVERED,
            {"sink": "mqtt_inbound", "degraded_s": round(degraded_s, 1), "shed": shed,
             "active": False},
        )  # fmt: skip
