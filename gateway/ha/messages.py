"""Home Assistant discovery configs, built pure: the hub device, one device per person and
their entities (vitals, NEWS2, SOS state, open alerts and their priority, device batteries and
connectivity), each reading the person's retained `health/{person}/state` with a value
template (gateway/ha/discovery.py publishes them, clears what left the household)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from gateway.contract.topics import STATUS_OFFLINE, STATUS_ONLINE, gateway_status_topic, state_topic
from gateway.contract.vitals import VITALS
from gateway.household.model import Household, Person

DEFAULT_PREFIX = "homeassistant"
STATE_FILE = "ha_discovery.json"
MANUFACTURER = "healthgw"
NEWS2_LEVELS: tuple[str, ...] = ("low", "low-medium", "medium", "high")
# Device states (Monitor.device_state) in which the device is talking to the hub.
CONNECTED_STATES: tuple[str, ...] = ("active", "ok", "not_worn")


@dataclass(frozen=True, slots=True)
class VitalSensor:
    key: str  # StatePayload.vitals key
    name: str
    unit: str
    icon: str
    precision: int
    device_class: str | None = None


# One sensor per vital the vitals table shows in Home Assistant (gateway/contract/vitals.py).
VITAL_SENSORS: tuple[VitalSensor, ...] = tuple(
    VitalSensor(v.name, v.ha.name, v.ha.unit, v.ha.icon, v.ha.precision, v.ha.device_class)
    for v in VITALS
    if v.ha is not None
)


@dataclass(frozen=True, slots=True)
class DiscoveryMessage:
    """One retained discovery config. `device` is set for per-device entities."""

    topic: str
    payload: dict[str, Any]
    person: str | None = None
    device: str | None = None

    @property
    def component(self) -> str:
        return self.topic.split("/")[-4]

    def encoded(self) -> str:
        return json.dumps(self.payload, separators=(",", ":"), ensure_ascii=False)


# --- names ---------------------------------------------------------------------------------


def normalize_prefix(prefix: str) -> str:
    return prefix.strip("/")


def hub_identifier(gateway_id: str) -> str:
    return f"healthgw_{gateway_id}"


def person_identifier(gateway_id: str, person: str) -> str:
    """The HA device identifier of a person; also the discovery topic's node_id."""
    return f"healthgw_{gateway_id}_{person}"


def config_topic(prefix: str, component: str, node_id: str, object_id: str) -> str:
    return f"{normalize_prefix(prefix)}/{component}/{node_id}/{object_id}/config"


def unique_id(gateway_id: str, person: str, object_id: str) -> str:
    # ":" cannot occur in ids, so person "a" + object "b_x_battery" never meets "a_b" + "x_battery".
    return f"healthgw:{gateway_id}:{person}:{object_id}"


def person_object_ids() -> tuple[tuple[str, str], ...]:
    """(component, object_id) of every per-person entity (not per device)."""
    return (
        *(("sensor", v.key) for v in VITAL_SENSORS),
        ("sensor", "news2_score"),
        ("sensor", "news2_level"),
        ("binary_sensor", "sos"),
        ("sensor", "open_alerts"),
    )


def device_object_ids(device: str) -> tuple[tuple[str, str], ...]:
    """(component, object_id) of a device's entities."""
    return (("sensor", f"{device}_battery"), ("binary_sensor", f"{device}_connectivity"))


def person_topics(
    prefix: str, gateway_id: str, person: str, devices: Iterable[str] = ()
) -> list[str]:
    node = person_identifier(gateway_id, person)
    out = [config_topic(prefix, c, node, o) for c, o in person_object_ids()]
    for d in devices:
        out.extend(device_topics(prefix, gateway_id, person, d))
    return out


def device_topics(prefix: str, gateway_id: str, person: str, device: str) -> list[str]:
    node = person_identifier(gateway_id, person)
    return [config_topic(prefix, c, node, o) for c, o in device_object_ids(device)]


# --- templates -----------------------------------------------------------------------------
# Missing keys render "None", which HA's MQTT sensor and binary_sensor turn into `unknown`: an
# old value must never linger as if it were current. `value_json is defined`: a removed
# person's cleared state (empty payload) reaches HA before it drops the entities (HA 2024.3
# logged one "'value_json' is undefined" error per entity).


def _guarded(expr: str) -> str:
    return f"{{{{ ({expr}) if value_json is defined else none }}}}"


