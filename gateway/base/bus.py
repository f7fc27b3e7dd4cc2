"""A small typed event bus. Each subscriber gets its own bounded queue and task, so a slow
or failing subscriber never blocks the monitor or another subscriber (it logs and carries on).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from gateway.contract.values import Event

log = logging.getLogger(__name__)

Handler = Callable[[Event], Awaitable[None] | None]


@dataclass
class _Sub:
    name: str
    handler: Handler
    queue: asyncio.Queue[Event]
    task: asyncio.Task[None] | None = None
    errors: int = 0
    delivered: int = 0
    wants: frozenset[str] | None = field(default=None)


class EventBus:
    def __init__(self, maxsize: int = 10_000) -> None:
        self._subs: list[_Sub] = []
        self._maxsize = maxsize
        self._running = False

    def subscribe(self, name: str, handler: Handler, types: set[str] | None = None) -> None:
        """Register before start(). `types` limits which event types this subscriber sees."""
        self._subs.append(
            _Sub(
                name,
                handler,
                asyncio.Queue(self._maxsize),
                wants=frozenset(types) if types else None,
            )
        )

    async def start(self) -> None:
        self._running = True
        for s in self._subs:
            s.task = asyncio.create_task(self._pump(s), name=f"bus:{s.name}")

    async def stop(self) -> None:
        """Drain what is queued, then stop the pumps."""
        self._running = False
        for s in self._subs:
            await s.queue.join()
            if s.task:
                s.task.cancel()
        for s in self._subs:
            if s.task:
                with contextlib.suppress(asyncio.CancelledError):
                    await s.task

    async def publish(self, event: Event) -> None:
        """Queue the event for every interested subscriber (waits if one is full: backpressure,
        never a silent drop)."""
        for s in self._subs:
            if s.wants is None or str(event.type) in s.wants:
                await s.queue.put(event)

    async def join(self) -> None:
        """Wait until everything queued has been handled, including events that handlers
        published meanwhile (tests and the scenario runner settle on this)."""
        while any(s.queue.qsize() for s in self._subs):
            for s in self._subs:
                await s.queue.join()

    def alive(self) -> bool:
        """Every pump running (the supervisor's watch; a pump ends only on a BaseException)."""
        return not self._running or all(
            s.task is not None and not s.task.done() for s in self._subs
        )

    def revive(self) -> None:
        """The supervisor's restart hook: a new pump over each dead pump's queue."""
        for s in self._subs:
            if self._running and (s.task is None or s.task.done()):
                s.task = asyncio.create_task(self._pump(s), name=f"bus:{s.name}")

    def depths(self) -> dict[str, int]:
        return {s.name: s.queue.qsize() for s in self._subs}

    def stats(self) -> dict[str, dict[str, int]]:
        return {s.name: {"delivered": s.delivered, "errors": s.errors} for s in self._subs}

    async def _pump(self, s: _Sub) -> None:
        while True:
            event = await s.queue.get()
            try:
                result = s.handler(event)
                if inspect.isawaitable(result):
                    await result
                s.delivered += 1
            except Exception:
                s.errors += 1
                # No event content in the log: it may hold PHI.
                log.exception("subscriber %s failed on a %s event", s.name, event.type)
            finally:
                s.queue.task_done()
