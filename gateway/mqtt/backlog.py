"""The telemetry session's backlog: backpressure instead of shedding, and when to shed.

Backpressure (`ReadGate`): while the inbound queue holds `high` vitals, the link stops
reading the telemetry socket, and reads again below `low`. TCP then stops the broker, which
keeps the rest of a backlog in the session (its queue, `max_queued_messages`) where nothing
is lost; nothing unread was acknowledged. The broker's own in-flight window cannot do this
alone: mosquitto 2.0.11 with `max_inflight_messages 100` let 10,000-17,000 unacknowledged
messages out to a client acknowledging every 200 ms (measured here). The control session
(SOS, acks, status, intents) is never paused: an SOS does not wait behind vitals anywhere.

When to shed (`BacklogProbe`): the gateway cannot see the broker's queue, so it measures
it: every `every_s` it
publishes a probe onto a topic that only its telemetry session subscribes to. The probe
queues at the broker behind every reading before it; its delay, from publish to dispatch,
is how late the monitor's picture of the household is.

Score apart from decision (as in river): `lag_s()` is the score, `decide()` the decision.
The link sheds (oldest readings first, counted and announced) only when BOTH hold:
- the newest probe waited at least `shed_after_s`, or about `shed_backlog` readings are
  queued at the broker behind it: a broker whose queue for the session fills up (mosquitto
  `max_queued_messages`, 100,000 shipped) drops the NEWEST, the worst to lose, so the
  gateway must shed first. The queue behind a probe is estimated as input rate x its wait:
  the readings between two consecutive probes were published between their two sends
  (one FIFO), so their count over that gap is the input rate. (The readings AHEAD of a
  probe were the wrong measure: at twice the gateway's pace, 50,000 ahead means 100,000
  behind, a full queue.) And
- probes are waiting longer and longer: the newest waited more than one sent `GROW_SPAN_S`
  before it. A backlog that is being drained (a hub back from an outage, a burst) has
  probes that wait less and less, however long the first one waited, so a drain never
  sheds; live input faster than the gateway makes every probe wait longer than the last.
It stops shedding once a probe waited at most `CAUGHT_UP_S`. Broker-side limits (its queue
bound, `max_queued_messages`) are the broker's; this only decides what the gateway drops."""

from __future__ import annotations

import asyncio
import bisect
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import aiomqtt

from gateway.contract.topics import QOS
from gateway.mqtt.acks import AckTracker
from gateway.mqtt.inbound_queue import PriorityMessageQueue

log = logging.getLogger(__name__)

GROW_SPAN_S = 5.0  # compare a probe's wait with the one sent this long before it
GROW_MARGIN_S = 0.25  # waits that differ by less are the same (timer and dispatch jitter)
CAUGHT_UP_S = 2.0
SHED_KEEP = 256  # the newest vitals kept queued while shedding a backlog it fell behind on
KEEP_PROBES = 600  # outstanding probes remembered (10 min at one a second)
HISTORY_S = 120.0  # received probes kept for the growth test


def probe_topic(gateway_id: str) -> str:
    """Published by the gateway's control session, read back by its telemetry session."""
    return f"gateway/{gateway_id}/probe"


