"""The gateway's broker link: one persistent aiomqtt session, an explicit reconnect loop with
backoff, resubscribe on every connect, a retained online/offline status with a last will, and
an outbound queue so publishers never fail while the broker is away.

Inbound messages wait in one priority queue that outlives connections (gateway/mqtt_inbound.py):
bounded by HEALTHGW_QUEUE_SIZE, shedding the oldest vitals, never an SOS or an ack. A
connection's reader and sender live and die together: if either fails, the connection is torn
down and the loop reconnects; the message the sender was holding goes out first."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import aiomqtt

from gateway.contract import QOS, STATUS_OFFLINE, STATUS_ONLINE, EventType, gateway_status_topic
from gateway.mqtt_inbound import WAKE, PriorityMessageQueue, topic_priority
from gateway.settings import Settings
from gateway.supervise import describe

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

MessageHandler = Callable[[str, bytes], Awaitable[None]]
# Hub events (person ""): monitoring_degraded/recovered, component_failed/restarted.
HubEventSink = Callable[[EventType, dict[str, Any]], None]
COMPONENT = "mqtt_link"
SEND_TRIES = 5  # a message that fails this often in a row is dropped: it must not block the rest
STABLE_S = 30.0  # a connection that lasted this long resets the reconnect backoff


class SendFailed(Exception):
    """A connection's sender stopped (the cause is chained): the connection is torn down."""


@dataclass(frozen=True, slots=True)
class _Outbound:
    topic: str
    payload: bytes
    qos: int
    retain: bool


def tls_params(s: Settings) -> aiomqtt.TLSParameters | None:
    """TLS for mqtts:// URLs, verified against HEALTHGW_MQTT_CA_FILE or the system's CAs."""
    if not s.mqtt_tls:
        return None
    return aiomqtt.TLSParameters(ca_certs=str(s.mqtt_ca_file) if s.mqtt_ca_file else None)


def encode(payload: dict[str, Any] | str | bytes) -> bytes:
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, str):
        return payload.encode()
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


