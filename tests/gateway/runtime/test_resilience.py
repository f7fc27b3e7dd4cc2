"""Restarts and a flaky broker: nothing accepted is lost."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from gateway.contract.topics import vitals_topic
from tests.brokers import Broker
from tests.harness import device, make_settings, publish, running

pytestmark = pytest.mark.integration
TOPIC = vitals_topic("dad", "watch-jon")


async def wait_for(pred: object, within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if pred():  # type: ignore[operator]
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached in time")


async def test_gateway_reconnects_and_resubscribes_after_broker_restart(
    tmp_path: Path, broker: Broker
) -> None:
    s = make_settings(tmp_path / "data", broker, None)
    async with running(s) as asm:
        gw = asm.gateway
        async with device(broker, "d1") as dev:
            await publish(dev, TOPIC, {"ts": time.time(), "seq": 1, "heart_rate": 70})
        await wait_for(lambda: gw.counters["readings"] == 1)
        broker.stop()
        await wait_for(lambda: not gw.link.connected.is_set())
        broker.start()  # same port, same persistence
        await wait_for(lambda: gw.link.connected.is_set() and gw.link.connects >= 2, 30)
        async with device(broker, "d2") as dev:
            await publish(dev, TOPIC, {"ts": time.time(), "seq": 2, "heart_rate": 71})
        await wait_for(lambda: gw.counters["readings"] == 2)


async def test_readings_sent_while_the_gateway_is_down_arrive_after_restart(
    tmp_path: Path, broker: Broker
) -> None:
    s = make_settings(tmp_path / "data", broker, None)
    async with running(s):
        pass  # first start registers the persistent session and its subscriptions
    async with device(broker, "d3") as dev:
        for i in range(20):
            await publish(dev, TOPIC, {"ts": time.time(), "seq": 100 + i, "heart_rate": 60 + i % 5})
    async with running(s) as asm:
        await wait_for(lambda: asm.gateway.counters["readings"] == 20)
        asm.gateway.store.flush()
        assert len(asm.gateway.store.readings("dad", limit=100)) == 20


async def test_qos1_redelivery_is_not_counted_twice(tmp_path: Path, broker: Broker) -> None:
    s = make_settings(tmp_path / "data", broker, None)
    async with running(s) as asm, device(broker, "d4") as dev:
        body = {"ts": time.time(), "seq": 7, "heart_rate": 70}
        await publish(dev, TOPIC, body)
        await publish(dev, TOPIC, body)  # what a redelivery looks like
        await wait_for(lambda: asm.gateway.counters["received"] == 2)
        assert asm.gateway.counters["readings"] == 1 and asm.gateway.counters["duplicates"] == 1