class BacklogProbe:
    """On the event loop only. `send` (every `every_s`, while connected) publishes a probe
    through `publish`; `received` is called when the dispatcher reaches one."""

    def __init__(
        self,
        topic: str,
        publish: Callable[[str, bytes], bool],
        *,
        shed_after_s: float,
        shed_backlog: int = 50_000,
        every_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.topic = topic
        self._publish = publish
        self.shed_after_s = shed_after_s
        self.shed_backlog = shed_backlog
        self.arrivals = 0  # vitals read from the session (the link counts them)
        self.every_s = every_s
        self._clock = clock
        self._seq = 0
        # seq -> (monotonic publish time, arrivals then), oldest first
        self._sent: dict[int, tuple[float, int]] = {}
        self._history: deque[tuple[float, float]] = deque()  # (sent at, waited s), by sent at
        self.shedding = False
        self.last_wait_s = 0.0
        self.last_ahead = 0  # readings that were ahead of the newest probe
        self.queued_est = 0  # readings estimated queued at the broker behind the newest probe
        self._last: tuple[float, int] | None = None  # newest received: (sent at, arrivals)
        self._rate = 0.0  # input readings a second, between the two newest received probes
        self.received_count = 0
        self.episodes = 0

    def send(self) -> None:
        self._seq += 1
        now = self._clock()
        if self._publish(self.topic, str(self._seq).encode()):
            self._sent[self._seq] = (now, self.arrivals)
            while len(self._sent) > KEEP_PROBES:
                del self._sent[next(iter(self._sent))]
        self._project(now)

    def _project(self, now: float) -> None:
        """Between probes: the broker's queue now, from the last input rate. Fast input is
        seen a probe's wait late, and at 4x the gateway's pace a probe comes back only
        every 4 s; projecting each second sheds before a full queue."""
        if self.shedding or self._last is None:
            return
        sent_at, seen = self._last
        queued = int(self._rate * (now - sent_at)) - (self.arrivals - seen)
        self.queued_est = max(0, queued)
        if queued >= self.shed_backlog:
            self.decide(sent_at, self.last_wait_s, queued)

    def received(self, payload: bytes) -> None:
        try:
            seq = int(payload)
        except ValueError:
            return  # not ours (the topic is the gateway's own; nothing else writes it)
        sent = self._sent.pop(seq, None)
        if sent is None:
            return  # from before a restart, or already forgotten
        sent_at, ahead = sent[0], self.arrivals - sent[1]
        for older in [s for s in self._sent if s < seq]:
            del self._sent[older]  # lost on the way (a broker restart without persistence)
        now = self._clock()
        waited = now - sent_at
        rate = 0.0  # readings a second published since the previous received probe's send
        if self._last is not None and sent_at > self._last[0]:
            rate = (self.arrivals - self._last[1]) / (sent_at - self._last[0])
        self._last, self._rate = (sent_at, self.arrivals), rate
        self.last_wait_s, self.last_ahead = waited, ahead
        self.queued_est = int(rate * waited)
        self.received_count += 1
        self._history.append((sent_at, waited))
        while self._history and self._history[0][0] < now - HISTORY_S:
            self._history.popleft()
        self.decide(sent_at, waited, self.queued_est)

    def reconnected(self) -> None:
        """A new connection: the waits measured on the last one say nothing about this one.
        Without this, the first probe behind a backlog that built up while the link was
        down was compared with probes from before the outage, and a long drain shed."""
        self._history.clear()
        self._sent.clear()
        self._last, self._rate = None, 0.0

    def lag_s(self) -> float:
        """How late the telemetry session is now: the longer of the newest probe's wait and
        the age of the oldest probe still on its way."""
        oldest = next(iter(self._sent.values()), None)
        age = 0.0 if oldest is None else self._clock() - oldest[0]
        return max(self.last_wait_s, age)

    def decide(self, sent_at: float, waited: float, queued: int = 0) -> None:
        if self.shedding:
            if waited <= CAUGHT_UP_S:
                self.shedding = False
                log.warning("telemetry caught up (probe waited %.1fs): shedding stops", waited)
            return
        if waited < self.shed_after_s and queued < self.shed_backlog:
            return
        before = self._before(sent_at - GROW_SPAN_S, sent_at)
        if before is not None and waited > before + GROW_MARGIN_S:
            self.shedding = True
            self.episodes += 1
            log.error("telemetry %.0fs (~%d readings) behind live input and falling further "
                      "behind (was %.0fs): shedding the oldest readings", waited, queued,
                      before)  # fmt: skip

    def _before(self, at: float, sent_at: float) -> float | None:
        """The wait of the newest received probe sent at or before `at`; else (the first
        seconds of an overload, when few probes are back) of the oldest one sent before
        `sent_at`."""
        i = bisect.bisect_right(self._history, at, key=lambda h: h[0])
        if i:
            return self._history[i - 1][1]
        first = self._history[0] if self._history else None
        return first[1] if first is not None and first[0] < sent_at else None


class ReadGate:
    """Pauses and resumes reading one connection's socket (on the event loop only).

    aiomqtt reads through an `add_reader` callback of its own; pausing removes it, resuming
    installs an equivalent one (read until the TLS buffer is empty too; an error ends the
    connection as aiomqtt's would) and runs it once for what is already buffered. A pause
    lasts while the dispatcher works through `high - low` readings (milliseconds), far
    inside the keepalive, so the broker's pings are answered in time."""

    def __init__(self, high: int, low: int) -> None:
        if not 0 <= low < high:
            raise ValueError("need 0 <= low < high")
        self.high, self.low = high, low
        self._client: aiomqtt.Client | None = None
        self._fd = -1
        self.paused = False
        self.pauses = 0  # times the socket was paused (backpressure applied)

    def bind(self, client: aiomqtt.Client) -> None:
        """A new connection: reading, not paused."""
        sock = client._client.socket()  # aiomqtt exposes no socket; paho's is the one read
        self._client, self._fd, self.paused = client, -1 if sock is None else sock.fileno(), False

    def unbind(self) -> None:
        self._client, self._fd, self.paused = None, -1, False

    def check(self, depth: int, *, open_: bool = False) -> None:
        """`depth`: vitals queued now. `open_`: read regardless (shedding a backlog)."""
        if self.paused and (open_ or depth <= self.low):
            self._resume()
        elif not self.paused and not open_ and depth >= self.high:
            self._pause()

    def _pause(self) -> None:
        if self._fd < 0:
            return
        asyncio.get_running_loop().remove_reader(self._fd)
        self.paused = True
        self.pauses += 1

    def _resume(self) -> None:
        self.paused = False
        client, fd = self._client, self._fd
        if client is None or fd < 0:
            return
        loop = asyncio.get_running_loop()
        read = _reader(client)
        loop.add_reader(fd, read)
        loop.call_soon(read)  # bytes already buffered (TLS) raise no readiness event


def _reader(client: aiomqtt.Client) -> Callable[[], None]:
    paho: Any = client._client

    def read() -> None:
        try:
            while True:
                paho.loop_read()
                sock = paho._sock
                if not (hasattr(sock, "pending") and sock.pending() > 0):
                    break
        except Exception as exc:  # the connection broke: end it the way aiomqtt does
            done: asyncio.Future[None] = client._disconnected
            if not done.done():
                done.set_exception(exc)

    return read


class Backpressure:
    """The link's side of all this: one gate on the telemetry socket, one probe, and the
    queue's shedding bound while the probe says shed. `publish(topic, payload, qos)` queues
    a message for the control session and returns False when it could not."""

    def __init__(
        self,
        gateway_id: str,
        inbound: PriorityMessageQueue,
        publish: Callable[[str, bytes, int], bool],
        *,
        shed_after_s: float,
        shed_backlog: int,
        acks: AckTracker | None,
    ) -> None:
        self._inbound = inbound
        self._publish = publish
        self._acks = acks
        # Pause at half the queue's bound (2,000 at most: what the queue holds is memory).
        high = min(2000, max(2, inbound.bound // 2)) if inbound.bound else 2000
        self.gate = ReadGate(high, high // 2)
        self.probe = BacklogProbe(
            probe_topic(gateway_id),
            lambda t, p: publish(t, p, QOS),
            shed_after_s=shed_after_s,
            shed_backlog=shed_backlog,
        )

    @property
    def shedding(self) -> bool:
        return self.probe.shedding

    def bind(self, client: aiomqtt.Client) -> None:
        """A new telemetry connection."""
        self.gate.bind(client)
        self.probe.reconnected()

    def arrived(self) -> None:
        """After each vital queued (in paho's read callback)."""
        self.probe.arrivals += 1
        self.flow()

    def flow(self) -> None:
        """After each vital queued, every few handled, and when the queue runs dry."""
        self.gate.check(self._inbound.telemetry_depth(), open_=self.probe.shedding)

    def room(self) -> int:
        """How many vitals the link may read ahead now (the pump's share)."""
        if self.probe.shedding:
            return 256  # reading fast is the point: the oldest are shed as they come
        if self.gate.paused:
            return 0
        return max(0, min(16, self.gate.high - self._inbound.telemetry_depth()))

    def on_probe(self, message: aiomqtt.Message) -> None:
        """In paho's read callback: ack the probe, time it, and shed or stop shedding."""
        if self._acks is not None:
            self._acks.at_once(message, "probe")
        self.probe.received(message.payload if isinstance(message.payload, bytes) else b"")
        self._inbound.keep = SHED_KEEP if self.probe.shedding else None
        self.flow()

    async def run_probes(self) -> None:
        """For one connection's life."""
        while True:
            await asyncio.sleep(self.probe.every_s)
            self.probe.send()

    def stats(self) -> dict[str, Any]:
        return {
            "lag_s": round(self.probe.lag_s(), 3),
            "lag_readings": self.probe.last_ahead,
            "broker_queue_est": self.probe.queued_est,
            "shedding_behind": self.probe.shedding,
            "read_pauses": self.gate.pauses,
        }
