"""The broker link's inbound queue: priority classes, and a bound that only vitals pay for.

aiomqtt hands every message to `put_nowait` from paho's read callback (on the event loop) and
*discards it with a warning* on `QueueFull`, whatever it is (aiomqtt/client.py `_on_message`).
So this queue never reports itself full: it makes room on its own by shedding the OLDEST
queued vitals. An SOS, an ack, a device status or an intent is never shed; they may exceed the
bound (they are rare and each is a person asking for something).

Why the oldest vitals: the monitor's picture and its alerts are about now. The newest reading
of a device supersedes the ones queued before it, and a backlog's oldest readings would arrive
as late data anyway (recorded, never alerted on); dropping the newest would blind the monitor
to the present for as long as the backlog lasts."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

import aiomqtt

# Lower is sooner. An SOS press must never wait behind a backlog of vitals.
_PRIORITY_BY_LEAF = {"sos": 0, "ack": 1, "status": 2, "intent": 3}
TELEMETRY = 5  # every other topic (vitals): the only class that may be shed
_CLASSES = (*sorted(set(_PRIORITY_BY_LEAF.values())), TELEMETRY)

# Put by the link to wake an idle reader (its sender died); never dispatched.
WAKE = aiomqtt.Message("$healthgw/wake", b"", 0, False, 0, None)


def topic_priority(topic: str) -> int:
    return _PRIORITY_BY_LEAF.get(topic.rsplit("/", 1)[-1], TELEMETRY)


class PriorityMessageQueue(asyncio.Queue[aiomqtt.Message]):
    """FIFO within a priority class, classes in priority order. `bound` (0 = none) caps the
    total depth by shedding the oldest telemetry; `on_shed(n)` and `on_empty()` let the owner
    count and announce it (both run on the event loop, inside paho's callback or a get)."""

    def __init__(
        self,
        bound: int = 0,
        *,
        on_shed: Callable[[int], None] | None = None,
        on_empty: Callable[[], None] | None = None,
    ) -> None:
        self.bound = bound
        self.shed = 0
        self._on_shed = on_shed
        self._on_empty = on_empty
        super().__init__(0)  # unbounded to asyncio: put_nowait must never raise QueueFull

    def _init(self, maxsize: int) -> None:
        self._classes: dict[int, deque[aiomqtt.Message]] = {p: deque() for p in _CLASSES}
        self._size = 0

    def _put(self, item: aiomqtt.Message) -> None:
        p = 0 if item is WAKE else topic_priority(item.topic.value)
        self._classes[p].append(item)
        self._size += 1
        if 0 < self.bound < self._size:
            telemetry = self._classes[TELEMETRY]
            n = 0
            while self._size > self.bound and telemetry:
                telemetry.popleft()
                self._size -= 1
                n += 1
            if n:
                self.shed += n
                if self._on_shed is not None:
                    self._on_shed(n)

    def _get(self) -> aiomqtt.Message:
        for p in _CLASSES:
            q = self._classes[p]
            if q:
                item = q.popleft()
                self._size -= 1
                break
        else:  # asyncio only calls _get on a non-empty queue
            raise asyncio.QueueEmpty
        if not self._size and self._on_empty is not None:
            self._on_empty()
        return item

    def wake(self) -> None:
        self.put_nowait(WAKE)

    def qsize(self) -> int:
        return self._size

    def empty(self) -> bool:
        return not self._size

    def full(self) -> bool:
        return False
