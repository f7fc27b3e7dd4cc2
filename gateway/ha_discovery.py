"""Home Assistant MQTT discovery: retained configs so each person's vitals, NEWS2, SOS state,
open alerts and device batteries appear in Home Assistant without any YAML.

- One HA device per person (`healthgw_<gateway_id>_<person>`, named after the person), linked
  through `via_device` to one hub device (`healthgw_<gateway_id>`).
- Every entity reads the person's retained `health/{person}/state` (StatePayload) with a
  `value_template`, and is unavailable while the hub's `gateway/{gateway_id}/status` says
  `offline`.
- Topics: `<prefix>/<component>/healthgw_<gateway_id>_<person>/<object_id>/config`.

What was published is remembered in `<data_dir>/ha_discovery.json`, so a restart with a
smaller household clears (empty retained payload) the entities of removed persons and devices,
and the retained state of removed persons. The pure builders are separate from the component
so the tests, the CLI and the gateway share them.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.contract import STATUS_OFFLINE, STATUS_ONLINE, gateway_status_topic, state_topic
from gateway.household import Household, Person
from gateway.person_state import RetainedPublish

if TYPE_CHECKING:
    from gateway.settings import Settings

log = logging.getLogger(__name__)

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


VITAL_SENSORS: tuple[VitalSensor, ...] = (
    VitalSensor("heart_rate", "Heart rate", "bpm", "mdi:heart-pulse", 0),
    VitalSensor("spo2", "SpO2", "%", "mdi:lungs", 0),
    VitalSensor("systolic_bp", "Systolic blood pressure", "mmHg", "mdi:heart-box", 0),
    VitalSensor("diastolic_bp", "Diastolic blood pressure", "mmHg", "mdi:heart-box-outline", 0),
    VitalSensor("temperature_c", "Temperature", "°C", "mdi:thermometer", 1, "temperature"),
    VitalSensor("respiratory_rate", "Respiratory rate", "breaths/min", "mdi:lungs", 0),
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
# Missing keys render "None", which Home Assistant's MQTT sensor and binary_sensor turn into
# `unknown`: an old value must never linger as if it were current.


def vital_template(key: str) -> str:
    return f"{{{{ value_json.vitals.{key} | default(none) }}}}"


def field_template(key: str) -> str:
    return f"{{{{ value_json.{key} | default(none) }}}}"


def _device_expr(device: str) -> str:
    # Device ids match [A-Za-z0-9_-]: safe inside single quotes; '-' needs the [] form.
    return f"(value_json.devices['{device}'] | default({{}}))"


def battery_template(device: str) -> str:
    return f"{{{{ {_device_expr(device)}.battery | default(none) }}}}"


def connectivity_template(device: str) -> str:
    connected = "[" + ", ".join(f"'{s}'" for s in CONNECTED_STATES) + "]"
    return (
        f"{{% set s = {_device_expr(device)}.state | default('unknown') %}}"
        f"{{{{ 'None' if s in [none, 'unknown'] else ('on' if s in {connected} else 'off') }}}}"
    )


def device_attributes_template(device: str) -> str:
    return f"{{{{ {_device_expr(device)} | tojson }}}}"


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
                    # The device's state word (active, stale, not_worn, offline), battery and
                    # last_seen as attributes.
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


@dataclass
class Published:
    """`topics`: config topic -> [person, device]. `cleared` / `cleared_persons`: what the
    previous start removed; removed again once, in case the hub stopped before the broker
    got it (the link's queue is in memory)."""

    topics: dict[str, list[str | None]] = field(default_factory=dict)
    persons: list[str] = field(default_factory=list)
    cleared: list[str] = field(default_factory=list)
    cleared_persons: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "topics": {t: list(o) for t, o in sorted(self.topics.items())},
            "persons": sorted(self.persons),
            "cleared": sorted(self.cleared),
            "cleared_persons": sorted(self.cleared_persons),
        }

    @classmethod
    def from_json(cls, data: Any) -> Published:
        if not isinstance(data, dict) or data.get("version") != 1:
            raise ValueError("unknown state file version")
        topics: dict[str, list[str | None]] = {}
        for topic, owner in dict(data.get("topics") or {}).items():
            person, device = _owner(owner)
            topics[str(topic)] = [person, device]
        return cls(
            topics=topics,
            persons=[str(p) for p in data.get("persons") or []],
            cleared=[str(t) for t in data.get("cleared") or []],
            cleared_persons=[str(p) for p in data.get("cleared_persons") or []],
        )


def _owner(owner: Any) -> tuple[str | None, str | None]:
    """[person, device] from the state file; anything else owns nothing."""
    if not isinstance(owner, list):
        return None, None
    person, device = ([*owner, None, None])[:2]
    return (
        None if person is None else str(person),
        None if device is None else str(device),
    )


