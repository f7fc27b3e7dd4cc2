"""The broker link's outbound side can never freeze inbound handling (security review, HIGH):
a stolen watch floods malformed payloads (each makes a `rejected` notice) while the sender dies
on a PUBACK timeout with the outbound queue full. Before the fix the reader blocked forever in
a handler waiting for queue space, `/readyz` stayed green and a later SOS was never handled."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from gateway.base.settings import Settings
from gateway.contract.topics import EventType
from gateway.mqtt.link import MqttLink
from gateway.mqtt.outbound_queue import Outbound, OutboundQueue
from healthgw.assembly.hub import assemble
from tests.brokers import Broker
from tests.gateway.mqtt.test_link import (
    SOS,
    VITALS,
    Events,
    FlakyPublish,
    Handled,
    settings,
    started,
    subscriber,
)
from tests.gateway.mqtt.test_link import wait_for as until
from tests.harness import make_settings

OUT_BOUND = 20


async def until_or_timeout(pred: Callable[[], bool], within: float) -> None:
    with contextlib.suppress(AssertionError):
        await until(pred, within)


class StuckThenTimeout(FlakyPublish):
    """The first publish to `topic` hangs until the outbound queue is full (or 3 s), then
    raises MqttError("Operation timed out"), like a PUBACK that never comes."""

    def __init__(self, link: MqttLink, topic: str) -> None:
        super().__init__(link, topic, aiomqtt.MqttError("Operation timed out"))
        self.link = link

    def make(self, role: str = "control") -> aiomqtt.Client:
        client = super().make(role)
        flaky = client.publish

        async def publish(topic: str, *args: Any, **kw: Any) -> None:
            if topic == self.topic and self.raised < self.times:
                await until_or_timeout(lambda: self.link.outbound_depth() >= OUT_BOUND, 3)
            await flaky(topic, *args, **kw)

        client.publish = publish  # type: ignore[method-assign]
        return client


@pytest.mark.integration
async def test_malformed_flood_with_a_dead_sender_cannot_freeze_the_sos_path(
    tmp_path: Path, broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "gateway.runtime.gateway.MqttLink", functools.partial(MqttLink, outbound_size=OUT_BOUND)
    )
    asm = assemble(make_settings(tmp_path / "data", broker, None))
    gw = asm.gateway
    flaky = StuckThenTimeout(gw.link, "gateway/testhub/rejected")
    seen: list[str] = []
    gw.add_event_hook(lambda e: seen.append(str(e.type)))
    await gw.start()
    try:
        await asyncio.wait_for(gw.link.connected.wait(), 10)
        async with aiomqtt.Client("127.0.0.1", broker.port, identifier="stolen-watch") as dev:
            for i in range(300):
                await dev.publish(VITALS, f"not json {i}".encode(), qos=1)
            # The SOS comes after the sender died: it cannot jump a queue the link stopped
            # reading (before the fix, the reader was blocked for good inside a handler).
            await until(lambda: flaky.raised == 1, within=10)
            await asyncio.sleep(0.5)
            await dev.publish(SOS, json.dumps({"action": "start", "ts": time.time()}), qos=1)
        # The SOS is handled within a bound, however the outbound side is doing.
        try:
            await until(lambda: gw.counters["sos_start"] == 1 and "hard_sos" in seen, within=15)
        except AssertionError:
            why = f"{gw.counters['rejected']} rejected, running={gw.link.running()}"
            raise AssertionError(f"the SOS was not handled: {why}, {gw.link.stats()}") from None
        mqtt = gw.stats()["mqtt"]
        assert flaky.raised == 1 and mqtt["failures"].get("send") == 1
        assert mqtt["dropped_outbound"].get("best_effort", 0) > 0  # notices dropped, counted
        await until(lambda: gw.counters["rejected"] >= 300)  # QoS 1: at least once
        await until(lambda: gw.link.connected.is_set())
        assert gw.ready()["mqtt_link"] and gw.link.running()
    finally:
        await gw.stop()


# --- the outbound queue ----------------------------------------------------------------------
def out(topic: str) -> Outbound:
    return Outbound(topic, b"{}", 1, False)


async def test_a_full_important_lane_waits_briefly_in_order_then_drops_at_once() -> None:
    q = OutboundQueue(1, wait_s=0.3)
    assert await q.put(out("a"))
    b, c = (asyncio.create_task(q.put(out(t))) for t in ("b", "c"))
    await asyncio.sleep(0.05)
    assert (await q.get()).topic == "a"
    await asyncio.sleep(0.05)
    assert b.done() and await b and not c.done()  # b took the room, c keeps its place
    assert not await c  # nothing freed room within wait_s: dropped
    assert q.overflowing and q.dropped == {"full": 1}
    t0 = time.monotonic()
    assert not await q.put(out("d"))  # overflowing: dropped at once, not after another wait
    assert time.monotonic() - t0 < 0.1 and q.dropped == {"full": 2}
    assert (await q.get()).topic == "b" and not q.overflowing
    assert await q.put(out("e"))  # room again: the lane flows


async def test_best_effort_notices_never_wait_and_never_crowd_out_events() -> None:
    q = OutboundQueue(10, wait_s=5, best_effort=2)
    assert q.put_nowait(out("n1")) and q.put_nowait(out("n2"))
    t0 = time.monotonic()
    assert not q.put_nowait(out("n3"))  # full: dropped, no wait
    assert time.monotonic() - t0 < 0.05 and q.dropped == {"best_effort": 1}
    assert await q.put(out("event"))  # events have their own room
    assert [(await q.get()).topic for _ in range(3)] == ["event", "n1", "n2"]


async def test_a_publish_with_no_sender_returns_within_its_bound_and_is_announced(
    tmp_path: Path,
) -> None:
    """The old queue made `publish` wait for room forever: with the sender dead, every inbound
    handler that published froze the link."""
    events: Events = []
    link = MqttLink(
        Settings(mqtt_url="mqtt://127.0.0.1:1", gateway_id="nosend", data_dir=tmp_path),
        Handled(),
        [],
        outbound_size=2,
        publish_wait_s=0.2,
        on_event=lambda k, d: events.append((k, d)),
    )  # never started: nothing sends, like a dead sender
    for i in range(2):
        await link.publish(f"out/{i}", {"seq": i})
    await asyncio.wait_for(link.publish("out/2", {"seq": 2}), 2)
    for i in range(3, 50):
        await asyncio.wait_for(link.publish(f"out/{i}", {"seq": i}), 0.1)  # no wait each
    assert link.stats()["dropped_outbound"] == {"full": 48} and link.dropped_outbound == 48
    assert link.stats()["outbound_degraded"] is True
    degraded = [d for k, d in events if k is EventType.MONITORING_DEGRADED]
    assert degraded == [{"sink": "mqtt_outbound", "reason": "queue_full", "bound": 2,
                         "active": True}]  # fmt: skip
    assert [(await link._out.get()).topic for _ in range(2)] == ["out/0", "out/1"]
    recovered = next(d for k, d in events if k is EventType.MONITORING_RECOVERED)
    assert recovered["sink"] == "mqtt_outbound" and recovered["dropped"] == 48
    assert link.stats()["outbound_degraded"] is False


# --- the connection and the dispatcher never wait on each other ------------------------------
@pytest.mark.integration
async def test_a_sender_that_dies_during_a_long_dispatch_ends_the_connection(
    tmp_path: Path, broker: Broker
) -> None:
    """The old reader checked the sender only between messages: a long dispatch hid a dead
    sender, and nothing went out meanwhile."""
    handled = Handled()
    link = MqttLink(settings(broker, tmp_path, "long"), handled, [VITALS, SOS], backoff=(0.1,))
    FlakyPublish(link, "out/1", aiomqtt.MqttError("Operation timed out"))
    async with subscriber(broker, "out/#") as got:
        await started(link)
        try:
            async with aiomqtt.Client("127.0.0.1", broker.port, identifier="dev5") as dev:
                handled.stall = True
                await dev.publish(VITALS, json.dumps({"seq": 0}), qos=1)
                await asyncio.wait_for(handled.stalled.wait(), 10)
                await link.publish("out/1", {"seq": 1})
                # Still inside the first dispatch: the connection is rebuilt and sends anyway.
                await until(lambda: link.failures["send"] == 1 and link.connects == 2)
                await until(lambda: "out/1" in got)
                assert handled.items == [] and link.running()
                await dev.publish(SOS, json.dumps({"seq": 1000}), qos=1)
            handled.release.set()
            await until(lambda: handled.items == [(VITALS, 0), (SOS, 1000)])
        finally:
            await link.stop()


@pytest.mark.integration
async def test_a_dispatch_stuck_with_messages_waiting_is_not_alive_until_restarted(
    tmp_path: Path, broker: Broker
) -> None:
    handled = Handled()
    link = MqttLink(settings(broker, tmp_path, "stuck"), handled, [VITALS, SOS], stall_s=0.3)
    await started(link)
    try:
        async with aiomqtt.Client("127.0.0.1", broker.port, identifier="dev6") as dev:
            handled.stall = True  # never released: a handler stuck for good
            await dev.publish(VITALS, json.dumps({"seq": 0}), qos=1)
            await asyncio.wait_for(handled.stalled.wait(), 10)
            await asyncio.sleep(0.5)
            assert link.running()  # slow, but nobody is waiting on it
            await dev.publish(SOS, json.dumps({"seq": 1000}), qos=1)
        await until(lambda: not link.running(), within=5)
        assert link.stats()["inbound_stalled"] is True and link.connected.is_set()
        handled.stall = False
        await link.start()  # the supervisor's restart hook
        await until(lambda: (SOS, 1000) in handled.items, within=5)
        assert link.running() and link.stats()["stalls"] == 1 and link.connects == 1
    finally:
        await link.stop()


@pytest.mark.integration
async def test_the_supervisor_shows_and_restarts_a_stuck_dispatch_and_the_sos_gets_through(
    tmp_path: Path, broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "gateway.runtime.gateway.MqttLink", functools.partial(MqttLink, stall_s=1.0)
    )
    asm = assemble(make_settings(tmp_path / "data", broker, None))
    gw = asm.gateway
    handler, never = gw.link._on_message, asyncio.Event()

    async def stuck_on_vitals(topic: str, payload: bytes) -> None:
        if topic == VITALS:
            await never.wait()  # e.g. a sink that never answers
        await handler(topic, payload)

    gw.link._on_message = stuck_on_vitals
    await gw.start()
    try:
        await asyncio.wait_for(gw.link.connected.wait(), 10)
        async with aiomqtt.Client("127.0.0.1", broker.port, identifier="dev7") as dev:
            body = {"ts": time.time(), "seq": 1, "heart_rate": 70}
            await dev.publish(VITALS, json.dumps(body), qos=1)
            await until(lambda: gw.stats()["mqtt"]["received"] == 1)
            await dev.publish(SOS, json.dumps({"action": "start", "ts": time.time()}), qos=1)
        await until(lambda: gw.counters["sos_start"] == 1, within=10)
        await until(lambda: gw.supervisor.stats()["mqtt_link"]["restarts"] == 1, within=5)
        link = gw.supervisor.stats()["mqtt_link"]
        assert link["failures"] == 1 and link["last_error"] == "Dead"  # shown, then restarted
        assert gw.ready()["mqtt_link"] and gw.stats()["mqtt"]["stalls"] == 1
    finally:
        await gw.stop()


@pytest.mark.integration
async def test_a_sender_that_swallows_a_cancellation_cannot_hang_the_teardown(
    tmp_path: Path, broker: Broker
) -> None:
    """On Python 3.11, asyncio.wait_for (inside aiomqtt's publish) drops a cancellation that
    lands together with the PUBACK; the sender then waited on the queue for good, and so did
    the connection's teardown (a stop that never returned, a link that never reconnected)."""
    link = MqttLink(settings(broker, tmp_path, "swallow"), Handled(), [VITALS])
    make, swallowed = link._make_client, asyncio.Event()

    def client_with_a_late_puback(role: str = "control") -> aiomqtt.Client:
        client = make(role)
        real = client.publish

        async def publish(topic: str, *args: Any, **kw: Any) -> None:
            if topic != "out/late":
                return await real(topic, *args, **kw)
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                swallowed.set()  # what wait_for does when the result is already there

        client.publish = publish  # type: ignore[method-assign]
        return client

    link._make_client = client_with_a_late_puback  # type: ignore[method-assign]
    await started(link)
    await link.publish("out/late", {"seq": 1})
    await until(lambda: link.outbound_depth() == 1 and not len(link._out))  # being sent
    await asyncio.wait_for(link.stop(drain_timeout=0.1), 10)
    assert swallowed.is_set() and not link.running()
