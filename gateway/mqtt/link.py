"""The gateway's broker link: two persistent aiomqtt sessions (control and vitals), an explicit
reconnect loop, resubscribe on every connect, a retained status with a last will, QoS 1 acks
once stored, backpressure, and queues both ways. Three parts, so none can stall another: the
dispatcher (one task for the link's life), each connection's sender, and its watches; when a
sender or a watch ends, the loop reconnects and the held message goes out first. A stalled
dispatcher makes the link not alive: the supervisor restarts it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

import aiomqtt

from gateway.base.backoff import Backoff
from gateway.base.errors import HealthGWError
from gateway.base.settings import Settings
from gateway.contract.topics import (
    QOS,
    STATUS_OFFLINE,
    STATUS_ONLINE,
    EventType,
    gateway_status_topic,
)
from gateway.mqtt.acks import AckTracker, Durability
from gateway.mqtt.backlog import Backpressure
from gateway.mqtt.inbound_queue import (
    Dispatcher,
    Forwarder,
    InboundPressure,
    PriorityMessageQueue,
    cancel_and_wait,
)
from gateway.mqtt.outbound_queue import Outbound, OutboundQueue
from gateway.mqtt.sessions import (
    CONTROL,
    TELEMETRY,
    call_soon,
    encode,
    make_client,
    pump,
    split_subscriptions,
    subscribe_all,
)

log = logging.getLogger(__name__)

__all__ = ["MqttLink", "SendFailed"]

# May return an asyncio future: the message is acknowledged when it ends (see acks.py). Hub
# events (person ""): monitoring_degraded/recovered, component_failed/restarted.
MessageHandler = Callable[[str, bytes], Awaitable[object]]
HubEventSink = Callable[[EventType, dict[str, Any]], None]
COMPONENT = "mqtt_link"
STABLE_S = 30.0  # a connection that lasted this long resets the reconnect backoff
PUBLISH_WAIT_S = 5.0  # the longest a publish waits for outbound room before it is dropped
STALL_S = 30.0  # no dispatch done this long with messages waiting: the link is not alive


class SendFailed(HealthGWError):
    """A connection's sender stopped (the cause is chained): the connection is torn down."""


