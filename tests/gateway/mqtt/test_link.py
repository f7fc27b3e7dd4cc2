"""The broker link under pressure and failure, against a real mosquitto: a bounded inbound
queue that sheds the oldest vitals but never an SOS or an ack, and a sender that fails (an
injected PUBACK timeout or a bug) tearing the connection down, reconnecting and resending."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from gateway.base.settings import Settings
from gateway.contract.topics import EventType, ack_topic, sos_topic, vitals_topic
from gateway.mqtt.inbound_queue import PriorityMessageQueue
from gateway.mqtt.link import MqttLink
from tests.brokers import Broker

VITALS = vitals_topic("dad", "watch-jon")
SOS = sos_topic("dad", "watch-jon")
ACK = ack_topic("dad", "watch-jon")
Events = list[tuple[EventType, dict[str, Any]]]


async def wait_for(pred: Callable[[], object], within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if pred():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached in time")


def msg(topic: str, n: int = 0) -> aiomqtt.Message:
    return aiomqtt.Message(topic, json.dumps({"seq": n}).encode(), 1, False, n, None)


# --- the queue on its own ------------------------------------------------------------------
def test_queue_sheds_the_oldest_vitals_and_never_an_sos_or_ack() -> None:
    shed: list[int] = []
    q = PriorityMessageQueue(5, on_shed=shed.append)
    for i in range(4):
        q.put_nowait(msg(VITALS, i))
    q.put_nowait(msg(SOS, 100))
    q.put_nowait(msg(ACK, 101))
    for i in range(4, 8):
        q.put_nowait(msg(VITALS, i))  # never QueueFull: aiomqtt would discard it silently
    assert q.qsize() == 5 and q.shed == 5 and sum(shed) == 5
    got = []
    while not q.empty():
        m = q.get_nowait()
        got.append((m.topic.value, json.loads(m.payload)["seq"]))
    # Priority first, then the newest vitals in arrival order.
    assert got == [(SOS, 100), (ACK, 101), (VITALS, 5), (VITALS, 6), (VITALS, 7)]


def test_queue_keeps_every_sos_beyond_the_bound() -> None:
    q = PriorityMessageQueue(3)
    q.put_nowait(msg(VITALS, 0))
    for i in range(5):
        q.put_nowait(msg(SOS, i))
    assert q.qsize() == 5 and q.shed == 1  # the vitals made room; the SOS all stay
    assert all(q.get_nowait().topic.value == SOS for _ in range(5))


# --- against a broker ----------------------------------------------------------------------
def settings(broker: Broker, tmp_path: Path, gateway_id: str) -> Settings:
    return Settings(mqtt_url=broker.url, gateway_id=gateway_id, data_dir=tmp_path)


class Handled:
    """An on_message that records and can be stalled (the gateway busy, e.g. a slow disk)."""

    def __init__(self) -> None:
        self.items: list[tuple[str, int]] = []
        self.release = asyncio.Event()
        self.stall = False
        self.stalled = asyncio.Event()

    async def __call__(self, topic: str, payload: bytes) -> None:
        if self.stall and not self.release.is_set():
            self.stalled.set()
            await self.release.wait()
        self.items.append((topic, json.loads(payload)["seq"]))


async def started(link: MqttLink) -> MqttLink:
    await link.start()
    await asyncio.wait_for(link.connected.wait(), 10)
    return link


@pytest.mark.integration
async def test_stalled_gateway_stops_reading_vitals_loses_none_and_sos_goes_first(
    tmp_path: Path, broker: Broker
) -> None:
    """Backpressure, not shedding: while the handler is stuck, the link stops reading the
    vitals session at half its queue's bound, so the rest wait at the broker; the SOS and
    the ack (the control session, never paused) still arrive and go first; once the
    handler moves, every vital is handled once, in order, and nothing was shed."""
    bound, n = 20, 60
    events: Events = []
    handled = Handled()
    link = MqttLink(
        settings(broker, tmp_path, "shed"),
        handled,
        [VITALS, SOS, ACK],
        inbound_size=bound,
        on_event=lambda k, d: events.append((k, d)),
    )
    await started(link)
    try:
        async with aiomqtt.Client("127.0.0.1", broker.port, identifier="dev") as dev:
            handled.stall = True
            await dev.publish(VITALS, json.dumps({"seq": 0}), qos=1)
            await asyncio.wait_for(handled.stalled.wait(), 10)  # the reader holds message 0
            for i in range(1, n + 1):
                await dev.publish(VITALS, json.dumps({"seq": i}), qos=1)
            await dev.publish(SOS, json.dumps({"seq": 1000}), qos=1)
            await dev.publish(ACK, json.dumps({"seq": 1001}), qos=1)
        high = link.flow.gate.high
        await wait_for(lambda: link.flow.gate.paused and link._inbound.qsize() >= high + 2)
        await asyncio.sleep(0.3)  # were it still reading, more would arrive now
        assert link._inbound.telemetry_depth() == high  # the other vitals wait at the broker
        assert link.stats()["read_pauses"] == 1
        handled.release.set()
        await wait_for(lambda: len(handled.items) == n + 3)
        assert handled.items[:3] == [(VITALS, 0), (SOS, 1000), (ACK, 1001)]
        assert [s for t, s in handled.items[3:]] == list(range(1, n + 1))
        assert not link.shed and not link.stats()["inbound_degraded"]
        assert not [k for k, _ in events if k is EventType.MONITORING_DEGRADED]
    finally:
        await link.stop()


class FlakyPublish:
    """Wraps each new client's publish: the first `times` publishes to `topic` raise."""

    def __init__(self, link: MqttLink, topic: str, error: Exception, times: int = 1) -> None:
        self.topic, self.error, self.raised, self.times = topic, error, 0, times
        self._make = link._make_client
        link._make_client = self.make  # type: ignore[method-assign]

    def make(self, role: str = "control") -> aiomqtt.Client:
        client = self._make(role)
        real: Callable[..., Awaitable[None]] = client.publish

        async def publish(topic: str, *args: Any, **kw: Any) -> None:
            if topic == self.topic and self.raised < self.times:
                self.raised += 1
                raise self.error
            await real(topic, *args, **kw)

        client.publish = publish  # type: ignore[method-assign]
        return client


