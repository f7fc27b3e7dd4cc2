"""Home Assistant MQTT discovery: the pure config builders, the removal diff and its state file,
then the component and the CLI's clear function against a real mosquitto."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
import yaml

from gateway.base.clock import ManualClock
from gateway.base.settings import Settings
from gateway.contract.topics import (
    NUMERIC_VITALS,
    DeviceState,
    StatePayload,
    gateway_status_topic,
    state_topic,
)
from gateway.ha.discovery import (
    HomeAssistantDiscovery,
    Published,
    clear_ha_entities,
    clear_with_settings,
    load_published,
    plan,
    save_published,
)
from gateway.ha.messages import (
    STATE_FILE,
    DiscoveryMessage,
    device_topics,
    discovery_messages,
    person_identifier,
    person_topics,
)
from gateway.household.model import Household
from gateway.household.state import PersonStatePublisher, RetainedPublish
from tests.brokers import Broker

ROOT = Path(__file__).resolve().parents[3]
GW = "testhub"
TOPIC_RE = re.compile(
    r"^homeassistant/(sensor|binary_sensor)/(healthgw_[A-Za-z0-9_-]+)/([A-Za-z0-9_-]+)/config$"
)


def household_dict() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "examples" / "household.yaml").read_text())
    assert isinstance(data, dict)
    return data


def example() -> Household:
    return Household.model_validate(household_dict())


def smaller() -> Household:
    """grandma has moved out; dad gave his watch back and has a new one."""
    data = household_dict()
    data["persons"] = [p for p in data["persons"] if p["id"] == "dad"]
    data["persons"][0]["devices"] = [{"id": "band-jon", "interval_s": 60}]
    return Household.model_validate(data)


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, bool]] = []

    async def __call__(
        self, topic: str, payload: dict[str, Any] | str | bytes, *, retain: bool = False
    ) -> None:
        self.calls.append((topic, payload, retain))

    def cleared(self) -> list[str]:
        return [t for t, p, _ in self.calls if p in (b"", "")]


# --- pure builders ----------------------------------------------------------------------------


def test_every_config_is_json_with_the_required_keys_on_a_valid_topic() -> None:
    hh = example()
    msgs = discovery_messages(hh, GW, sw_version="0.1.0")
    assert msgs, "nothing to publish"
    for m in msgs:
        match = TOPIC_RE.match(m.topic)
        assert match, m.topic
        assert match.group(1) == m.component
        cfg = json.loads(m.encoded())
        assert cfg == m.payload
        for key in ("name", "unique_id", "state_topic", "device", "origin", "qos"):
            assert key in cfg, (m.topic, key)
        assert cfg["origin"] == {"name": "healthgw", "sw_version": "0.1.0"}
        assert cfg["device"]["identifiers"] and cfg["device"]["manufacturer"] == "healthgw"
        if m.person is None:  # the hub reports its own status: no availability on it
            assert cfg["state_topic"] == gateway_status_topic(GW)
            assert (cfg["payload_on"], cfg["payload_off"]) == ("online", "offline")
            continue
        assert match.group(2) == person_identifier(GW, m.person)
        assert cfg["state_topic"] == state_topic(m.person)
        if "availability" in cfg:  # the NEWS2 level: the hub's status and a level present
            assert cfg["availability"][0]["topic"] == gateway_status_topic(GW)
            assert cfg["availability_mode"] == "all" and "availability_topic" not in cfg
        else:
            assert cfg["availability_topic"] == gateway_status_topic(GW)
            assert (cfg["payload_available"], cfg["payload_not_available"]) == (
                "online",
                "offline",
            )
        assert cfg["device"]["identifiers"] == [f"healthgw_{GW}_{m.person}"]
        assert cfg["device"]["via_device"] == f"healthgw_{GW}"
        assert "{{" in cfg["value_template"]
    assert len({m.topic for m in msgs}) == len(msgs)
    assert len({m.payload["unique_id"] for m in msgs}) == len(msgs)


def test_each_person_is_one_device_named_after_them_with_the_expected_entities() -> None:
    hh = example()
    msgs = discovery_messages(hh, GW)
    for p in hh.persons:
        mine = {m.topic.split("/")[3]: m.payload for m in msgs if m.person == p.id}
        assert {cfg["device"]["name"] for cfg in mine.values()} == {p.name}
        expected = {*NUMERIC_VITALS, "news2_score", "news2_level", "sos", "open_alerts"}
        for d in p.devices:
            expected |= {f"{d.id}_battery", f"{d.id}_connectivity"}
        assert set(mine) == expected
        for v in NUMERIC_VITALS:
            assert mine[v]["state_class"] == "measurement"
        assert mine["heart_rate"]["unit_of_measurement"] == "bpm"
        assert mine["spo2"]["unit_of_measurement"] == "%"
        assert mine["systolic_bp"]["unit_of_measurement"] == "mmHg"
        assert mine["respiratory_rate"]["unit_of_measurement"] == "breaths/min"
        temp = mine["temperature_c"]
        assert (temp["device_class"], temp["unit_of_measurement"]) == ("temperature", "°C")
        level = mine["news2_level"]
        assert level["device_class"] == "enum"
        assert level["options"] == ["low", "low-medium", "medium", "high"]
        # HA refuses options together with a unit or a state class.
        assert "unit_of_measurement" not in level and "state_class" not in level
        sos = mine["sos"]
        assert (sos["device_class"], sos["payload_on"], sos["payload_off"]) == (
            "safety",
            "on",
            "off",
        )
        for d in p.devices:
            battery = mine[f"{d.id}_battery"]
            assert (battery["device_class"], battery["unit_of_measurement"]) == ("battery", "%")
            assert mine[f"{d.id}_connectivity"]["device_class"] == "connectivity"
        # The CLI's topic list is the same naming scheme.
        assert sorted(m.topic for m in msgs if m.person == p.id) == sorted(
            person_topics("homeassistant", GW, p.id, [d.id for d in p.devices])
        )


_REF = re.compile(r"value_json((?:\.[A-Za-z_][A-Za-z0-9_]*|\['[^']+'\])+)")


def _paths(template: str) -> list[list[str]]:
    """Each `value_json...` reference as its list of keys: ["devices", "watch-jon"]."""
    out = []
    for ref in _REF.findall(template):
        pairs: list[tuple[str, str]] = re.findall(r"\.([A-Za-z_]\w*)|\['([^']+)'\]", ref)
        out.append([a or b for a, b in pairs])
    return out


def test_templates_reference_only_keys_the_state_payload_has() -> None:
    hh = example()
    top = set(StatePayload.model_fields)
    device_fields = set(DeviceState.model_fields)
    seen: set[str] = set()
    for m in discovery_messages(hh, GW):
        devices = {d.id for p in hh.persons if p.id == m.person for d in p.devices}
        for key in ("value_template", "json_attributes_template"):
            template = m.payload.get(key)
            if template is None:
                continue
            for names in _paths(template):
                assert names[0] in top, (m.topic, names)
                seen.add(names[0])
                if names[0] == "vitals":
                    assert len(names) == 2 and names[1] in NUMERIC_VITALS
                if names[0] == "devices":
                    assert names[1] in devices
                    assert all(n in device_fields for n in names[2:])
        # Device expressions are written `(value_json.devices['x'] | default({})).field`.
        value = str(m.payload.get("value_template", ""))
        for dev, fld in re.findall(r"devices\['([^']+)'\] \| default\(\{\}\)\)\.(\w+)", value):
            assert dev in devices and fld in device_fields
    assert {"vitals", "news2_total", "news2_level", "sos", "open_alerts", "devices"} <= seen


def test_prefix_is_used_and_trailing_slashes_ignored() -> None:
    msgs = discovery_messages(example(), GW, prefix="ha/disc/")
    assert all(m.topic.startswith("ha/disc/") and "//" not in m.topic for m in msgs)


# --- rendering the templates (jinja2, the engine Home Assistant uses) ------------------------


class FakeMonitor:
    def __init__(self) -> None:
        self.vitals: dict[str, dict[str, Any]] = {
            "dad": {
                "heart_rate": {"value": 72.0, "ts": 1.0},
                "spo2": {"value": 96.0, "ts": 1.0},
                "temperature_c": {"value": 37.2, "ts": 1.0},
            }
        }
        self.alerts: dict[str, list[Any]] = {"dad": [{"alert_id": "a"}, {"alert_id": "b"}]}

    def latest_vitals(self, person: str) -> dict[str, Any]:
        return self.vitals.get(person, {})

    def latest_news2(self, person: str) -> dict[str, Any] | None:
        return {"total": 5, "level": "medium"} if person == "dad" else None

    def open_alert_count(self, person: str) -> int:
        return len(self.alerts.get(person, []))

    def alert_priority(self, person: str) -> str | None:
        return "medium" if self.alerts.get(person) else None

    def device_state(self, person: str, device: str) -> str:
        return {"watch-jon": "active", "watch-maria": "stale"}.get(device, "unknown")


def rows() -> dict[tuple[str, str], dict[str, Any]]:
    return {("dad", "watch-jon"): {"battery": 64.0, "last_seen": 1_790_000_000.0}}


async def published_states(publish: RetainedPublish, hh: Household) -> PersonStatePublisher:
    pub = PersonStatePublisher(hh, FakeMonitor(), rows, publish, ManualClock(), tick_s=3600)
    await pub.start()
    await pub.stop()
    return pub


def _render(template: str, state: dict[str, Any]) -> str:
    jinja2 = pytest.importorskip("jinja2")
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    # HA renders with a sandboxed environment whose Undefined raises on attribute access;
    # the default jinja2.Undefined does the same, so a template that is not robust to a
    # missing key fails here too.
    env = ImmutableSandboxedEnvironment(undefined=jinja2.Undefined)
    out: str = env.from_string(template).render(value_json=state, value=json.dumps(state))
    return out.strip()


def _by_object(hh: Household, person: str) -> dict[str, dict[str, Any]]:
    return {
        m.topic.split("/")[3]: m.payload for m in discovery_messages(hh, GW) if m.person == person
    }


async def test_templates_render_the_published_state() -> None:
    pytest.importorskip("jinja2")
    hh = example()
    rec = Recorder()
    await published_states(rec, hh)
    # What the broker would hand HA: the JSON bytes of the retained state.
    states = {t: json.loads(json.dumps(p)) for t, p, _ in rec.calls}
    dad = states[state_topic("dad")]
    StatePayload.model_validate(dad)
    cfg = _by_object(hh, "dad")
    rendered = {k: _render(v["value_template"], dad) for k, v in cfg.items()}
    assert rendered["heart_rate"] == "72.0"
    assert rendered["spo2"] == "96.0"
    assert rendered["temperature_c"] == "37.2"
    assert rendered["systolic_bp"] == "None"  # never measured: HA shows unknown
    assert rendered["respiratory_rate"] == "None"
    assert rendered["news2_score"] == "5"
    assert rendered["news2_level"] == "medium"
    assert rendered["sos"] == "off"
    assert rendered["open_alerts"] == "2"
    assert rendered["watch-jon_battery"] == "64.0"
    assert rendered["watch-jon_connectivity"] == "on"
    attrs = json.loads(_render(cfg["watch-jon_connectivity"]["json_attributes_template"], dad))
    assert attrs["device_state"] == "active" and attrs["battery"] == 64.0
    # The open alerts' highest priority rides on the sensor (automations can skip "low").
    assert json.loads(_render(cfg["open_alerts"]["json_attributes_template"], dad)) == {
        "priority": "medium"
    }

    maria = states[state_topic("grandma")]
    mcfg = _by_object(hh, "grandma")
    assert _render(mcfg["heart_rate"]["value_template"], maria) == "None"
    assert _render(mcfg["news2_level"]["value_template"], maria) == "None"
    assert _render(mcfg["news2_score"]["value_template"], maria) == "None"
    assert _render(mcfg["watch-maria_battery"]["value_template"], maria) == "None"
    assert _render(mcfg["watch-maria_connectivity"]["value_template"], maria) == "off"


@pytest.mark.parametrize(
    ("state", "expected"),
    [("active", "on"), ("ok", "on"), ("not_worn", "on"), ("stale", "off"), ("offline", "off"),
     ("unknown", "None")],
)  # fmt: skip
def test_connectivity_follows_the_device_state(state: str, expected: str) -> None:
    pytest.importorskip("jinja2")
    cfg = _by_object(example(), "dad")["watch-jon_connectivity"]
    payload = {"devices": {"watch-jon": {"state": state, "battery": None, "last_seen": None}}}
    assert _render(cfg["value_template"], payload) == expected


def test_templates_survive_missing_keys() -> None:
    pytest.importorskip("jinja2")
    cfg = _by_object(example(), "dad")
    # A device the state does not list yet, and a state with no vitals at all.
    bare = {"person": "dad", "ts": "x", "vitals": {}, "devices": {}}
    for obj, c in cfg.items():
        assert _render(c["value_template"], bare) == "None", obj
    for obj in ("sos", "news2_level"):
        assert _render(cfg[obj]["value_template"], {"vitals": {}, "devices": {}}) == "None"


# --- removal diff and the state file -----------------------------------------------------------


def test_plan_clears_removed_devices_and_persons_twice_then_forgets() -> None:
    first = plan(Published(), discovery_messages(example(), GW), ["grandma", "dad"])
    assert first.clear == [] and first.clear_persons == []
    second_msgs = discovery_messages(smaller(), GW)
    second = plan(first.published, second_msgs, ["dad"])
    gone = set(first.published.topics) - {m.topic for m in second_msgs}
    assert gone == set(person_topics("homeassistant", GW, "grandma", ["watch-maria"])) | set(
        device_topics("homeassistant", GW, "dad", "watch-jon")
    )
    assert sorted(second.clear) == sorted(gone)
    assert second.clear_persons == ["grandma"]
    assert all(m.topic not in gone for m in second.configs)
    # The next start clears them once more (the hub may have stopped before the broker got
    # the first clear), then never again.
    third = plan(second.published, second_msgs, ["dad"])
    assert sorted(third.clear) == sorted(gone) and third.clear_persons == ["grandma"]
    fourth = plan(third.published, second_msgs, ["dad"])
    assert fourth.clear == [] and fourth.clear_persons == []
    # Coming back is not undone by the pending second clear (only the new watch goes).
    back = plan(second.published, discovery_messages(example(), GW), ["grandma", "dad"])
    assert back.clear == sorted(device_topics("homeassistant", GW, "dad", "band-jon"))
    assert back.clear_persons == []


def test_state_file_round_trip_and_bad_files(tmp_path: Path) -> None:
    path = tmp_path / STATE_FILE
    assert load_published(path) == Published()
    p = plan(Published(), discovery_messages(example(), GW), ["grandma", "dad"]).published
    p.cleared = ["homeassistant/sensor/x/y/config"]
    p.cleared_persons = ["ghost"]
    save_published(path, p)
    assert load_published(path) == p
    path.write_text("{not json")
    assert load_published(path) == Published()
    path.write_text(json.dumps({"version": 99}))
    assert load_published(path) == Published()


async def test_component_remembers_and_clears(tmp_path: Path) -> None:
    rec = Recorder()
    await HomeAssistantDiscovery(example(), rec, gateway_id=GW, data_dir=tmp_path).start()
    assert rec.cleared() == []
    assert all(retain for _, _, retain in rec.calls)
    assert len(rec.calls) == len(discovery_messages(example(), GW))
    rec.calls.clear()
    comp = HomeAssistantDiscovery(smaller(), rec, gateway_id=GW, data_dir=tmp_path)
    await comp.start()
    cleared = set(rec.cleared())
    assert state_topic("grandma") in cleared
    assert set(device_topics("homeassistant", GW, "dad", "watch-jon")) <= cleared
    published = {t for t, p, _ in rec.calls if p not in (b"", "")}
    assert published == {m.topic for m in discovery_messages(smaller(), GW)}
    assert comp.last_plan is not None and comp.last_plan.clear_persons == ["grandma"]


async def test_prefix_off_publishes_nothing_and_removes_earlier_configs(tmp_path: Path) -> None:
    rec = Recorder()
    await HomeAssistantDiscovery(example(), rec, gateway_id=GW, data_dir=tmp_path).start()
    first = {t for t, _, _ in rec.calls}
    rec.calls.clear()
    off = HomeAssistantDiscovery(example(), rec, gateway_id=GW, data_dir=tmp_path, prefix="")
    assert not off.enabled
    await off.start()
    assert set(rec.cleared()) == first and len(rec.calls) == len(first)


async def test_clear_function_for_one_device_and_one_person(tmp_path: Path) -> None:
    await HomeAssistantDiscovery(example(), Recorder(), gateway_id=GW, data_dir=tmp_path).start()
    rec = Recorder()
    out = await clear_ha_entities(
        rec, gateway_id=GW, person="dad", device="watch-jon", data_dir=tmp_path
    )
    assert out == sorted(device_topics("homeassistant", GW, "dad", "watch-jon"))
    assert rec.cleared() == out and all(r for _, _, r in rec.calls)
    saved = load_published(tmp_path / STATE_FILE)
    assert not set(out) & set(saved.topics) and "dad" in saved.persons

    rec = Recorder()
    out = await clear_ha_entities(rec, gateway_id=GW, person="grandma", data_dir=tmp_path)
    expected = person_topics("homeassistant", GW, "grandma", ["watch-maria"])
    assert sorted(out) == sorted([*expected, state_topic("grandma")])
    saved = load_published(tmp_path / STATE_FILE)
    assert all(o[0] != "grandma" for o in saved.topics.values())
    assert "grandma" not in saved.persons

    # Without a state file, the person's devices can be named.
    rec = Recorder()
    out = await clear_ha_entities(rec, gateway_id=GW, person="x", devices=["w1"])
    assert sorted(out) == sorted(
        [*person_topics("homeassistant", GW, "x", ["w1"]), state_topic("x")]
    )


# --- end to end against a real mosquitto -------------------------------------------------------


def mqtt_publish(client: aiomqtt.Client) -> RetainedPublish:
    """The small real publish function the CLI would use."""

    async def publish(
        topic: str, payload: dict[str, Any] | str | bytes, *, retain: bool = False
    ) -> None:
        body = json.dumps(payload) if isinstance(payload, dict) else payload
        await client.publish(topic, body, qos=1, retain=retain)

    return publish


@contextlib.asynccontextmanager
async def publisher(broker: Broker) -> AsyncIterator[RetainedPublish]:
    async with aiomqtt.Client("127.0.0.1", broker.port, identifier="test-ha-publisher") as c:
        yield mqtt_publish(c)


async def retained(broker: Broker, topic_filter: str, quiet_s: float = 0.5) -> dict[str, bytes]:
    """What a fresh subscriber (Home Assistant starting) gets: the retained messages."""
    out: dict[str, bytes] = {}
    async with aiomqtt.Client("127.0.0.1", broker.port, identifier="test-ha-fresh") as c:
        await c.subscribe(topic_filter, qos=1)

        async def pump() -> None:
            async for m in c.messages:
                raw = m.payload if isinstance(m.payload, bytes | bytearray) else b""
                out[m.topic.value] = bytes(raw)

        task = asyncio.create_task(pump())
        try:
            count = -1
            while count != len(out):  # until quiet for quiet_s
                count = len(out)
                await asyncio.sleep(quiet_s)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    return out


@contextlib.asynccontextmanager
async def live(broker: Broker, topic_filter: str) -> AsyncIterator[list[tuple[str, bytes]]]:
    seen: list[tuple[str, bytes]] = []
    async with aiomqtt.Client("127.0.0.1", broker.port, identifier="test-ha-live") as c:
        await c.subscribe(topic_filter, qos=1)

        async def pump() -> None:
            async for m in c.messages:
                raw = m.payload if isinstance(m.payload, bytes | bytearray) else b""
                seen.append((m.topic.value, bytes(raw)))

        task = asyncio.create_task(pump())
        try:
            yield seen
            await asyncio.sleep(0.3)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


@pytest.mark.integration
async def test_discovery_end_to_end_with_a_real_broker(tmp_path: Path, broker: Broker) -> None:
    data = tmp_path / "data"
    data.mkdir()

    # 1. First start: HA (a fresh subscriber) finds every config retained, and the states.
    async with publisher(broker) as pub:
        comp = HomeAssistantDiscovery(example(), pub, gateway_id=GW, data_dir=data)
        full = comp.messages()
        await comp.start()
        await published_states(pub, example())
    got = await retained(broker, "homeassistant/#")
    assert set(got) == {m.topic for m in full}
    for m in full:
        assert json.loads(got[m.topic]) == m.payload
    states = await retained(broker, "health/+/state")
    assert set(states) == {state_topic("grandma"), state_topic("dad")}

    # The templates turn the real retained state into the values HA would show.
    if _has_jinja2():
        dad = json.loads(states[state_topic("dad")])
        cfg = _by_object(example(), "dad")
        assert _render(cfg["heart_rate"]["value_template"], dad) == "72.0"
        assert _render(cfg["watch-jon_battery"]["value_template"], dad) == "64.0"

    # 2. Restart with grandma and dad's old watch gone: their configs and grandma's state are
    # cleared for whoever is listening, and a fresh subscriber no longer gets them.
    gone = set(person_topics("homeassistant", GW, "grandma", ["watch-maria"])) | set(
        device_topics("homeassistant", GW, "dad", "watch-jon")
    )
    async with live(broker, "#") as seen, publisher(broker) as pub:
        await HomeAssistantDiscovery(smaller(), pub, gateway_id=GW, data_dir=data).start()
    emptied = {t for t, p in seen if p == b""}
    assert gone | {state_topic("grandma")} <= emptied
    got = await retained(broker, "homeassistant/#")
    assert set(got) == {m.topic for m in discovery_messages(smaller(), GW)}
    assert not gone & set(got)
    assert set(await retained(broker, "health/+/state")) == {state_topic("dad")}

    # 3. The CLI's clear function removes one device's entities (over its own connection,
    # with the gateway's settings).
    settings = Settings(mqtt_url=broker.url, data_dir=data, gateway_id=GW)
    out = await clear_with_settings(settings, person="dad", device="band-jon")
    assert out == sorted(device_topics("homeassistant", GW, "dad", "band-jon"))
    got = await retained(broker, "homeassistant/#")
    assert not set(out) & set(got)
    assert set(got) == {
        m.topic for m in discovery_messages(smaller(), GW) if m.device != "band-jon"
    }


def _has_jinja2() -> bool:
    try:
        import jinja2  # noqa: F401
    except ImportError:
        return False
    return True


def test_discovery_message_component() -> None:
    m = DiscoveryMessage("homeassistant/sensor/node/obj/config", {})
    assert m.component == "sensor"
