"""Supervision of the hub's background work.

- asyncio loops (`task`): restarted with backoff when they crash or return; never when
  cancelled (that is a stop).
- threads, processes and self-healing loops (`watch`): one watchdog task asks each `alive()`
  every `watch_interval_s` and calls its restart hook, with backoff, while it is dead. A part
  whose owner gives up on purpose (the store's writer on a broken disk) has no hook: it shows.

Every failure is logged without PHI (the exception's class and code path, never its message:
messages can quote a reading or a name), counted, shown by `ready()` while a safety-critical
part is down, and announced as a `component_failed` / `component_restarted` hub event. The
backoff (gateway/base/backoff.py) starts again once a part has run `stable_s` without
failing."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
import traceback
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.base.backoff import Backoff, Retry
from gateway.contract.topics import EventType
from gateway.contract.values import Event

log = logging.getLogger(__name__)

Emit = Callable[[Event], Coroutine[Any, Any, None]]
Factory = Callable[[], Awaitable[Any]]
RestartHook = Callable[[], Any]  # may return an awaitable (it then runs as its own task)

DEFAULT_BACKOFF = Backoff((0.5, 1.0, 2.0, 5.0, 10.0, 30.0))
Schedule = Backoff | Sequence[float]


def describe(exc: BaseException) -> str:
    """A failure's class and where it happened: enough to debug, never the message (PHI)."""
    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    where = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames))
    return f"{type(exc).__name__} at {where}" if where else type(exc).__name__


@dataclass
class Component:
    name: str
    critical: bool
    retry: Retry
    up: bool = True
    failures: int = 0
    restarts: int = 0
    last_error: str | None = None  # the exception's class only
    down_since: float | None = None  # monotonic
    up_since: float = field(default_factory=time.monotonic)

    def next_delay(self) -> float:
        if self.up:  # a part that ran its backoff's reset_after_s starts from the first delay
            self.retry.ran(time.monotonic() - self.up_since)
        return self.retry.next()

    def as_dict(self) -> dict[str, Any]:
        return {
            "up": self.up,
            "critical": self.critical,
            "failures": self.failures,
            "restarts": self.restarts,
            "last_error": self.last_error,
        }


@dataclass
class _Watch:
    comp: Component
    alive: Callable[[], bool]
    restart: RestartHook | None
    retry_at: float = 0.0
    pending: asyncio.Future[Any] | None = None