class MqttLink:
    """start()/stop() component. `publish` is the `gateway.base.ports.Publisher` implementation;
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
        backoff: Backoff | Sequence[float] = (0.25, 0.5, 1, 2),
        on_event: HubEventSink | None = None,
        publish_wait_s: float = PUBLISH_WAIT_S,
        stall_s: float = STALL_S,
        durability: Durability | None = None,
        ack_wait_s: float = 2.0,
        hold: Callable[[], bool] | None = None,
    ) -> None:
        self._s = settings
        self._subs = tuple(subscriptions)
        self._retry = Backoff.of(backoff, reset_after_s=STABLE_S).retry()
        self._on_event = on_event
        self._out = OutboundQueue(outbound_size, wait_s=publish_wait_s, on_event=self._event)
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._client: aiomqtt.Client | None = None
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
            on_idle=self._idle,
            pump=self._pump,
            hold=hold,
        )
        # The telemetry session (vitals only: see gateway/mqtt/sessions.py) and its forwarder.
        self._tele: aiomqtt.Client | None = None
        self._tele_fwd: Forwarder | None = None
        # A backlog waits at the broker, not in memory; shed only when falling behind.
        self.flow = Backpressure(
            settings.gateway_id, self._inbound, self._publish_if_up,
            shed_after_s=settings.shed_after_s, shed_backlog=settings.shed_backlog,
            acks=self._acks,
        )  # fmt: skip
        self.connected = asyncio.Event()
        self.connects = 0
        self.shed = self._pressure.shed  # inbound messages shed, by reason
        self.failures: Counter[str] = Counter()  # connections lost, by cause
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
        wait forever (an SOS may be queued behind them). See gateway/mqtt/outbound_queue.py."""
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
        return self._out.depth()

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
            **self.flow.stats(),
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
            self._acks.durability.on_commit(lambda: call_soon(loop, acks.release))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="mqtt-link")

    async def stop(self, drain_timeout: float = 5.0) -> None:
        if self.connected.is_set():  # notifications leave, what is stored is acked: goodbye
            settle = self._acks.settle() if self._acks is not None else asyncio.sleep(0)
            for step in (self._drained(), settle):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(step, drain_timeout)
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

    def _pump(self) -> None:
        # Reads what the socket holds (unless paused): 16 per 8 handled, 256 while shedding.
        self.flow.flow()
        if self.connected.is_set():
            pump(self._tele, self._tele_fwd, self.flow.room())

    async def _drained(self) -> None:
        while self._out.depth():  # noqa: ASYNC110 - shutdown only
            await asyncio.sleep(0.01)

    def _make_client(self, role: str = CONTROL) -> aiomqtt.Client:
        gen = 0 if self._acks is None else self._acks.next_gen()
        tele = role == TELEMETRY
        probe = (self.flow.probe.topic, self.flow.on_probe) if tele else None
        client, fwd = make_client(self._s, role, self._inbound, gen, self.status_topic, probe,
                                  self.flow.arrived if tele else None)  # fmt: skip
        if role == TELEMETRY:
            self._tele_fwd = fwd
        if self._acks is not None:
            self._acks.bind(client, gen)
        return client

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._stopping:
            cause = "connect"  # until subscribed
            up_at: float | None = None
            try:
                subs = split_subscriptions(self._subs)
                if subs[TELEMETRY]:  # the backlog probe queues behind the vitals
                    subs[TELEMETRY] += (self.flow.probe.topic,)
                async with contextlib.AsyncExitStack() as stack:
                    client = await stack.enter_async_context(self._make_client(CONTROL))
                    self._client = client
                    tele = None
                    if subs[TELEMETRY]:
                        tele = await stack.enter_async_context(self._make_client(TELEMETRY))
                        self._tele = tele
                        self.flow.bind(tele)
                    await self._subscribe(client, subs[CONTROL], tele, subs[TELEMETRY])
                    up_at = loop.time()
                    cause = "error"
                    try:
                        await self._serve(client, tele)
                    except SendFailed:
                        cause = "send"
                        raise
                    except aiomqtt.MqttError:
                        cause = "disconnected"
                        raise
            except Exception as exc:  # MqttError is the broker, anything else a bug: reconnect
                if self._stopping:
                    break
                if up_at is not None:  # one that dies at once keeps backing off
                    self._retry.ran(loop.time() - up_at)
                self._lost(cause, exc)
            finally:
                self.connected.clear()
                self._tele = self._tele_fwd = None
                self.flow.gate.unbind()
                if self._acks is not None:
                    self._acks.unbind()
            if not self._stopping:
                # The dispatcher keeps handling what already arrived: an SOS in the queue
                # does not wait for the broker to come back.
                await asyncio.sleep(self._retry.next())

    async def _subscribe(
        self,
        client: aiomqtt.Client,
        topics: tuple[str, ...],
        tele: aiomqtt.Client | None,
        tele_topics: tuple[str, ...],
    ) -> None:
        await subscribe_all(client, topics)
        if tele is not None:
            await subscribe_all(tele, tele_topics)
        # Online only once subscribed: on a new session, nothing sent after it is missed.
        await client.publish(self.status_topic, STATUS_ONLINE, qos=QOS, retain=True)
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
            self._out.send_failed(error)
        if self._down_since is None:  # once per outage, however many retries it takes
            self._down_since = time.monotonic()
            self._event(
                EventType.COMPONENT_FAILED,
                {"component": COMPONENT, "critical": True, "cause": cause,
                 "error": error.__name__, "failures": sum(self.failures.values())},
            )  # fmt: skip

    async def _serve(self, client: aiomqtt.Client, tele: aiomqtt.Client | None) -> None:
        """One connection's sender and watches (of both sessions): the first to end ends
        them all. Inbound dispatch is not part of it, so a long dispatch can never hide a
        dead sender."""
        sender = asyncio.create_task(self._send_loop(client), name="mqtt-send")
        watch = asyncio.create_task(self._watch(client), name="mqtt-watch")
        tasks = {sender, watch}
        if tele is not None:
            tasks.add(asyncio.create_task(self._watch(tele), name="mqtt-watch-vitals"))
            tasks.add(asyncio.create_task(self.flow.run_probes(), name="mqtt-backlog-probe"))
        if self._acks is not None:  # overdue acks: only meaningful on a live connection
            tasks.add(asyncio.create_task(self._acks.run(), name="mqtt-acks"))
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            if sender in done:
                cause = None if sender.cancelled() else sender.exception()
                raise SendFailed("the sender stopped") from cause
            for t in done:
                if t is not sender and not t.cancelled() and t.exception() is not None:
                    raise cast("BaseException", t.exception())  # the connection's MqttError
            raise aiomqtt.MqttError("a connection watch ended")
        finally:
            for t in tasks:
                if await cancel_and_wait(t, every=0.5) and not t.cancelled():
                    t.exception()  # retrieved: reported above

    def _idle(self) -> None:
        """The inbound queue ran dry: read again, and have what was handled stored and acked."""
        self.flow.flow()
        if self._acks is not None:
            self._acks.idle()

    def _publish_if_up(self, topic: str, payload: bytes, qos: int) -> bool:
        return self.connected.is_set() and self.publish_nowait(topic, payload, qos=qos)

    @staticmethod
    async def _watch(client: aiomqtt.Client) -> None:
        """Ends in MqttError when the connection drops. aiomqtt's iterator notices that; it
        never yields here, since messages go on to the shared queue (see Forwarder)."""
        async for _ in client.messages:
            pass

    async def _send_loop(self, client: aiomqtt.Client) -> None:
        while True:
            # A message that failed mid-publish goes out first after the reconnect.
            item = await self._out.next()
            await client.publish(item.topic, item.payload, qos=item.qos, retain=item.retain)
            self._out.sent()

    def _event(self, kind: EventType, data: dict[str, Any]) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(kind, data)
        except Exception as exc:  # never into paho's callback or the reconnect loop
            log.error("link event %s not emitted (%s)", kind, type(exc).__name__)
