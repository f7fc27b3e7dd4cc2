"""The gateway's broker link: one persistent aiomqtt session, an explicit reconnect loop with
backoff, resubscribe on every connect, a retained online/offline status with a last will, and
an outbound queue so publishers never fail while the broker is away."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiomqtt

from gateway.contract import QOS, STATUS_OFFLINE, STATUS_ONLINE, gateway_status_topic
from gateway.settings import Settings

log = logging.getLogger(__name__)

MessageHandler = Callable[[str, bytes], Awaitable[None]]

# Lower is sooner. An SOS press must never wait behind a backlog of vitals.
_PRIORITY_BY_LEAF = {"sos": 0, "ack": 1, "status": 2, "intent": 3}
_counter = itertools.count()


def topic_priority(topic: str) -> int:
    return _PRIORITY_BY_LEAF.get(topic.rsplit("/", 1)[-1], 5)


class PriorityMessageQueue(asyncio.Queue[aiomqtt.Message]):
    """aiomqtt's inbound queue, ordered by topic priority then arrival (FIFO within a class)."""

    def _init(self, maxsize: int) -> None:
        self._heap: list[tuple[int, int, aiomqtt.Message]] = []

    def _put(self, item: aiomqtt.Message) -> None:
        heapq.heappush(self._heap, (topic_priority(item.topic.value), next(_counter), item))

    def _get(self) -> aiomqtt.Message:
        return heapq.heappop(self._heap)[2]

    def qsize(self) -> int:
        return len(self._heap)

    def empty(self) -> bool:
        return not self._heap

    def full(self) -> bool:
        return 0 < self.maxsize <= len(self._heap)


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
        backoff: Sequence[float] = (0.5, 1, 2, 5, 10, 30),
    ) -> None:
        self._s = settings
        self._on_message = on_message
        self._subs = tuple(subscriptions)
        self._out: asyncio.Queue[_Outbound] = asyncio.Queue(outbound_size)
        self._backoff = tuple(backoff)
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._client: aiomqtt.Client | None = None
        self._unsent: _Outbound | None = None
        self._inbound: PriorityMessageQueue | None = None
        self.connected = asyncio.Event()
        self.connects = 0
        self.received = 0
        self.handler_errors = 0
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
        return len(self._client.messages) if self._client is not None else 0

    def outbound_depth(self) -> int:
        return self._out.qsize() + (self._unsent is not None)

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
        link = self

        class _Inbound(PriorityMessageQueue):
            # Keep a handle on the queue aiomqtt builds for us (see _read).
            def __init__(self, maxsize: int = 0) -> None:
                super().__init__(maxsize)
                link._inbound = self

        return aiomqtt.Client(
            s.mqtt_host,
            s.mqtt_port,
            identifier=f"healthgw-{s.gateway_id}",
            # Persistent session: the broker keeps our QoS 1 messages while we restart.
            clean_session=False,
            username=s.mqtt_username,
            password=s.mqtt_password.get_secret_value() if s.mqtt_password else None,
            will=aiomqtt.Will(self.status_topic, STATUS_OFFLINE, qos=QOS, retain=True),
            queue_type=_Inbound,
            keepalive=30,
            timeout=10,
            tls_params=tls_params(s),
        )

    async def _run(self) -> None:
        attempt = 0
        while not self._stopping:
            try:
                async with self._make_client() as client:
                    self._client = client
                    await client.publish(self.status_topic, STATUS_ONLINE, qos=QOS, retain=True)
                    for topic in self._subs:
                        await client.subscribe(topic, qos=QOS)
                    self.connects += 1
                    attempt = 0
                    self.connected.set()
                    log.info("connected to broker (connect #%d)", self.connects)
                    sender = asyncio.create_task(self._send_loop(client), name="mqtt-send")
                    try:
                        await self._read(client)
                    finally:
                        sender.cancel()
                        with contextlib.suppress(asyncio.CancelledError, aiomqtt.MqttError):
                            await sender
            except aiomqtt.MqttError as exc:
                if self._stopping:
                    break
                delay = self._backoff[min(attempt, len(self._backoff) - 1)]
                attempt += 1
                log.warning(
                    "broker link lost (%s); reconnecting in %.1fs", type(exc).__name__, delay
                )
                self.connected.clear()
                await asyncio.sleep(delay)
            finally:
                self.connected.clear()

    async def _read(self, client: aiomqtt.Client) -> None:
        """`async for` over aiomqtt's messages when idle (it notices a lost connection), but
        drain a backlog straight from the queue: aiomqtt's iterator makes a task and an
        asyncio.wait per message, which halves sustained throughput."""
        q = self._inbound
        iterator = client.messages.__aiter__()
        while True:
            if q is not None and not q.empty():
                message = q.get_nowait()
            else:
                message = await iterator.__anext__()
            await self._dispatch(message)

    async def _dispatch(self, message: aiomqtt.Message) -> None:
        self.received += 1
        payload = message.payload
        if isinstance(payload, str):
            payload = payload.encode()
        elif not isinstance(payload, bytes | bytearray):
            payload = b"" if payload is None else str(payload).encode()
        try:
            await self._on_message(message.topic.value, bytes(payload))
        except Exception:
            # The loop never dies on one message; the handler reports its own rejects.
            self.handler_errors += 1
            log.exception("message handler failed")

    async def _send_loop(self, client: aiomqtt.Client) -> None:
        while True:
            # A message that failed mid-publish goes out first after the reconnect.
            item = self._unsent or await self._out.get()
            self._unsent = item
            await client.publish(item.topic, item.payload, qos=item.qos, retain=item.retain)
            self._unsent = None