@contextlib.asynccontextmanager
async def subscriber(broker: Broker, topic: str) -> AsyncIterator[list[str]]:
    got: list[str] = []
    async with aiomqtt.Client("127.0.0.1", broker.port, identifier="sub") as c:
        await c.subscribe(topic, qos=1)

        async def pump() -> None:
            async for m in c.messages:
                got.append(m.topic.value)

        task = asyncio.create_task(pump())
        try:
            yield got
        finally:
            task.cancel()


@pytest.mark.integration
@pytest.mark.parametrize(
    "error",
    [aiomqtt.MqttError("Operation timed out"), RuntimeError("a bug")],
    ids=["puback-timeout", "bug"],
)
async def test_sender_failure_reconnects_and_resends(
    tmp_path: Path, broker: Broker, error: Exception
) -> None:
    events: Events = []
    handled = Handled()
    link = MqttLink(
        settings(broker, tmp_path, "flaky"),
        handled,
        [VITALS],
        backoff=(0.1,),
        on_event=lambda k, d: events.append((k, d)),
    )
    flaky = FlakyPublish(link, "out/1", error)
    async with subscriber(broker, "out/#") as got:
        await started(link)
        try:
            for i in range(3):
                await link.publish(f"out/{i}", {"seq": i})
            # The sender died on out/1 with the reader idle: the link noticed, reconnected
            # and sent out/1 (kept, first) and out/2.
            await wait_for(lambda: {"out/0", "out/1", "out/2"} <= set(got))
            assert flaky.raised == 1
            assert got.index("out/1") < got.index("out/2")
            assert link.failures["send"] == 1 and link.connects == 2
            failed = next(d for k, d in events if k is EventType.COMPONENT_FAILED)
            assert failed["component"] == "mqtt_link" and failed["cause"] == "send"
            assert failed["error"] == type(error).__name__
            assert any(k is EventType.COMPONENT_RESTARTED for k, _ in events)
            assert link.outbound_depth() == 0 and link.connected.is_set()
            # Both directions work on the new connection.
            await link.publish("out/3", {"seq": 3})
            async with aiomqtt.Client("127.0.0.1", broker.port, identifier="dev2") as dev:
                await dev.publish(VITALS, json.dumps({"seq": 7}), qos=1)
            await wait_for(lambda: "out/3" in got and (VITALS, 7) in handled.items)
        finally:
            await link.stop()


@pytest.mark.integration
async def test_queued_sos_is_handled_while_the_link_reconnects(
    tmp_path: Path, broker: Broker
) -> None:
    """The sender fails while an SOS waits in the queue: the teardown keeps the queue, and the
    SOS is handled during the reconnect backoff, not after it."""
    handled = Handled()
    link = MqttLink(settings(broker, tmp_path, "pause"), handled, [VITALS, SOS], backoff=(5,))
    FlakyPublish(link, "out/1", aiomqtt.MqttError("Operation timed out"))
    await started(link)
    try:
        async with aiomqtt.Client("127.0.0.1", broker.port, identifier="dev3") as dev:
            handled.stall = True
            await dev.publish(VITALS, json.dumps({"seq": 0}), qos=1)
            await asyncio.wait_for(handled.stalled.wait(), 10)
            await dev.publish(SOS, json.dumps({"seq": 1000}), qos=1)
        await wait_for(lambda: link.inbound_depth() == 1)
        await link.publish("out/1", {"seq": 1})
        await wait_for(lambda: link.failures["send"] == 0 and link.outbound_depth() == 1)
        handled.release.set()
        await wait_for(lambda: (SOS, 1000) in handled.items, within=2)
        assert link.connects == 1 and not link.connected.is_set()  # still in the backoff
        assert link.failures["send"] == 1
    finally:
        await link.stop()