class Supervisor:
    def __init__(
        self,
        emit: Emit | None = None,
        *,
        now: Callable[[], float] = time.time,
        backoff: Schedule = DEFAULT_BACKOFF,
        watch_interval_s: float = 1.0,
        stable_s: float = 60.0,
    ) -> None:
        self._emit = emit
        self._now = now
        self._backoff = backoff
        self._interval = watch_interval_s
        self._stable_s = stable_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._components: dict[str, Component] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._watches: list[_Watch] = []
        self._watchdog: asyncio.Task[None] | None = None

    # --- registration ---------------------------------------------------------------------
    def task(
        self,
        name: str,
        factory: Factory,
        *,
        critical: bool,
        backoff: Schedule | None = None,
    ) -> None:
        """Run `factory()` as a task now, and again after each crash (needs a running loop)."""
        self.bind()
        comp = self._add(name, critical, backoff)
        self._tasks[name] = asyncio.create_task(self._keep(comp, factory), name=name)

    def watch(
        self,
        name: str,
        alive: Callable[[], bool],
        restart: RestartHook | None = None,
        *,
        critical: bool,
        backoff: Schedule | None = None,
    ) -> None:
        """Check `alive()` from start() on; call `restart()` while it is False."""
        self._watches.append(_Watch(self._add(name, critical, backoff), alive, restart))

    def _add(self, name: str, critical: bool, backoff: Schedule | None) -> Component:
        if name in self._components:
            raise ValueError(f"component {name!r} is already supervised")
        schedule = Backoff.of(backoff or self._backoff, reset_after_s=self._stable_s)
        comp = Component(name, critical, schedule.retry())
        self._components[name] = comp
        return comp

    # --- lifecycle ------------------------------------------------------------------------
    def bind(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """The loop hub events go to (event() may be called from any thread)."""
        self._loop = loop or asyncio.get_running_loop()

    async def start(self) -> None:
        self.bind()
        if self._watchdog is None:
            self._watchdog = asyncio.create_task(self._watch_loop(), name="supervisor")

    async def stop(self) -> None:
        """First in the gateway's stop: the owners then end their threads on purpose."""
        tasks = [*self._tasks.values(), *(w.pending for w in self._watches if w.pending)]
        if self._watchdog is not None:
            tasks.append(self._watchdog)
        self._tasks.clear()
        self._watchdog = None
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # --- views ----------------------------------------------------------------------------
    def ready(self) -> dict[str, bool]:
        """Safety-critical parts only: any one down makes /readyz 503."""
        return {c.name: c.up for c in self._components.values() if c.critical}

    def stats(self) -> dict[str, dict[str, Any]]:
        return {c.name: c.as_dict() for c in self._components.values()}

    # --- hub events -----------------------------------------------------------------------
    def event(self, kind: EventType, data: Mapping[str, Any]) -> None:
        """A hub event (person "") onto the bus, from the loop or any thread; never raises."""
        loop = self._loop
        if self._emit is None or loop is None or loop.is_closed():
            return
        try:
            asyncio.run_coroutine_threadsafe(
                self._emit(Event(kind, "", self._now(), dict(data))), loop
            )
        except RuntimeError:  # the loop closed meanwhile (shutdown)
            log.warning("hub event %s dropped at shutdown", kind)

    # --- supervision ----------------------------------------------------------------------
    async def _keep(self, comp: Component, factory: Factory) -> None:
        while True:
            try:
                await factory()
                error, why = "Exited", "returned"  # a loop meant to run until cancelled
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error, why = type(exc).__name__, describe(exc)
            delay = comp.next_delay()
            self._down(comp, error, why, delay)
            await asyncio.sleep(delay)
            self._up(comp)

    async def _watch_loop(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            for w in self._watches:
                try:
                    self._check(w)
                except Exception as exc:  # the watchdog itself must outlive any bug
                    log.error("supervisor: checking %s failed: %s", w.comp.name, describe(exc))

    def _check(self, w: _Watch) -> None:
        comp = w.comp
        if w.pending is not None:
            if not w.pending.done():
                return  # an async restart is still running
            exc = None if w.pending.cancelled() else w.pending.exception()
            w.pending = None
            if exc is not None:
                log.error("%s: restart failed: %s", comp.name, describe(exc))
        try:
            ok = bool(w.alive())
        except Exception as exc:
            log.error("%s: liveness check failed: %s", comp.name, describe(exc))
            ok = False
        now = time.monotonic()
        if ok:
            if not comp.up:
                self._up(comp)
            return
        if comp.up:
            delay = comp.next_delay()
            self._down(comp, "Dead", "not alive", delay if w.restart else None)
            w.retry_at = now + delay
            return
        if w.restart is None or now < w.retry_at:
            return
        w.retry_at = now + comp.next_delay()  # if still dead by then, again
        try:
            result = w.restart()
        except Exception as exc:
            log.error("%s: restart failed: %s", comp.name, describe(exc))
            return
        if inspect.isawaitable(result):
            w.pending = asyncio.ensure_future(result)

    def _down(self, comp: Component, error: str, why: str, restart_in: float | None) -> None:
        comp.up = False
        comp.failures += 1
        comp.last_error = error
        comp.down_since = time.monotonic()
        when = f"restart in {restart_in:.1f}s" if restart_in is not None else "no restart"
        log.error("%s failed (%s); %s", comp.name, why, when)
        self.event(
            EventType.COMPONENT_FAILED,
            {"component": comp.name, "critical": comp.critical, "error": error,
             "failures": comp.failures, "restart_in_s": restart_in},
        )  # fmt: skip

    def _up(self, comp: Component) -> None:
        down_s = time.monotonic() - (comp.down_since or time.monotonic())
        comp.up = True
        comp.restarts += 1
        comp.up_since = time.monotonic()
        comp.down_since = None
        log.warning("%s restarted after %.1fs", comp.name, down_s)
        self.event(
            EventType.COMPONENT_RESTARTED,
            {"component": comp.name, "critical": comp.critical, "restarts": comp.restarts,
             "down_s": round(down_s, 1)},
        )  # fmt: skip