def vital_template(key: str) -> str:
    return _guarded(f"value_json.vitals.{key} | default(none)")


def field_template(key: str) -> str:
    return _guarded(f"value_json.{key} | default(none)")


def _device_expr(device: str) -> str:
    # Device ids match [A-Za-z0-9_-]: safe inside single quotes; '-' needs the [] form.
    return f"(value_json.devices['{device}'] | default({{}}))"


def battery_template(device: str) -> str:
    return _guarded(f"{_device_expr(device)}.battery | default(none)")


def connectivity_template(device: str) -> str:
    connected = "[" + ", ".join(f"'{s}'" for s in CONNECTED_STATES) + "]"
    return (
        "{% if value_json is defined %}"
        f"{{% set s = {_device_expr(device)}.state | default('unknown') %}}"
        f"{{{{ 'None' if s in [none, 'unknown'] else ('on' if s in {connected} else 'off') }}}}"
        "{% else %}None{% endif %}"
    )


def device_attributes_template(device: str) -> str:
    # Home Assistant drops an MQTT attribute named `state` (MQTT_ATTRIBUTES_BLOCKED), so the
    # device's state word is published as `device_state`.
    d = _device_expr(device)
    return (
        "{% if value_json is defined %}"
        f"{{{{ {{'device_state': {d}.state | default(none), 'battery': {d}.battery"
        f" | default(none), 'last_seen': {d}.last_seen | default(none)}} | tojson }}}}"
        "{% else %}{}{% endif %}"
    )


def news2_level_availability() -> str:
    """`online` only while the state has a NEWS2 level: a text sensor cannot show `unknown`
    (HA 2024.3 shows a rendered "None" as the word; versions that check `options` refuse it)."""
    levels = "[" + ", ".join(f"'{x}'" for x in NEWS2_LEVELS) + "]"
    return (
        "{{ 'online' if value_json is defined and (value_json.news2_level | default(none))"
        f" in {levels} else 'offline' }}}}"
    )


# --- builders ------------------------------------------------------------------------------


def _version() -> str | None:
    try:
        return metadata.version("healthgw")
    except metadata.PackageNotFoundError:
        return None


def _origin(sw_version: str | None) -> dict[str, Any]:
    origin: dict[str, Any] = {"name": "healthgw"}
    if sw_version:
        origin["sw_version"] = sw_version
    return origin


def _availability(gateway_id: str) -> dict[str, Any]:
    return {
        "availability_topic": gateway_status_topic(gateway_id),
        "payload_available": STATUS_ONLINE,
        "payload_not_available": STATUS_OFFLINE,
    }


def _availability_entry(gateway_id: str) -> dict[str, Any]:
    """The hub's status as one entry of an `availability` list."""
    a = _availability(gateway_id)
    return {"topic": a.pop("availability_topic"), **a}


def hub_message(
    gateway_id: str, *, prefix: str = DEFAULT_PREFIX, sw_version: str | None = None
) -> DiscoveryMessage:
    """The hub device, with a connectivity sensor on the hub's own retained status."""
    hub = hub_identifier(gateway_id)
    device: dict[str, Any] = {
        "identifiers": [hub],
        "name": f"healthgw hub {gateway_id}",
        "manufacturer": MANUFACTURER,
        "model": "Home health gateway",
    }
    if sw_version:
        device["sw_version"] = sw_version
    payload = {
        "name": "Status",
        "unique_id": f"healthgw:{gateway_id}:hub:status",
        "device_class": "connectivity",
        "entity_category": "diagnostic",
        "state_topic": gateway_status_topic(gateway_id),
        "payload_on": STATUS_ONLINE,
        "payload_off": STATUS_OFFLINE,
        "qos": 1,
        "device": device,
        "origin": _origin(sw_version),
    }
    return DiscoveryMessage(config_topic(prefix, "binary_sensor", hub, "status"), payload)


