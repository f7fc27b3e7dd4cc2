"""The gateway's broker link: one persistent aiomqtt session, an explicit reconnect loop with
backoff, resubscribe on every connect, a retained online/offline status with a last will, and
an outbound queue so publishers never fail while the broker is away.

Three parts, so that no one of them can stall another (security review, HIGH):
- the dispatcher (one task for the link's life) hands inbound messages to the gateway, from a
  priority queue that outlives connections (gateway/mqtt_inbound.py), during reconnects too;
- each connection's sender publishes from the outbound queue (gateway/mqtt_outbound.py);
- each connection's watch notices the broker going away.
A connection ends when its sender or its watch does, however long a dispatch takes; the loop
reconnects, and the message the sender was holding goes out first. Publishing never waits on
the outbound queue for long (see there), and a dispatcher that stops making progress with
messages waiting makes the link not alive: the supervisor shows it and restarts it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

import aiomqtt

from gateway.contract import QOS, STATUS_OFFLINE, STATUS_ONLINE, EventType, gateway_status_topic
from gateway.mqtt_acks import AckTracker, Durability
from gateway.mqtt_inbound import (
    Dispatcher,
    Forwarder,
    InboundPressure,
    PriorityMessageQueue,
    cancel_and_wait,
    topic_priority,
)
from gateway.mqtt_outbound import Outbound, OutboundQueue
from gateway.settings import Settings

log = logging.getLogger(__name__)

# The queue lives in gateway/mqtt_inbound.py; re-exported for older imports.
__all__ = [
    "MqttLink",
    "PriorityMessageQueue",
    "SendFailed",
    "encode",
    "tls_params",
    "topic_priority",
]

# May return an asyncio future: the message is acknowledged when it ends (see mqtt_acks).
MessageHandler = Callable[[str, bytes], Awaitable[object]]
# Hub events (person ""): monitoring_degraded/recovered, component_failed/restarted.
HubEventSink = Callable[[EventType, dict[str, Any]], None]
COMPONENT = "mqtt_link"
SEND_TRIES = 5  # a message that fails this often in a row is dropped: it must not block the rest
STABLE_S = 30.0  # a connection that lasted this long resets the reconnect backoff
PUBLISH_WAIT_S = 5.0  # the longest a publish waits for outbound room before it is dropped
STALL_S = 30.0  # no dispatch done this long with messages waiting: the link is not alive


class SendFailed(Exception):
    """A connection's sender stopped (the cause is chained): the connection is torn down."""


