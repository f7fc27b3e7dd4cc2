"""How parts plug into the gateway, the way zigbee2mqtt's extensions do.

A part has `start()`/`stop()` and subscribes itself to the event bus when it is built. The
gateway enters its parts in order on one `contextlib.AsyncExitStack`, so they stop in exactly
the reverse order, and a start that fails part-way stops what had started (no hand-ordered
stop list to keep in step with the start list).

The agents side (SOS playbooks, ladder, assistant, medication) is handed to the gateway whole,
at construction, as `Extensions`: the ports the gateway calls (SOS, contacts, chat, ...) and
its parts. Nothing is attached or patched in afterwards."""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.base.ports import ChatHandler, LadderPort, MedicationPort, ReportPort, SosHandler
from gateway.contract.values import Event
from gateway.escalation.watcher import ContactNotifier

log = logging.getLogger(__name__)

EventHook = Callable[[Event], Awaitable[None] | None]


class Part(Protocol):
    """One part of the running gateway."""

    @property
    def name(self) -> str: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Step:
    """A part made of two callables, sync or async; either may be absent (a step that only
    starts, like seeding the monitor, or only stops, like closing the databases)."""

    name: str
    on_start: Callable[[], object] | None = None
    on_stop: Callable[[], object] | None = None

    async def start(self) -> None:
        await _call(self.on_start)

    async def stop(self) -> None:
        await _call(self.on_stop)


async def _call(fn: Callable[[], object] | None) -> None:
    if fn is None:
        return
    result = fn()
    if inspect.isawaitable(result):
        await result


async def enter(stack: contextlib.AsyncExitStack, part: Part) -> None:
    """Start `part`; its stop joins the stack only once it has started."""
    await part.start()
    stack.push_async_callback(_stop, part)


async def _stop(part: Part) -> None:
    # One part failing to stop must not keep the rest (the databases, the store) open.
    try:
        await part.stop()
    except Exception:
        log.exception("stopping %s failed", part.name)


@dataclass(frozen=True)
class Extensions:
    """What the agents side gives the gateway, all at construction (healthgw.assembly.hub builds
    it). Every port is optional: a gateway without them refuses an SOS loudly."""

    sos: SosHandler | None = None
    # Texts the emergency contacts when an "are you OK?" goes unanswered.
    contacts: ContactNotifier | None = None
    ladder: LadderPort | None = None
    chat: ChatHandler | None = None
    meds: MedicationPort | None = None
    reports: ReportPort | None = None
    # The assistant's long-term memory of a person (complaints, bookings, history).
    memory: Callable[[str], dict[str, Any]] | None = None
    tool_metrics: Callable[[], Mapping[str, Mapping[str, float]]] | None = None
    # Is a hard SOS open for this person (Home Assistant shows it "on" after a restart)?
    sos_open: Callable[[str], bool] | None = None
    # Started after storage, texts, the bus and the monitor and before MQTT input flows;
    # stopped in reverse, before the broker link says goodbye.
    parts: Sequence[Part] = ()


class EventHooks:
    """Extra observers of every event (demo screen, websocket feed, a replay's record), run
    by the bus's "hooks" subscriber. Failures are logged, never fatal."""

    def __init__(self) -> None:
        self._hooks: list[EventHook] = []

    def add(self, hook: EventHook) -> None:
        self._hooks.append(hook)

    async def run(self, event: Event) -> None:
        for hook in self._hooks:
            try:
                r = hook(event)
                if r is not None:
                    await r
            except Exception:
                log.exception("event hook failed")