def test_metrics_show_shedding_link_failures_and_components() -> None:
    from prometheus_client import generate_latest

    from gateway.base.metrics import GatewayCollector, registry_for

    stats = {
        "mqtt": {"inbound_depth": 7, "inbound_bound": 10, "connected": True,
                 "shed": {"queue_full": 42}, "failures": {"send": 1}},
        "components": {"monitor_tick": {"up": False, "critical": True, "failures": 3,
                                        "restarts": 2}},
    }  # fmt: skip
    text = generate_latest(registry_for(GatewayCollector(lambda: stats, {}))).decode()
    assert 'healthgw_mqtt_shed_total{reason="queue_full"} 42.0' in text
    assert "healthgw_mqtt_inbound_depth 7.0" in text
    assert "healthgw_mqtt_inbound_bound 10.0" in text
    assert 'healthgw_mqtt_link_failures_total{cause="send"} 1.0' in text
    assert 'healthgw_mqtt_link_failures_total{cause="disconnected"} 0.0' in text
    assert 'healthgw_component_up{component="monitor_tick",critical="true"} 0.0' in text
    assert 'healthgw_component_failures_total{component="monitor_tick"} 3.0' in text
    assert 'healthgw_component_restarts_total{component="monitor_tick"} 2.0' in text


@pytest.mark.integration
async def test_gateway_at_queue_size_leaves_vitals_at_the_broker_and_answers_an_sos(
    tmp_path: Path, broker: Broker
) -> None:
    """The whole gateway: at HEALTHGW_QUEUE_SIZE the link stops reading vitals (half the
    bound) instead of shedding; the SOS, on the other session, is handled before the vitals
    that waited; afterwards every reading is stored and nothing was shed or announced."""
    from tests.harness import make_settings, running, watching

    bound, n = 10, 30
    s = make_settings(tmp_path / "data", broker, None, queue_size=bound)
    async with running(s) as asm, watching(broker) as w:
        gw = asm.gateway
        release, stalled = asyncio.Event(), asyncio.Event()
        handler = gw.link._on_message
        order: list[str] = []

        async def slow(topic: str, payload: bytes) -> object:
            if not release.is_set():
                stalled.set()
                await release.wait()
            order.append(topic.rsplit("/", 1)[-1])
            return await handler(topic, payload)

        gw.link._on_message = slow
        async with aiomqtt.Client("127.0.0.1", broker.port, identifier="watch") as dev:
            for i in range(n):
                body = {"ts": time.time(), "seq": i, "heart_rate": 70}
                await dev.publish(VITALS, json.dumps(body), qos=1)
            await dev.publish(SOS, json.dumps({"action": "start", "ts": time.time()}), qos=1)
        await asyncio.wait_for(stalled.wait(), 10)
        await wait_for(lambda: gw.link.stats()["read_pauses"] >= 1)
        await wait_for(lambda: gw.link._inbound.head_priority() == 0)  # the SOS is queued
        assert gw.link._inbound.telemetry_depth() <= bound // 2
        release.set()
        await wait_for(lambda: gw.counters["sos_start"] == 1)
        await wait_for(lambda: gw.counters["readings"] == n)
        assert order.index("sos") <= 1  # after the reading in hand at most
        stats = gw.stats()["mqtt"]
        assert stats["shed"] == {} and stats["inbound_bound"] == bound
        assert not w.events("monitoring_degraded")


@pytest.mark.integration
async def test_a_message_that_can_never_be_sent_is_dropped_not_retried_forever(
    tmp_path: Path, broker: Broker
) -> None:
    """paho refuses a wildcard topic (ValueError): dropped and counted at once; a message that
    keeps failing is dropped after SEND_TRIES. Either way the rest of the queue goes out."""
    link = MqttLink(settings(broker, tmp_path, "poison"), Handled(), [VITALS], backoff=(0.05,))
    FlakyPublish(link, "out/stuck", aiomqtt.MqttError("Operation timed out"), times=10**6)
    async with subscriber(broker, "out/#") as got:
        await started(link)
        try:
            await link.publish("out/#", {"seq": 0})  # invalid: a wildcard
            await link.publish("out/stuck", {"seq": 1})
            await link.publish("out/after", {"seq": 2})
            await wait_for(lambda: "out/after" in got)
            assert link.dropped_outbound == 2 and "out/stuck" not in got
            assert link.failures["send"] == 1 + 5  # SEND_TRIES
            assert link.outbound_depth() == 0
        finally:
            await link.stop()
