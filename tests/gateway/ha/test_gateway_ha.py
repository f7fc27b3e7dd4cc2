"""The running gateway publishes Home Assistant discovery and the retained per-person state:
a new subscriber (Home Assistant starting) gets both, the state follows readings and SOS, and
a person removed from the household has their entities and state cleared at the next start."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import aiomqtt
import pytest
import yaml

from gateway.contract.topics import sos_topic, state_topic, vitals_topic
from tests.brokers import Broker
from tests.harness import ROOT, device, make_settings, publish, running


async def _retained(broker: Broker, topic_filter: str, quiet_s: float = 0.7) -> dict[str, bytes]:
    got: dict[str, bytes] = {}
    async with aiomqtt.Client("127.0.0.1", broker.port, identifier="ha-like") as c:
        await c.subscribe(topic_filter, qos=1)
        while True:
            try:
                m = await asyncio.wait_for(anext(aiter(c.messages)), quiet_s)
            except TimeoutError:
                return got
            # Live deliveries (published after we subscribed) carry no retain flag; an empty
            # payload is a cleared retained message.
            body = bytes(m.payload)  # type: ignore[arg-type]
            if body:
                got[m.topic.value] = body
            else:
                got.pop(m.topic.value, None)


async def _state(
    broker: Broker, person: str, pred: object, within: float = 10.0
) -> dict[str, object]:
    deadline = time.monotonic() + within
    last: dict[str, object] = {}
    while time.monotonic() < deadline:
        got = await _retained(broker, state_topic(person), 0.3)
        if got.get(state_topic(person)):
            last = json.loads(got[state_topic(person)])
            if pred(last):  # type: ignore[operator]
                return last
        await asyncio.sleep(0.2)
    raise AssertionError(f"state never matched: {sorted(last)}")


async def test_gateway_publishes_discovery_and_state(tmp_path: Path, broker: Broker) -> None:
    s = make_settings(tmp_path / "data", broker, None)
    async with running(s), device(broker) as dev:
        configs = await _retained(broker, "homeassistant/#")
        assert any("/healthgw_testhub_grandma/" in t for t in configs)
        assert "homeassistant/binary_sensor/healthgw_testhub_grandma/sos/config" in configs
        await publish(
            dev,
            vitals_topic("grandma", "watch-maria"),
            {"ts": time.time(), "seq": 1, "heart_rate": 77, "spo2": 96, "battery": 55},
        )
        st = await _state(broker, "grandma", lambda d: d["vitals"].get("heart_rate") == 77)
        assert st["sos"] == "off"
        await publish(
            dev, sos_topic("grandma", "watch-maria"), {"action": "start", "ts": time.time()}
        )
        st = await _state(broker, "grandma", lambda d: d["sos"] == "on")
        assert st["devices"]["watch-maria"]["battery"] == 55  # type: ignore[index]

    # The person leaves the household: the next start clears their entities and state.
    hh = yaml.safe_load((ROOT / "examples" / "household.yaml").read_text())
    hh["persons"] = [p for p in hh["persons"] if p["id"] != "dad"]
    small = tmp_path / "household.yaml"
    small.write_text(yaml.safe_dump(hh))
    async with running(make_settings(tmp_path / "data", broker, None, household=small)):
        await asyncio.sleep(0.5)
        configs = await _retained(broker, "homeassistant/#")
        assert not any("_dad/" in t for t in configs)
        assert any("_grandma/" in t for t in configs)
        assert state_topic("dad") not in await _retained(broker, "health/+/state")


async def test_devices_remove_clears_the_device_entities(
    tmp_path: Path, broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    from healthgw.cli import main

    data = tmp_path / "data"
    async with running(make_settings(data, broker, None)):
        await asyncio.sleep(0.3)
    before = await _retained(broker, "homeassistant/#")
    assert any("watch-jon_battery" in t for t in before)
    monkeypatch.setenv("HEALTHGW_MQTT_URL", broker.url)
    monkeypatch.setenv("HEALTHGW_DATA_DIR", str(data))
    monkeypatch.setenv("HEALTHGW_GATEWAY_ID", "testhub")
    monkeypatch.setenv("HEALTHGW_HOUSEHOLD", str(ROOT / "examples" / "household.yaml"))
    auth = ["--auth-dir", str(tmp_path / "auth")]
    assert await asyncio.to_thread(main, ["devices", "add", "dad", "watch-jon", *auth]) == 0
    assert await asyncio.to_thread(main, ["devices", "remove", "dad", "watch-jon", *auth]) == 0
    after = await _retained(broker, "homeassistant/#")
    assert not any("watch-jon" in t for t in after)
    # Dad is still in the household: his own entities stay.
    assert "homeassistant/sensor/healthgw_testhub_dad/heart_rate/config" in after