class MqttLink:
    """start()/stop() component. `publish` is the `gateway.ports.Publisher` implementation."""

    def __init__(
        self,
        settings: Settings,
        on_message: MessageHandler,
        subscriptions: Sequence[str],
        *,
        outbound_size: int = 10_000,
        inbound_size: int | None = None,
        backoff: Sequence[float] = (0.5, 1, 2, 5, 10, 30),
        on_event: HubEventSink | None = None,
    ) -> None:
        self._s = settings
        self._on_message = on_message
        self._subs = tuple(subscriptions)
        self._out: asyncio.Queue[_Outbound] = asyncio.Queue(outbound_size)
        self._backoff = tuple(backoff)
        self._on_event = on_event
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._client: aiomqtt.Client | None = None
        self._unsent: _Outbound | None = None
        self._inbound = PriorityMessageQueue(
            settings.queue_size if inbound_size is None else inbound_size,
            on_shed=self._on_shed,
            on_empty=self._on_drained,
        )
        self.connected = asyncio.Event()
        self.connects = 0
        self.received = 0
        self.handler_errors = 0
        self.shed: Counter[str] = Counter()  # vitals shed, by reason
        self.failures: Counter[str] = Counter()  # connections lost, by cause
        self.dropped_outbound = 0  # messages that could never be sent (see _give_up)
        self._unsent_tries = 0
        self._attempt = 0
        self._down_since: float | None = None  # monotonic; set by a loss, cleared on connect
        self._degraded_since: float | None = None  # monotonic; while shedding, until drained
        self._episode_shed = 0
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
        """Queue for the broker; waits only when the outbound queue is full (backpressure)."""
        await self._out.put(_Outbound(topic, encode(payload), qos, retain))

    def inbound_depth(self) -> int:
        return self._inbound.qsize()

    def outbound_depth(self) -> int:
        return self._out.qsize() + (self._unsent is not None)

    def running(self) -> bool:
        """The connection loop is alive (the supervisor restarts it otherwise)."""
        return self._task is not None and not self._task.done()

    def stats(self) -> dict[str, Any]:
        return {
            "connected": self.connected.is_set(),
            "connects": self.connects,
            "received": self.received,
            "handler_errors": self.handler_errors,
            "inbound_depth": self._inbound.qsize(),
            "inbound_bound": self._inbound.bound,
            "inbound_degraded": self._degraded_since is not None,
            "outbound_depth": self.outbound_depth(),
            "shed": dict(self.shed),
            "failures": dict(self.failures),
            "dropped_outbound": self.dropped_outbound,
        }

    # --- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
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
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _drained(self) -> None:
        while not self._out.empty() or self._unsent is not None:  # noqa: ASYNC110 - shutdown only
            await asyncio.sleep(0.01)

    def _make_client(self) -> aiomqtt.Client:
        s = self._s
        inbound = self._inbound

        def shared_queue(maxsize: int = 0) -> asyncio.Queue[aiomqtt.Message]:
            # Every connection fills the same queue: what arrived is handled after a reconnect.
            return inbound

        return aiomqtt.Client(
            s.mqtt_host,
            s.mqtt_port,
            identifier=f"healthgw-{s.gateway_id}",
            # Persistent session: the broker keeps our QoS 1 messages while we restart.
            clean_session=False,
            username=s.mqtt_username,
            password=s.mqtt_password.get_secret_value() if s.mqtt_password else None,
            will=aiomqtt.Will(self.status_topic, STATUS_OFFLINE, qos=QOS, retain=True),
            queue_type=cast("type[asyncio.Queue[aiomqtt.Message]]", shared_queue),
            keepalive=30,
            timeout=10,
            tls_params=tls_params(s),
        )

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
            if not self._stopping:
                await self._pause(self._backoff[min(self._attempt, len(self._backoff) - 1)])
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
            if self._unsent_tries >= SEND_TRIES or issubclass(error, ValueError | TypeError):
                self._give_up()
        if self._down_since is None:  # once per outage, however many retries it takes
            self._down_since = time.monotonic()
            self._event(
                EventType.COMPONENT_FAILED,
                {"component": COMPONENT, "critical": True, "cause": cause,
                 "error": error.__name__, "failures": sum(self.failures.values())},
            )  # fmt: skip

    def _give_up(self) -> None:
        item, tries = self._unsent, self._unsent_tries
        self._unsent, self._unsent_tries = None, 0
        if item is not None:
            self.dropped_outbound += 1
            log.error("outbound message dropped after %d failed send(s) (%d bytes, QoS %d)",
                      tries, len(item.payload), item.qos)  # fmt: skip

    async def _pause(self, delay: float) -> None:
        """The backoff before reconnecting. What already arrived is handled meanwhile: an SOS
        in the queue must not wait for the broker to come back."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + delay
        while not self._inbound.empty() and not self._stopping:
            await self._dispatch(self._inbound.get_nowait())
        await asyncio.sleep(max(0.0, deadline - loop.time()))

    async def _serve(self, client: aiomqtt.Client) -> None:
        """One connection's reader (this task) and sender: the first to fail ends both."""
        sender = asyncio.create_task(self._send_loop(client), name="mqtt-send")
        sender.add_done_callback(self._sender_done)
        try:
            await self._read(client, sender)
        finally:
            sender.cancel()
            await asyncio.wait({sender})
            if not sender.cancelled():
                sender.exception()  # retrieved: _read already reported it

    def _sender_done(self, sender: asyncio.Task[None]) -> None:
        if not sender.cancelled():
            self._inbound.wake()  # an idle reader waits on the broker only: wake it

    async def _read(self, client: aiomqtt.Client, sender: asyncio.Task[None]) -> None:
        """`async for` over aiomqtt's messages when idle (it notices a lost connection), but
        drain a backlog straight from the queue: aiomqtt's iterator makes a task and an
        asyncio.wait per message, which halves sustained throughput. The sender is checked
        between messages, never in the middle of handling one."""
        q = self._inbound
        iterator = client.messages.__aiter__()
        while True:
            if sender.done():
                cause = None if sender.cancelled() else sender.exception()
                raise SendFailed("the sender stopped") from cause
            message = q.get_nowait() if not q.empty() else await iterator.__anext__()
            await self._dispatch(message)

    async def _dispatch(self, message: aiomqtt.Message) -> None:
        if message is WAKE:
            return
        self.received += 1
        payload = message.payload
        if isinstance(payload, str):
            payload = payload.encode()
        elif not isinstance(payload, bytes | bytearray):
            payload = b"" if payload is None else str(payload).encode()
        try:
            await self._on_message(message.topic.value, bytes(payload))
        except Exception as exc:
            # The loop never dies on one message; the handler reports its own rejects. The
            # class and code path only: the message could quote the payload.
            self.handler_errors += 1
            log.error("message handler failed: %s", describe(exc))

    async def _send_loop(self, client: aiomqtt.Client) -> None:
        while True:
            # A message that failed mid-publish goes out first after the reconnect.
            item = self._unsent or await self._out.get()
            self._unsent = item
            await client.publish(item.topic, item.payload, qos=item.qos, retain=item.retain)
            self._unsent, self._unsent_tries = None, 0

    # --- inbound pressure (called on the loop, from paho's read callback or a get) ---------
    def _on_shed(self, n: int) -> None:
        self.shed["queue_full"] += n
        self._episode_shed += n
        if self._degraded_since is None:  # once per episode
            self._degraded_since = time.monotonic()
            log.error(
                "inbound queue at its bound (%d): shedding the oldest vitals; SOS and acks kept",
                self._inbound.bound,
            )
            self._event(
                EventType.MONITORING_DEGRADED,
                {"sink": "mqtt_inbound", "reason": "queue_full", "bound": self._inbound.bound,
                 "active": True},
            )  # fmt: skip

    def _on_drained(self) -> None:
        if self._degraded_since is None:
            return
        degraded_s = time.monotonic() - self._degraded_since
        shed, self._episode_shed, self._degraded_since = self._episode_shed, 0, None
        log.warning("inbound backlog drained after %.1fs; %d vitals shed", degraded_s, shed)
        self._event(
            EventType.MONITORING_RECOVERED,
            {"sink": "mqtt_inbound", "degraded_s": round(degraded_s, 1), "shed": shed,
             "active": False},
        )  # fmt: skip

    def _event(self, kind: EventType, data: dict[str, Any]) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(kind, data)
        except Exception as exc:  # never into paho's callback or the reconnect loop
            log.error("link event %s not emitted (%s)", kind, type(exc).__name__)
