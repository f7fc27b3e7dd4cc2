"""Defects a real Home Assistant (2024.3.3, tests/gateway/ha/test_home_assistant_real.py) showed in our
discovery payloads and retained state, each pinned here by a fast test:

- a text sensor (the NEWS2 level) showed the word "None" before the hub had a NEWS2;
- the connectivity sensor's `state` attribute never appeared (HA drops that name);
- every template logged "'value_json' is undefined" when a removed person's retained state
  was cleared (an empty payload) before HA dropped their entities;
- a device sending readings showed connectivity `unknown` until its first state change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml
from jinja2.sandbox import ImmutableSandboxedEnvironment

from gateway.base.clock import ManualClock
from gateway.contract.topics import gateway_status_topic, state_topic
from gateway.ha.messages import NEWS2_LEVELS, discovery_messages
from gateway.household.model import Household
from gateway.household.state import PersonStatePublisher

ROOT = Path(__file__).resolve().parents[3]
GW = "testhub"
# homeassistant/components/mqtt/mixins.py MQTT_ATTRIBUTES_BLOCKED (2024.3): attributes with
# these names are silently dropped.
HA_BLOCKED_ATTRIBUTES = {
    "assumed_state", "available", "device_class", "device_info", "entity_category",
    "entity_picture", "entity_registry_enabled_default", "extra_state_attributes",
    "force_update", "icon", "name", "should_poll", "state", "supported_features", "unique_id",
    "unit_of_measurement",
}  # fmt: skip


def example() -> Household:
    return Household.model_validate(yaml.safe_load((ROOT / "examples/household.yaml").read_text()))


def configs(person: str = "dad") -> dict[str, dict[str, Any]]:
    return {
        m.topic.split("/")[3]: m.payload
        for m in discovery_messages(example(), GW)
        if m.person == person
    }


def render(template: str, value_json: Any = None, *, empty: bool = False) -> str:
    # StrictUndefined: any use of a name that is not there raises, where HA logs an error.
    env = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined)
    variables: dict[str, Any] = {"value": ""} if empty else {"value_json": value_json}
    return env.from_string(template).render(**variables).strip()


def test_every_template_renders_an_empty_payload_without_error() -> None:
    for obj, cfg in configs().items():
        assert render(cfg["value_template"], empty=True) == "None", obj
        if "json_attributes_template" in cfg:
            assert json.loads(render(cfg["json_attributes_template"], empty=True)) == {}, obj
        for entry in cfg.get("availability", []):
            if "value_template" in entry:
                assert render(entry["value_template"], empty=True) == "offline", obj


def test_device_attributes_avoid_the_names_home_assistant_drops() -> None:
    cfg = configs()["watch-jon_connectivity"]
    state = {"devices": {"watch-jon": {"state": "stale", "battery": 40.0, "last_seen": "t"}}}
    attrs = json.loads(render(cfg["json_attributes_template"], state))
    assert attrs == {"device_state": "stale", "battery": 40.0, "last_seen": "t"}
    assert not set(attrs) & HA_BLOCKED_ATTRIBUTES


def test_news2_level_is_unavailable_until_there_is_a_level() -> None:
    cfg = configs()["news2_level"]
    assert "availability_topic" not in cfg and cfg["availability_mode"] == "all"
    hub, level = cfg["availability"]
    assert hub == {
        "topic": gateway_status_topic(GW),
        "payload_available": "online",
        "payload_not_available": "offline",
    }
    assert level["topic"] == state_topic("dad") == cfg["state_topic"]
    assert (level["payload_available"], level["payload_not_available"]) == ("online", "offline")
    for state in ({"news2_level": None}, {}, {"news2_level": "unheard-of"}):
        assert render(level["value_template"], state) == "offline", state
    for word in NEWS2_LEVELS:
        assert render(level["value_template"], {"news2_level": word}) == "online"
        assert render(cfg["value_template"], {"news2_level": word}) == word
    # The other entities keep the single availability topic.
    assert all("availability" not in c for o, c in configs().items() if o != "news2_level")


class Monitor:
    """Says what the real monitor says before any change: every device `unknown`, except
    the ones a test marks."""

    def __init__(self, states: dict[str, str]) -> None:
        self.states = states

    def latest_vitals(self, person: str) -> dict[str, Any]:
        return {}

    def latest_news2(self, person: str) -> dict[str, Any] | None:
        return None

    def open_alert_count(self, person: str) -> int:
        return 0

    def alert_priority(self, person: str) -> str | None:
        return None

    def device_state(self, person: str, device: str) -> str:
        return self.states.get(device, "unknown")


async def _nowhere(topic: str, payload: Any, *, retain: bool = False) -> None:
    return None


@pytest.mark.parametrize(
    ("monitor_says", "seen", "expected"),
    [
        ("unknown", 5.0, "active"),  # heard from since the start, never flagged
        ("unknown", -5.0, "unknown"),  # last heard before this start: not known yet
        ("unknown", None, "unknown"),  # never heard from
        ("stale", 5.0, "stale"),  # the monitor's word wins once it has one
        ("not_worn", 5.0, "not_worn"),
    ],
)
async def test_a_device_heard_since_start_is_active(
    monitor_says: str, seen: float | None, expected: str
) -> None:
    clock = ManualClock()
    started = clock.now()
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    pub = PersonStatePublisher(
        example(),
        Monitor({"watch-jon": monitor_says}),
        lambda: rows,
        _nowhere,
        clock,
        tick_s=3600,
    )
    if seen is not None:
        rows[("dad", "watch-jon")] = {"battery": 50.0, "last_seen": started + seen}
    # Before start() the publisher has no "since this start" to compare with.
    assert pub.build("dad").devices["watch-jon"].state == monitor_says
    await pub.start()
    try:
        assert pub.build("dad").devices["watch-jon"].state == expected
    finally:
        await pub.stop()