def person_messages(
    person: Person,
    gateway_id: str,
    *,
    prefix: str = DEFAULT_PREFIX,
    sw_version: str | None = None,
) -> list[DiscoveryMessage]:
    """Every entity of one person (their HA device) and of each of their wearables."""
    pid = person.id
    node = person_identifier(gateway_id, pid)
    device: dict[str, Any] = {
        "identifiers": [node],
        "name": person.name,
        "manufacturer": MANUFACTURER,
        "model": "Monitored person",
        "via_device": hub_identifier(gateway_id),
    }
    common: dict[str, Any] = {
        "state_topic": state_topic(pid),
        "qos": 1,
        **_availability(gateway_id),
        "device": device,
        "origin": _origin(sw_version),
    }

    def msg(
        component: str, object_id: str, body: dict[str, Any], dev: str | None = None
    ) -> DiscoveryMessage:
        payload = {"unique_id": unique_id(gateway_id, pid, object_id), **body, **common}
        if "availability" in body:  # a list replaces the single topic (HA allows one form)
            for key in _availability(gateway_id):
                payload.pop(key)
        topic = config_topic(prefix, component, node, object_id)
        return DiscoveryMessage(topic, payload, person=pid, device=dev)

    out: list[DiscoveryMessage] = []
    for v in VITAL_SENSORS:
        body: dict[str, Any] = {
            "name": v.name,
            "value_template": vital_template(v.key),
            "unit_of_measurement": v.unit,
            "state_class": "measurement",
            "suggested_display_precision": v.precision,
            "icon": v.icon,
        }
        if v.device_class:
            body["device_class"] = v.device_class
        out.append(msg("sensor", v.key, body))
    out.append(
        msg(
            "sensor",
            "news2_score",
            {
                "name": "NEWS2 score",
                "value_template": field_template("news2_total"),
                "state_class": "measurement",
                "icon": "mdi:clipboard-pulse",
            },
        )
    )
    out.append(
        msg(
            "sensor",
            "news2_level",
            {
                "name": "NEWS2 level",
                "value_template": field_template("news2_level"),
                "device_class": "enum",
                "options": list(NEWS2_LEVELS),
                "icon": "mdi:clipboard-alert",
                "availability": [
                    _availability_entry(gateway_id),
                    {
                        "topic": state_topic(pid),
                        "value_template": news2_level_availability(),
                        "payload_available": STATUS_ONLINE,
                        "payload_not_available": STATUS_OFFLINE,
                    },
                ],
                "availability_mode": "all",
            },
        )
    )
    out.append(
        msg(
            "binary_sensor",
            "sos",
            {
                "name": "SOS",
                "value_template": field_template("sos"),
                "device_class": "safety",
                "payload_on": "on",
                "payload_off": "off",
                "icon": "mdi:alarm-light",
            },
        )
    )
    out.append(
        msg(
            "sensor",
            "open_alerts",
            {
                "name": "Open alerts",
                "value_template": field_template("open_alerts"),
                "json_attributes_topic": state_topic(pid),  # priority: IEC 60601-1-8
                "json_attributes_template": "{% if value_json is defined %}{{ {'priority':"
                " value_json.alert_priority | default(none)} | tojson }}{% else %}{}{% endif %}",
                "state_class": "measurement",
                "icon": "mdi:alert",
            },
        )
    )
    for d in person.devices:
        battery_id, conn_id = (o for _, o in device_object_ids(d.id))
        out.append(
            msg(
                "sensor",
                battery_id,
                {
                    "name": f"{d.id} battery",
                    "value_template": battery_template(d.id),
                    "device_class": "battery",
                    "unit_of_measurement": "%",
                    "state_class": "measurement",
                    "entity_category": "diagnostic",
                },
                d.id,
            )
        )
        out.append(
            msg(
                "binary_sensor",
                conn_id,
                {
                    "name": f"{d.id} connectivity",
                    "value_template": connectivity_template(d.id),
                    "device_class": "connectivity",
                    "payload_on": "on",
                    "payload_off": "off",
                    "entity_category": "diagnostic",
                    # Its state word (active, stale, ...), battery, last_seen as attributes.
                    "json_attributes_topic": state_topic(pid),
                    "json_attributes_template": device_attributes_template(d.id),
                },
                d.id,
            )
        )
    return out


def discovery_messages(
    household: Household,
    gateway_id: str,
    *,
    prefix: str = DEFAULT_PREFIX,
    sw_version: str | None = None,
) -> list[DiscoveryMessage]:
    """The hub's config, then every person's."""
    out = [hub_message(gateway_id, prefix=prefix, sw_version=sw_version)]
    for p in household.persons:
        out.extend(person_messages(p, gateway_id, prefix=prefix, sw_version=sw_version))
    return out


# --- what was published (state file) -------------------------------------------------------