def load_published(path: Path) -> Published:
    try:
        return Published.from_json(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return Published()
    except (OSError, ValueError, TypeError):
        # Unreadable: nothing can be removed this time, everything current is republished.
        log.warning("Home Assistant discovery state unreadable; starting afresh")
        return Published()


def save_published(path: Path, published: Published) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(published.to_json(), indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


@dataclass(frozen=True)
class Plan:
    """What one start does: publish `configs`, empty `clear` topics and the retained state
    of `clear_persons`."""

    configs: list[DiscoveryMessage]
    clear: list[str]
    clear_persons: list[str]
    published: Published


def plan(previous: Published, configs: Sequence[DiscoveryMessage], persons: Iterable[str]) -> Plan:
    """The removal diff: topics published before and not now are cleared (and those cleared
    last time are cleared once more); likewise the state topic of removed persons."""
    now = {m.topic: [m.person, m.device] for m in configs}
    current_persons = set(persons)
    removed = sorted(set(previous.topics) - set(now))
    again = sorted(set(previous.cleared) - set(now) - set(removed))
    gone = sorted(set(previous.persons) - current_persons)
    gone_again = sorted(set(previous.cleared_persons) - current_persons - set(gone))
    return Plan(
        configs=list(configs),
        clear=removed + again,
        clear_persons=gone + gone_again,
        published=Published(
            topics=now, persons=sorted(current_persons), cleared=removed, cleared_persons=gone
        ),
    )


# --- the component -------------------------------------------------------------------------


class HomeAssistantDiscovery:
    """start()/stop() component. With prefix "" (discovery off) start() publishes nothing
    and removes whatever an earlier run published."""

    def __init__(
        self,
        household: Household,
        publish: RetainedPublish,
        *,
        gateway_id: str,
        data_dir: Path,
        prefix: str = DEFAULT_PREFIX,
        sw_version: str | None = None,
    ) -> None:
        self._household = household
        self._publish = publish
        self._gateway_id = gateway_id
        self._prefix = normalize_prefix(prefix)
        self._path = Path(data_dir) / STATE_FILE
        self._sw_version = sw_version if sw_version is not None else _version()
        self.last_plan: Plan | None = None
        # Persons another gateway instance serves (scale-out): this hub's entities for them
        # go, but their retained state is that instance's and is left alone.
        self.foreign_persons: frozenset[str] = frozenset()

    @property
    def enabled(self) -> bool:
        return bool(self._prefix)

    def messages(self) -> list[DiscoveryMessage]:
        if not self.enabled:
            return []
        return discovery_messages(
            self._household, self._gateway_id, prefix=self._prefix, sw_version=self._sw_version
        )

    async def start(self) -> None:
        persons = [p.id for p in self._household.persons]
        p = plan(load_published(self._path), self.messages(), persons)
        for topic in p.clear:
            await self._publish(topic, b"", retain=True)
        states = [x for x in p.clear_persons if x not in self.foreign_persons]
        for person in states:
            await self._publish(state_topic(person), b"", retain=True)
        for m in p.configs:
            await self._publish(m.topic, m.encoded(), retain=True)
        try:
            save_published(self._path, p.published)
        except OSError:
            log.exception("could not save the Home Assistant discovery state")
        self.last_plan = p
        log.info(
            "Home Assistant discovery: %d configs published, %d removed, %d person states cleared",
            len(p.configs),
            len(p.clear),
            len(states),
        )

    async def stop(self) -> None:
        # The configs stay (retained): while the hub is away its status says offline and the
        # entities show unavailable.
        return None


async def clear_ha_entities(
    publish: RetainedPublish,
    *,
    gateway_id: str,
    person: str,
    device: str | None = None,
    prefix: str = DEFAULT_PREFIX,
    data_dir: Path | None = None,
    devices: Iterable[str] = (),
) -> list[str]:
    """For `healthgw devices remove PERSON [DEVICE]`: remove one device's entities, or all of
    a person's entities and their retained `health/{person}/state`.

    The topics come from the naming scheme (for `prefix`), plus whatever the state file in
    `data_dir` says was published for them (an older prefix included); `devices` adds the
    person's devices when the file is missing. The file is updated so the next start does not
    clear them again. Returns the cleared topics."""
    path = Path(data_dir) / STATE_FILE if data_dir is not None else None
    published = load_published(path) if path is not None else Published()
    prefix = normalize_prefix(prefix)

    def owned(topic_owner: list[str | None]) -> bool:
        p, d = _owner(topic_owner)
        return p == person and (device is None or d == device)

    topics: list[str] = [t for t, o in published.topics.items() if owned(o)]
    if prefix:
        if device is None:
            known = {o[1] for o in published.topics.values() if o[0] == person and o[1]}
            topics += person_topics(prefix, gateway_id, person, sorted(known | set(devices)))
        else:
            topics += device_topics(prefix, gateway_id, person, device)
    topics = sorted(set(topics))
    for topic in topics:
        await publish(topic, b"", retain=True)
    cleared = list(topics)
    if device is None:
        await publish(state_topic(person), b"", retain=True)
        cleared.append(state_topic(person))
    if path is not None and path.exists():
        for topic in topics:
            published.topics.pop(topic, None)
        if device is None:
            published.persons = [p for p in published.persons if p != person]
        with contextlib.suppress(OSError):
            save_published(path, published)
    log.info("Home Assistant discovery: %d retained topics cleared", len(cleared))
    return cleared


async def clear_with_settings(
    settings: Settings,
    *,
    person: str,
    device: str | None = None,
    devices: Iterable[str] = (),
) -> list[str]:
    """clear_ha_entities over a short MQTT connection of its own, with the gateway's broker
    account (it may write `<prefix>/#` and `health/#`) and the gateway's prefix and data dir.
    Its client id differs from the running gateway's, so it never takes over its session."""
    import aiomqtt

    from gateway.mqtt import encode, tls_params

    async with aiomqtt.Client(
        settings.mqtt_host,
        settings.mqtt_port,
        identifier=f"healthgw-{settings.gateway_id}-cli-{os.getpid()}",
        username=settings.mqtt_username,
        password=settings.mqtt_password.get_secret_value() if settings.mqtt_password else None,
        timeout=10,
        tls_params=tls_params(settings),
    ) as client:

        async def publish(
            topic: str, payload: dict[str, Any] | str | bytes, *, retain: bool = False
        ) -> None:
            await client.publish(topic, encode(payload), qos=1, retain=retain)

        return await clear_ha_entities(
            publish,
            gateway_id=settings.gateway_id,
            person=person,
            device=device,
            prefix=settings.ha_discovery_prefix,
            data_dir=Path(settings.data_dir),
            devices=devices,
        )
