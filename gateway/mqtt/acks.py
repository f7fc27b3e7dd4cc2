"""Acknowledge a QoS 1 message to the broker only once what it carried is durable.

paho acknowledges a QoS 1 PUBLISH as it arrives, before the gateway has stored anything: a
`kill -9` then lost every reading in the inbound queue and the store's open batch (the broker
had been told they were delivered). With paho's manual acks, `AckTracker` sends the PUBACK
after the message was handled AND the store has committed every row queued up to then (a
`Durability` ticket; spilled rows are on disk before the handler returns). Until then the
broker keeps the message in its session and redelivers it after a crash; the redelivered
copy is dropped by the gateway's dedupe and the store's unique keys.

Throughput: acks go out in batches, one per store commit. The broker stops sending once its
in-flight window (mosquitto `max_inflight_messages`) is full of unacked messages, so the
tracker asks the store to commit soon when the inbound queue runs dry or `nudge_every`
acks wait, instead of waiting for the store's flush interval. "Soon" is at most one nudge
per `nudge_gap_s` (a nudge skipped is run when the gap ends): at a few thousand readings/s
the queue runs dry every few messages, and a commit per few rows cost the event loop a GIL
hand-over for every SQLite call (1,300 commits of 23 rows for a 30,000-reading drain).

Safety over durability: an SOS queued at the broker behind a full window of unacked readings
would wait for the store. If the store makes no progress for `max_wait_s` (a full disk, a
locked database), every waiting message is acknowledged anyway and new ones are acknowledged
as they are handled (`bypass`) until the store moves again; each such ack is counted
(`forced`). The store counts and announces what it could not keep.

A message discarded before handling (a shed backlog, a coalesced SOS, an intent over its
bound) is acknowledged at once: the decision to drop it was made and counted. Acks belong to
the connection a message arrived on: after a reconnect the broker redelivers what was not
acknowledged, so an older connection's pending acks are forgotten, never sent."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter, deque
from collections.abc import Callable
from typing import Any, Protocol

import aiomqtt

log = logging.getLogger(__name__)

GEN_ATTR = "healthgw_link_gen"  # set on each inbound message: the connection it came on


class Durability(Protocol):
    """The store's side (gateway/store/writer.py implements it)."""

    def durable_ticket(self) -> int:
        """A ticket for everything accepted so far."""
        ...

    def is_durable(self, ticket: int) -> bool:
        """Everything accepted up to `ticket` is committed (or on disk in a spill file)."""
        ...

    def commit_soon(self) -> None:
        """Commit what is queued now rather than wait for a fuller batch."""
        ...

    def on_commit(self, callback: Callable[[], None] | None) -> None:
        """Call `callback` (from any thread) after each commit of accepted rows."""
        ...


def message_gen(message: aiomqtt.Message) -> int:
    return int(getattr(message, GEN_ATTR, 0))


