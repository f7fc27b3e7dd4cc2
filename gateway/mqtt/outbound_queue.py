"""The broker link's outbound queue: two lanes, and no publisher ever waits on it forever.

Inbound handlers publish (a `rejected` notice per bad message, every event via the bus). When
the sender is dead or the broker gone, nothing frees queue space: a publish that waited for it
would freeze inbound handling, an SOS included, while the link still looked alive (security
review, HIGH). So:

- important (events, notes to a watch, retained state; `put`): FIFO, bounded. A publisher that
  finds it full waits its turn, in order, for at most `wait_s`; then its message is dropped
  and counted (`full`), and the lane is *overflowing*: until the sender frees a slot, later
  publishes that find it full are dropped at once instead of each waiting again. An event is
  also stored in SQLite by the bus's store subscriber, so a dropped MQTT copy is a degraded
  copy, not a loss: announced once per episode as `monitoring_degraded` (`sink:
  mqtt_outbound`), then `monitoring_recovered` with the count once the lane has drained.
- best effort (the informational `rejected` notices; `put_nowait`): its own bound, never
  waited on: full means dropped and counted (`best_effort`). A flood of bad messages cannot
  crowd events out.

The sender takes the important lane first."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gateway.contract.topics import EventType

log = logging.getLogger(__name__)
SEND_TRIES = 5  # a message that fails this often in a row is dropped: it must not block the rest

EventSink = Callable[[EventType, dict[str, Any]], None]  # must not raise


@dataclass(frozen=True, slots=True)
class Outbound:
    topic: str
    payload: bytes
    qos: int
    retain: bool


def best_effort_bound(bound: int) -> int:
    """A tenth of the important lane's bound, at least 100 (never more than the bound)."""
    return min(bound, max(100, bound // 10))


class OutboundQueue:
    def __init__(
        self,
        bound: int,
        *,
        wait_s: float,
        best_effort: int | None = None,
        on_event: EventSink | None = None,
    ) -> None:
        self.bound = max(1, bound)
        self.best_effort_bound = (
            best_effort_bound(self.bound) if best_effort is None else best_effort
        )
        self.wait_s = wait_s
        self.overflowing = False
        self.dropped: Counter[str] = Counter()  # by reason; the link adds its give-ups
        self._on_event = on_event
        self._important: deque[Outbound] = deque()
        self._best_effort: deque[Outbound] = deque()
        self._turn = asyncio.Lock()  # FIFO: a waiting publisher keeps its place in line
        self._space = asyncio.Event()
        self._items = asyncio.Event()
        self._degraded_since: float | None = None  # monotonic; while dropping, until drained
        self._episode_dropped = 0
        self.unsent: Outbound | None = None
        self.unsent_tries = 0

    # --- the message a sender holds: it goes out first after a reconnect -------------------
    async def next(self) -> Outbound:
        item = self.unsent or await self.get()
        self.unsent = item
        return item

    def sent(self) -> None:
        self.unsent, self.unsent_tries = None, 0

    def send_failed(self, error: type[BaseException]) -> None:
        """The connection died sending `unsent`: retry it, unless it can never go out."""
        self.unsent_tries += 1
        # paho refuses an invalid topic or payload with ValueError/TypeError: never sendable.
        if issubclass(error, ValueError | TypeError):
            self._give_up("unsendable")
        elif self.unsent_tries >= SEND_TRIES:
            self._give_up("send_tries")

    def _give_up(self, reason: str) -> None:
        item, tries = self.unsent, self.unsent_tries
        self.sent()
        if item is not None:
            self.dropped[reason] += 1
            log.error("outbound message dropped after %d failed send(s) (%d bytes, QoS %d)",
                      tries, len(item.payload), item.qos)  # fmt: skip

    def depth(self) -> int:
        return len(self) + (self.unsent is not None)

    def __len__(self) -> int:
        return len(self._important) + len(self._best_effort)

    @property
    def degraded(self) -> bool:
        return self._degraded_since is not None

    def put_nowait(self, item: Outbound) -> bool:
        """Best effort: False (dropped, counted) when its lane is full."""
        if len(self._best_effort) < self.best_effort_bound:
            self._best_effort.append(item)
            self._items.set()
            return True
        self.dropped["best_effort"] += 1
        n = self.dropped["best_effort"]
        if not n & (n - 1):  # 1, 2, 4, 8...: visible, never a log line per message
            log.warning("outbound best-effort lane full: %d notice(s) dropped so far", n)
        return False

    async def put(self, item: Outbound) -> bool:
        """Important: False (dropped, counted) when no room came within `wait_s`, or at once
        while the lane is overflowing."""
        if not self._turn.locked() and len(self._important) < self.bound:
            self._append(item)  # the common case: no wait, no task
            return True
        if not self.overflowing:
            try:
                async with asyncio.timeout(self.wait_s), self._turn:
                    while len(self._important) >= self.bound:
                        self._space.clear()
                        await self._space.wait()
                    self._append(item)
                    return True
            except TimeoutError:
                self.overflowing = True
        self._drop_important()
        return False

    async def get(self) -> Outbound:
        while True:
            if self._important:
                item = self._important.popleft()
                self.overflowing = False
                self._space.set()
                if not self._important and self._degraded_since is not None:
                    self._recovered()
                return item
            if self._best_effort:
                return self._best_effort.popleft()
            self._items.clear()
            await self._items.wait()

    def _append(self, item: Outbound) -> None:
        self._important.append(item)
        self._items.set()

    def _drop_important(self) -> None:
        self.dropped["full"] += 1
        self._episode_dropped += 1
        if self._degraded_since is None:  # once per episode
            self._degraded_since = time.monotonic()
            # Events are in the store; what is lost is their MQTT copy (Home Assistant, apps).
            log.error("outbound queue full (%d) for %.0fs: dropping MQTT copies until it moves",
                      self.bound, self.wait_s)  # fmt: skip
            self._event(
                EventType.MONITORING_DEGRADED,
                {"sink": "mqtt_outbound", "reason": "queue_full", "bound": self.bound,
                 "active": True},
            )  # fmt: skip

    def _recovered(self) -> None:
        degraded_s = time.monotonic() - (self._degraded_since or time.monotonic())
        dropped, self._episode_dropped, self._degraded_since = self._episode_dropped, 0, None
        log.warning("outbound queue drained after %.1fs; %d message(s) dropped",
                    degraded_s, dropped)  # fmt: skip
        self._event(
            EventType.MONITORING_RECOVERED,
            {"sink": "mqtt_outbound", "degraded_s": round(degraded_s, 1), "dropped": dropped,
             "active": False},
        )  # fmt: skip

    def _event(self, kind: EventType, data: dict[str, Any]) -> None:
        if self._on_event is not None:
            self._on_event(kind, data)