def tls_params(s: Settings) -> aiomqtt.TLSParameters | None:
    """TLS for mqtts:// URLs, verified against HEALTHGW_MQTT_CA_FILE or the system's CAs."""
    if not s.mqtt_tls:
        return None
    return aiomqtt.TLSParameters(ca_certs=str(s.mqtt_ca_file) if s.mqtt_ca_file else None)


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[[], None]) -> None:
    """From the store's writer thread; a closed loop (shutdown) has nothing left to ack."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(fn)


def encode(payload: dict[str, Any] | str | bytes) -> bytes:
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, str):
        return payload.encode()
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


class MqttLink:
    """start()/stop() component. `publish` is the `gateway.ports.Publisher` implementation;
    `publish_nowait` is for best-effort notices."""

    def __init__(
        self,
        settings: Settings,
        on_message: MessageHandler,
        subscriptions: Sequence[str],
        *,
        outbound_size: int = 10_000,
        inbound_size: int | None = None,
        # Capped at 2 s: after a broker restart ingest resumes within 2 s of its return.
        backoff: Sequence[float] = (0.25, 0.5, 1, 2),
        on_event: HubEventSink | None = None,
        publish_wait_s: float = PUBLISH_WAIT_S,
        stall_s: float = STALL_S,
        durability: Durability | None = None,
        ack_wait_s: float = 2.0,
    ) -> None:
        self._s = settings
        self._subs = tuple(subscriptions)
        self._backoff = tuple(backoff)
        self._on_event = on_event
        self._out = OutboundQueue(outbound_size, wait_s=publish_wait_s, on_event=self._event)
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._client: aiomqtt.Client | None = None
        self._unsent: Outbound | None = None
        self._pressure = InboundPressure(self._event)
        self._inbound = PriorityMessageQueue(
            settings.queue_size if inbound_size is None else inbound_size,
            on_shed=self._pressure.on_shed,
            on_drop=self._pressure.on_drop,
            on_empty=self._pressure.on_drained,
        )
        self._pressure.queue = self._inbound
        # With a durability source, QoS 1 messages are acknowledged once stored (mqtt_acks);
        # without one, paho acknowledges them on arrival.
        self._acks = None if durability is None else AckTracker(durability, max_wait_s=ack_wait_s)
        if self._acks is not None:
            self._inbound.on_discard = self._acks.discarded
        self._dispatcher = Dispatcher(
            self._inbound,
            on_message,
            stall_s,
            on_done=None if self._acks is None else self._acks.done,
            on_idle=None if self._acks is None else self._acks.idle,
        )
        self.connected = asyncio.Event()
        self.connects = 0
        self.shed = self._pressure.shed  # inbound messages shed, by reason
        self.failures: Counter[str] = Counter()  # connections lost, by cause
        self._unsent_tries = 0
        self._attempt = 0
        self._down_since: float | None = None  # monotonic; set by a loss, cleared on connect
        self.status_topic = gateway_status_topic(settings.gateway_id)

    # --- Publisher ------------------------------------------------------------------------
    async def publish(
        self,
        topic: str,
        payload: dict[str, Any] | str | bytes,
        *,
        qos: int = QOS,
        retain: bool = False,
    ) -> None:
        """Queue for the broker, in order. Waits for room at most `publish_wait_s`, then the
        message is dropped, counted and announced: inbound handlers await this, and must never
        wait forever (an SOS may be queued behind them). See gateway/mqtt_outbound.py."""
        await self._out.put(Outbound(topic, encode(payload), qos, retain))

    def publish_nowait(
        self,
        topic: str,
        payload: dict[str, Any] | str | bytes,
        *,
        qos: int = QOS,
        retain: bool = False,
    ) -> bool:
        """Best effort, never waits: informational notices. False when dropped (counted)."""
        return self._out.put_nowait(Outbound(topic, encode(payload), qos, retain))

    @property
    def _on_message(self) -> MessageHandler:  # tests wrap the gateway's handler in place
        return self._dispatcher.handler

    @_on_message.setter
    def _on_message(self, handler: MessageHandler) -> None:
        self._dispatcher.handler = handler

    @property
    def dropped_outbound(self) -> int:
        return sum(self._out.dropped.values())

    def inbound_depth(self) -> int:
        return self._inbound.qsize()

    def outbound_depth(self) -> int:
        return len(self._out) + (self._unsent is not None)

    def running(self) -> bool:
        """Alive: the connection loop and the dispatcher run, and the dispatcher makes progress
        (the supervisor shows it and calls start() otherwise)."""
        return self._task is not None and not self._task.done() and self._dispatcher.alive()

    def stats(self) -> dict[str, Any]:
        d = self._dispatcher
        return {
            "connected": self.connected.is_set(),
            "connects": self.connects,
            "received": d.received,
            "handler_errors": d.handler_errors,
            "inbound_depth": self._inbound.qsize(),
            "inbound_bound": self._inbound.bound,
            "inbound_class_bound": self._inbound.class_bound,
            "inbound_degraded": self._pressure.degraded(),
            "inbound_stalled": d.stalled(),
            "stalls": d.stalls,
            "coalesced_sos": self._inbound.coalesced_sos,
            "outbound_depth": self.outbound_depth(),
            "outbound_bound": self._out.bound,
            "outbound_degraded": self._out.degraded,
            "shed": dict(self.shed),
            "failures": dict(self.failures),
            "dropped_outbound": dict(self._out.dropped),
            "manual_acks": self._acks is not None,
            "acks": {} if self._acks is None else dict(self._acks.counts),
            "acks_pending": 0 if self._acks is None else self._acks.pending(),
            "acks_bypass": self._acks is not None and self._acks.bypass,
        }

    # --- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        """Start; as the supervisor's restart hook, restart whichever part died or stalled."""
        await self._dispatcher.ensure_running()
        if self._acks is not None:
            loop, acks = asyncio.get_running_loop(), self._acks
            self._acks.durability.on_commit(lambda: _call_soon(loop, acks.release))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="mqtt-link")

    async def stop(self, drain_timeout: float = 5.0) -> None:
        # Let queued notifications leave before we say goodbye.
        if self.connected.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._drained(), drain_timeout)
        self._stopping = True
        client = self._client
        if client is not None and self.connected.is_set():
            with contextlib.suppress(aiomqtt.MqttError, TimeoutError):
                await asyncio.wait_for(
                    client.publish(self.status_topic, STATUS_OFFLINE, qos=QOS, retain=True), 2
                )
        await self._dispatcher.stop()
        if self._task:
            await cancel_and_wait(self._task, every=2.0)  # after _serve's own (every 0.5 s)

    async def _drained(self) -> None:
        while len(self._out) or self._unsent is not None:  # noqa: ASYNC110 - shutdown only
            await asyncio.sleep(0.01)

    def _make_client(self) -> aiomqtt.Client:
        s = self._s
        inbound = self._inbound
        gen = 0 if self._acks is None else self._acks.gen + 1

        def forwarder(maxsize: int = 0) -> asyncio.Queue[aiomqtt.Message]:
            # Every connection feeds the same queue: what arrived is handled after a reconnect.
            return Forwarder(inbound, gen)

        client = aiomqtt.Client(
            s.mqtt_host,
            s.mqtt_port,
            identifier=f"healthgw-{s.gateway_id}",
            # Persistent session: the broker keeps our QoS 1 messages while we restart.
            clean_session=False,
            username=s.mqtt_username,
            password=s.mqtt_password.get_secret_value() if s.mqtt_password else None,
            will=aiomqtt.Will(self.status_topic, STATUS_OFFLINE, qos=QOS, retain=True),
            queue_type=cast("type[asyncio.Queue[aiomqtt.Message]]", forwarder),
            keepalive=30,
            timeout=10,
            tls_params=tls_params(s),
        )
        if self._acks is not None:
            self._acks.bind(client, gen)
        return client

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._stopping:
            cause = "connect"  # until subscribed
            up_at: float | None = None
            try:
                async with self._make_client() as client:
                    self._client = client
                    await self._subscribe(client)
                    up_at = loop.time()
                    cause = "error"
                    try:
                        await self._serve(client)
                    except SendFailed:
                        cause = "send"
                        raise
                    except aiomqtt.MqttError:
                        cause = "disconnected"
                        raise
            except Exception as exc:  # MqttError is the broker, anything else a bug: reconnect
                if self._stopping:
                    break
                if up_at is not None and loop.time() - up_at >= STABLE_S:
                    self._attempt = 0  # a connection that dies at once keeps backing off
                self._lost(cause, exc)
            finally:
                self.connected.clear()
                if self._acks is not None:
                    self._acks.unbind()
            if not self._stopping:
                # The dispatcher keeps handling what already arrived: an SOS in the queue
                # does not wait for the broker to come back.
                await asyncio.sleep(self._backoff[min(self._attempt, len(self._backoff) - 1)])
                self._attempt += 1

    async def _subscribe(self, client: aiomqtt.Client) -> None:
        await client.publish(self.status_topic, STATUS_ONLINE, qos=QOS, retain=True)
        for topic in self._subs:
            await client.subscribe(topic, qos=QOS)
        self.connects += 1
        self.connected.set()
        log.info("connected to broker (connect #%d)", self.connects)
        if self._down_since is not None:
            down_s = time.monotonic() - self._down_since
            self._down_since = None
            self._event(
                EventType.COMPONENT_RESTARTED,
                {"component": COMPONENT, "critical": True, "down_s": round(down_s, 1),
                 "restarts": self.connects - 1},
            )  # fmt: skip

    def _lost(self, cause: str, exc: Exception) -> None:
        self.failures[cause] += 1
        error = type(exc.__cause__ if isinstance(exc, SendFailed) and exc.__cause__ else exc)
        # The class only: a message can quote a topic, and topics name people.
        log.warning("broker link lost (%s: %s); reconnecting", cause, error.__name__)
        if cause == "send":
            self._unsent_tries += 1
            # paho refuses an invalid topic or payload with ValueError/TypeError: never sendable.
            if issubclass(error, ValueError | TypeError):
                self._give_up("unsendable")
            elif self._unsent_tries >= SEND_TRIES:
                self._give_up("send_tries")
        if self._down_since is None:  # once per outage, however many retries it takes
            self._down_since = time.monotonic()
            self._event(
                EventType.COMPONENT_FAILED,
                {"component": COMPONENT, "critical": True, "cause": cause,
                 "error": error.__name__, "failures": sum(self.failures.values())},
            )  # fmt: skip

    def _give_up(self, reason: str) -> None:
        item, tries = self._unsent, self._unsent_tries
        self._unsent, self._unsent_tries = None, 0
        if item is not None:
            self._out.dropped[reason] += 1
            log.error("outbound message dropped after %d failed send(s) (%d bytes, QoS %d)",
                      tries, len(item.payload), item.qos)  # fmt: skip

    async def _serve(self, client: aiomqtt.Client) -> None:
        """One connection's sender and watch: the first to end ends both. Inbound dispatch is
        not part of it, so a long dispatch can never hide a dead sender."""
        sender = asyncio.create_task(self._send_loop(client), name="mqtt-send")
        watch = asyncio.create_task(self._watch(client), name="mqtt-watch")
        tasks = {sender, watch}
        if self._acks is not None:  # overdue acks: only meaningful on a live connection
            tasks.add(asyncio.create_task(self._acks.run(), name="mqtt-acks"))
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            if sender in done:
                cause = None if sender.cancelled() else sender.exception()
                raise SendFailed("the sender stopped") from cause
            if watch in done:
                await watch  # raises the connection's MqttError
            raise aiomqtt.MqttError("the connection watch ended")
        finally:
            for t in tasks:
                if await cancel_and_wait(t, every=0.5) and not t.cancelled():
                    t.exception()  # retrieved: reported above

    @staticmethod
    async def _watch(client: aiomqtt.Client) -> None:
        """Ends in MqttError when the connection drops. aiomqtt's iterator notices that; it
        never yields here, since messages go on to the shared queue (see Forwarder)."""
        async for _ in client.messages:
            pass

    async def _send_loop(self, client: aiomqtt.Client) -> None:
        while True:
            # A message that failed mid-publish goes out first after the reconnect.
            item = self._unsent or await self._out.get()
            self._unsent = item
            await client.publish(item.topic, item.payload, qos=item.qos, retain=item.retain)
            self._unsent, self._unsent_tries = None, 0

    def _event(self, kind: EventType, data: dict[str, Any]) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(kind, data)
        except Exception as exc:  # never into paho's callback or the reconnect loop
            log.error("link event %s not emitted (%s)", kind, type(exc).__name__)
