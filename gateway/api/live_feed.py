"""Fan-out of the gateway's events to the console's live streams (GET /v1/live).

One hook on the gateway (Gateway.add_event_hook) copies each event into every connected
client's bounded queue. A client that stops reading loses events rather than growing the
hub's memory; it is told to re-read the lists instead (`lost`). No FastAPI here."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Protocol, runtime_checkable

QUEUE_SIZE = 256  # events per client between two reads; a phone on bad Wi-Fi catches up
MAX_CLIENTS = 16  # a household's screens; more is a runaway tab or a scanner


class Evented(Protocol):
    """An event as the gateway's hooks receive it (gateway.contract.values.Event fits)."""

    def to_payload(self) -> dict[str, Any]: ...


@runtime_checkable
class EventSource(Protocol):
    """gateway.runtime.gateway.Gateway provides it; a backend without it has no live events."""

    def add_event_hook(self, hook: Callable[[Any], Awaitable[None] | None]) -> None: ...


class Client:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=QUEUE_SIZE)
        self.lost = 0  # events dropped since the client last heard of it
        self.woken = asyncio.Event()


class LiveFeed:
    def __init__(self, max_clients: int = MAX_CLIENTS) -> None:
        self._clients: set[Client] = set()
        self.max_clients = max_clients

    def attach(self, source: object) -> bool:
        """Hook onto `source` if it can emit events; False when it cannot."""
        if not isinstance(source, EventSource):
            return False
        source.add_event_hook(self.publish)
        return True

    def publish(self, event: Evented) -> None:
        """Called on the event loop by the gateway's hooks: never blocks, never raises."""
        if not self._clients:
            return
        payload = event.to_payload()
        for c in self._clients:
            try:
                c.queue.put_nowait(payload)
            except asyncio.QueueFull:
                c.lost += 1
            c.woken.set()

    @property
    def clients(self) -> int:
        return len(self._clients)

    @contextlib.contextmanager
    def client(self) -> Iterator[Client | None]:
        """A registered client, or None when MAX_CLIENTS are already connected."""
        if len(self._clients) >= self.max_clients:
            yield None
            return
        c = Client()
        self._clients.add(c)
        try:
            yield c
        finally:
            self._clients.discard(c)
