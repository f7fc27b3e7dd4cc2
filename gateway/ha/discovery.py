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
so the tests, the CLI and the gateway share them (gateway/ha/messages.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.base.files import write_durable
from gateway.contract.topics import state_topic
from gateway.household.model import Household
from gateway.household.state import RetainedPublish

if TYPE_CHECKING:
    from gateway.base.settings import Settings
from gateway.ha.messages import (
    DEFAULT_PREFIX,
    STATE_FILE,
    DiscoveryMessage,
    _version,
    device_topics,
    discovery_messages,
    normalize_prefix,
    person_topics,
)

log = logging.getLogger(__name__)


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
    # Durable: a file lost or torn by a crash forgets what was published, and the entities of
    # persons removed meanwhile would stay in Home Assistant for good.
    write_durable(path, json.dumps(published.to_json(), indent=1) + "\n")


@dataclass(frozen=True)
class DiscoveryPlan:
    """What one start does: publish `configs`, empty `clear` topics and the retained state
    of `clear_persons`. (`last_plan`, once they are published, keeps no configs.)"""

    configs: list[DiscoveryMessage]
    clear: list[str]
    clear_persons: list[str]
    published: Published


def plan(
    previous: Published, configs: Sequence[DiscoveryMessage], persons: Iterable[str]
) -> DiscoveryPlan:
    """The removal diff: topics published before and not now are cleared (and those cleared
    last time are cleared once more); likewise the state topic of removed persons."""
    now = {m.topic: [m.person, m.device] for m in configs}
    current_persons = set(persons)
    removed = sorted(set(previous.topics) - set(now))
    again = sorted(set(previous.cleared) - set(now) - set(removed))
    gone = sorted(set(previous.persons) - current_persons)
    gone_again = sorted(set(previous.cleared_persons) - current_persons - set(gone))
    return DiscoveryPlan(
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
        self.last_plan: DiscoveryPlan | None = None
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
        # Without its configs (~12 payload dicts a person): ~11 MB kept for good at 1,000.
        self.last_plan = replace(p, configs=[])
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

    from gateway.mqtt.sessions import encode, tls_params

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