class AckTracker:
    """On the event loop only. `bind` a connection's paho client on connect; `done` when a
    message was handled (with the handler's result: an asyncio future defers the ack until
    it ends, e.g. an SOS whose playbook is journalling); `discarded` for messages never
    handled; `release` when the store made progress; `run` enforces `max_wait_s`."""

    def __init__(
        self,
        durability: Durability,
        *,
        max_wait_s: float = 2.0,
        nudge_every: int = 256,
        nudge_gap_s: float = 0.01,
    ) -> None:
        self.durability = durability
        self._max_wait_s = max_wait_s
        self._nudge_every = nudge_every
        self._nudge_gap_s = nudge_gap_s
        self._last_nudge = -1e9  # monotonic
        self._nudge_later: asyncio.TimerHandle | None = None
        self._clients: dict[int, Any] = {}  # gen -> paho client of a live connection
        self.gen = 0  # the newest connection's
        # (ticket, since, gen, mid, qos), tickets non-decreasing
        self._pending: deque[tuple[int, float, int, int, int]] = deque()
        self._deferred = 0  # acks waiting on a handler's future
        self.bypass = False
        self.counts: Counter[str] = Counter()  # sent, forced, discarded, stale, failed

    # --- connection -------------------------------------------------------------------------
    def next_gen(self) -> int:
        self.gen += 1
        return self.gen

    def bind(self, client: aiomqtt.Client, gen: int) -> None:
        """A new connection (`gen`, tagged on its messages): its paho client acks from now
        on. Before connecting: a persistent session's backlog arrives at once."""
        paho = client._client  # aiomqtt has no manual-ack API: paho underneath
        paho.manual_ack_set(True)
        self._clients[gen] = paho

    def unbind(self) -> None:
        """The connections ended: what waits is redelivered on the next ones, never acked."""
        self._clients.clear()
        self.counts["stale"] += len(self._pending)
        self._pending.clear()

    # --- messages ---------------------------------------------------------------------------
    def done(self, message: aiomqtt.Message, result: object = None) -> None:
        if message.qos == 0:
            return
        if isinstance(result, asyncio.Future):
            self._deferred += 1
            result.add_done_callback(lambda _f: self._after_deferred(message))
            return
        self._enqueue(message)

    def discarded(self, message: aiomqtt.Message) -> None:
        if message.qos:
            self.counts["discarded"] += 1
            self._send(message_gen(message), message.mid, message.qos)

    def at_once(self, message: aiomqtt.Message, reason: str) -> None:
        """Acknowledge a message that carries nothing to store (the backlog probe)."""
        if message.qos:
            self.counts[reason] += 1
            self._send(message_gen(message), message.mid, message.qos)

    def idle(self) -> None:
        """The inbound queue ran dry: commit soon so the broker's window reopens."""
        if self._pending:
            self._nudge()

    def _nudge(self) -> None:
        """Ask the store to commit: now, or when `nudge_gap_s` since the last ask has passed."""
        if self._nudge_later is not None:
            return  # one is already due
        wait = self._last_nudge + self._nudge_gap_s - time.monotonic()
        if wait <= 0:
            self._last_nudge = time.monotonic()
            self.durability.commit_soon()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on a loop (tests driving it by hand): at once
            self._last_nudge = time.monotonic()
            self.durability.commit_soon()
            return
        self._nudge_later = loop.call_later(wait, self._nudge_due)

    def _nudge_due(self) -> None:
        self._nudge_later = None
        if self._pending:
            self._nudge()

    def pending(self) -> int:
        return len(self._pending) + self._deferred

    def _after_deferred(self, message: aiomqtt.Message) -> None:
        self._deferred -= 1
        self._enqueue(message)
        self.release()

    def _enqueue(self, message: aiomqtt.Message) -> None:
        gen, mid, qos = message_gen(message), message.mid, message.qos
        if self.bypass:
            self.counts["forced"] += 1
            self._send(gen, mid, qos)
            return
        ticket = self.durability.durable_ticket()
        if self.durability.is_durable(ticket) and not self._pending:
            self._send(gen, mid, qos)  # nothing of ours waits in the store
            return
        self._pending.append((ticket, time.monotonic(), gen, mid, qos))
        if not len(self._pending) % self._nudge_every:
            self._nudge()

    # --- progress ---------------------------------------------------------------------------
    def release(self) -> None:
        """Ack everything the store has made durable (called on the loop after a commit)."""
        q, durable = self._pending, self.durability
        moved = False
        while q and durable.is_durable(q[0][0]):
            _, _, gen, mid, qos = q.popleft()
            self._send(gen, mid, qos)
            moved = True
        if moved and self.bypass:
            self.bypass = False
            log.warning("store is committing again: acks wait for it again")

    async def settle(self, every: float = 0.01) -> None:
        """A clean stop: have the store commit what was handled up to now, and acknowledge it,
        so that a normal restart is not sent it again. (Bounded by the caller; an SOS whose
        playbook is still running stays unacknowledged, and its journal resumes it.)"""
        if not self._pending:
            return
        last = self._pending[-1][0]
        while self._pending and self._pending[0][0] <= last:
            self.durability.commit_soon()
            await asyncio.sleep(every)
            self.release()

    def force_overdue(self, now: float | None = None) -> int:
        """The store made no progress for max_wait_s: ack what waits, and bypass it until it
        moves (an SOS must not wait at the broker behind unacknowledged readings)."""
        self.release()
        q = self._pending
        now = time.monotonic() if now is None else now
        if not q or now - q[0][1] < self._max_wait_s:
            return 0
        n = len(q)
        if not self.bypass:
            self.bypass = True
            log.error("store made no progress for %.0fs: acknowledging %d messages before they "
                      "are stored", self._max_wait_s, n)  # fmt: skip
        while q:
            _, _, gen, mid, qos = q.popleft()
            self.counts["forced"] += 1
            self._send(gen, mid, qos)
        return n

    async def run(self, every: float = 0.25) -> None:
        while True:
            await asyncio.sleep(every)
            self.force_overdue()
            if self.bypass and self.durability.is_durable(self.durability.durable_ticket()):
                self.bypass = False  # caught up: the store is healthy again

    def _send(self, gen: int, mid: int, qos: int) -> None:
        client = self._clients.get(gen)
        if client is None:
            self.counts["stale"] += 1  # redelivered on the next connection
            return
        rc = 1
        with contextlib.suppress(Exception):  # never into paho's callback or the dispatcher
            rc = client.ack(mid, qos)
        self.counts["sent" if rc == 0 else "failed"] += 1
