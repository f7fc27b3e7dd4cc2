"""The retained per-person picture on `health/{person}/state` (StatePayload).

Dashboards and Home Assistant's discovered entities read it. It holds only what the monitor
already knows (latest vitals, NEWS2, open alerts, device states) plus the SOS flag from the
bus, and it costs the reading path one set insert: readings only mark the person dirty.

- Urgent changes (NEWS2 level, SOS, open alerts, a device's state) go out at once.
- Plain vitals updates go out at most every `min_interval_s` per person.
- On start every person is published once, so a restarted Home Assistant has values.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import ValidationError

from gateway.base.clock import Clock
from gateway.base.loop_health import TickHealth
from gateway.contract.topics import DeviceState, EventType, StatePayload, format_ts, state_topic
from gateway.contract.values import Event
from gateway.household.model import Household

log = logging.getLogger(__name__)


class StateSource(Protocol):
    """What the monitor already knows (gateway.monitor.engine.Monitor satisfies it as is)."""

    def latest_vitals(self, person: str) -> Mapping[str, Any]:
        """vital -> {"value", "ts"} (or a bare value)."""
        ...

    def latest_news2(self, person: str) -> Mapping[str, Any] | None:
        """{"total", "level", ...} or None before the first NEWS2."""
        ...

    def open_alert_count(self, person: str) -> int: ...

    def alert_priority(self, person: str) -> str | None:
        """The highest priority of the open alerts: "low", "medium", "high" (None: none)."""
        ...

    def device_state(self, person: str, device: str) -> str: ...


# (person, device) -> the latest stored reading row with "battery" and "last_seen" (epoch s):
# gateway.store.Store.latest. Called at most once per flush, never per person.
DeviceRows = Callable[[], Mapping[tuple[str, str], Mapping[str, Any]]]


class RetainedPublish(Protocol):
    """gateway.mqtt.link.MqttLink.publish fits."""

    async def __call__(
        self, topic: str, payload: dict[str, Any] | str | bytes, *, retain: bool = False
    ) -> None: ...


# Events that change what the state shows; they publish the person's state at once.
URGENT_EVENTS: frozenset[EventType] = frozenset(
    {
        EventType.HARD_SOS,
        EventType.SOS_END,
        EventType.SOFT_SOS,
        EventType.ADVISORY,
        EventType.ALERT_UPDATED,
        EventType.ALERT_CLEARED,
        EventType.DEVICE_STALE,
        EventType.DEVICE_RECOVERED,
        EventType.DEVICE_NOT_WORN,
        EventType.DEVICE_OFFLINE,
        EventType.DEVICE_ONLINE,
        EventType.BATTERY_LOW,
    }
)


@dataclass(slots=True)
class _Published:
    body: dict[str, Any]  # the payload without ts: equal bodies are not sent again
    at: float  # monotonic


class PersonStatePublisher:
    """start()/stop() component. Subscribe `on_event` to the bus with `types=URGENT_EVENTS`
    and call `note_reading` after the monitor has processed each reading."""

    def __init__(
        self,
        household: Household,
        source: StateSource,
        device_rows: DeviceRows,
        publish: RetainedPublish,
        clock: Clock,
        *,
        min_interval_s: float = 10.0,
        tick_s: float = 1.0,
        sos_open: Callable[[str], bool] | None = None,
    ) -> None:
        self._persons = {p.id: tuple(d.id for d in p.devices) for p in household.persons}
        self._source = source
        self._device_rows = device_rows
        self._publish = publish
        self._clock = clock
        self._min_interval = min_interval_s
        self._tick = tick_s
        # Is a hard SOS open for this person? Read once at start (wiring may set it later).
        self.sos_open = sos_open
        self._sos: dict[str, bool] = {}
        self._dirty: set[str] = set()
        self._urgent: set[str] = set()
        self._last: dict[str, _Published] = {}
        # Readings carry battery only now and then: keep the last known value per device.
        self._battery: dict[tuple[str, str], float] = {}
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()  # one build+publish at a time: retained states stay ordered
        self._task: asyncio.Task[None] | None = None
        self._started_at: float | None = None  # wall clock, set by start()
        self.published = 0
        self.errors = 0
        # Failing flushes in a row (3: shown down by the non-critical `person_state` watch).
        self.health = TickHealth("person state")

    # --- inputs ---------------------------------------------------------------------------
    def note_reading(self, person: str, news2_level: str | None = None) -> None:
        """The hot path: O(1), no I/O. Pass the reading's NEWS2 level (Outcome.news2_level)
        so a level change goes out at once rather than with the next rate-limited update."""
        if person not in self._persons:
            return
        self._dirty.add(person)
        if news2_level is not None:
            last = self._last.get(person)
            if last is None or last.body.get("news2_level") != news2_level:
                self._urgent.add(person)
                self._wake.set()

    async def on_event(self, event: Event) -> None:
        """Bus subscriber. hard_sos / sos_end set the SOS flag; every urgent event publishes
        the person's state now."""
        person = event.person
        if person not in self._persons or event.type not in URGENT_EVENTS:
            return
        if event.type == EventType.HARD_SOS:
            self._sos[person] = True
        elif event.type == EventType.SOS_END:
            self._sos[person] = False
        await self.publish_person(person)

    # --- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        self._started_at = self._clock.now()
        if self.sos_open is not None:
            for person in self._persons:
                try:
                    self._sos[person] = bool(self.sos_open(person))
                except Exception as exc:
                    # Unknown until the next hard_sos / sos_end: "off" is what HA shows.
                    log.error("could not read the open SOS state: %s", _describe(exc))
        rows = self._rows()
        for person in self._persons:
            await self._publish_now(person, rows, force=True)
        self._task = asyncio.create_task(self._run(), name="person-state")

    def alive(self) -> bool:
        """Its loop runs and its flushes succeed: what the `person_state` watch checks."""
        return self._task is not None and not self._task.done() and self.health.healthy()

    async def revive(self) -> None:
        """The watch's restart hook: a new loop if it ended (not a second start())."""
        if self._task is not None and self._task.done():
            self._task = asyncio.create_task(self._run(), name="person-state")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        # What is still pending goes out before the broker link drains and closes.
        await self.flush(due_only=False)

    # --- publishing -----------------------------------------------------------------------
    async def publish_person(self, person: str) -> None:
        """Build and publish this person's state now (skipped when nothing changed)."""
        await self._publish_now(person, self._rows())

    async def flush(self, *, due_only: bool = True) -> int:
        """Publish the dirty persons that are urgent or past `min_interval_s` (all dirty
        persons with due_only=False). Returns how many went out."""
        now = self._clock.monotonic()
        due = []
        for person in list(self._dirty):
            last = self._last.get(person)
            if (
                not due_only
                or person in self._urgent
                or last is None
                or now - last.at >= self._min_interval
            ):
                due.append(person)
        if not due:
            return 0
        rows = self._rows()
        sent = 0
        for person in due:
            sent += await self._publish_now(person, rows)
        return sent

    def build(
        self, person: str, rows: Mapping[tuple[str, str], Mapping[str, Any]] | None = None
    ) -> StatePayload:
        """The person's current StatePayload (validated by the model)."""
        rows = self._rows() if rows is None else rows
        src = self._source
        vitals: dict[str, float | int | str | bool | None] = {}
        for name, item in src.latest_vitals(person).items():
            value = item.get("value") if isinstance(item, Mapping) else item
            if value is None or isinstance(value, bool | int | float | str):
                vitals[name] = value
        news2 = src.latest_news2(person) or {}
        devices: dict[str, DeviceState] = {}
        for device in self._persons[person]:
            row = rows.get((person, device)) or {}
            battery = row.get("battery")
            if isinstance(battery, int | float) and not isinstance(battery, bool):
                self._battery[(person, device)] = float(battery)
            last_seen = row.get("last_seen")
            devices[device] = DeviceState(
                state=self._device_state(person, device, last_seen),
                battery=self._battery.get((person, device)),
                last_seen=format_ts(last_seen) if isinstance(last_seen, int | float) else None,
            )
        return StatePayload(
            person=person,
            ts=format_ts(self._clock.now()),
            vitals=vitals,
            news2_total=news2.get("total"),
            news2_level=news2.get("level"),
            sos="on" if self._sos.get(person) else "off",
            open_alerts=src.open_alert_count(person),
            alert_priority=src.alert_priority(person),
            devices=devices,
        )

    # --- internals ------------------------------------------------------------------------
    def _device_state(self, person: str, device: str, last_seen: Any) -> str:
        state = self._source.device_state(person, device)
        # The monitor names a state only on a change (stale, not worn, back): a device heard
        # from since this start and never flagged is talking to the hub. Home Assistant
        # showed it `unknown` while its readings arrived.
        started = self._started_at
        heard = isinstance(last_seen, int | float) and not isinstance(last_seen, bool)
        if state == "unknown" and started is not None and heard and last_seen >= started:
            return "active"
        return state

    def _rows(self) -> Mapping[tuple[str, str], Mapping[str, Any]]:
        try:
            return self._device_rows()
        except Exception as exc:
            log.error("could not read the devices' latest rows: %s", _describe(exc))
            return {}

    async def _publish_now(
        self,
        person: str,
        rows: Mapping[tuple[str, str], Mapping[str, Any]],
        *,
        force: bool = False,
    ) -> int:
        async with self._lock:
            # Cleared before building: a reading noted while we publish marks it dirty again.
            self._dirty.discard(person)
            self._urgent.discard(person)
            try:
                payload = self.build(person, rows)
            except Exception as exc:
                self.errors += 1
                log.error("could not build a person's state: %s", _describe(exc))
                return 0
            doc = payload.model_dump(mode="json")
            body = {k: v for k, v in doc.items() if k != "ts"}
            last = self._last.get(person)
            if not force and last is not None and last.body == body:
                return 0
            await self._publish(state_topic(person), doc, retain=True)
            self._last[person] = _Published(body, self._clock.monotonic())
            self.published += 1
            return 1

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._tick)
            self._wake.clear()
            try:
                await self.flush()
            except Exception as exc:  # counted, logged without the message, retried
                self.errors += 1
                self.health.failed(exc)
            else:
                self.health.ok()


def _describe(exc: BaseException) -> str:
    """The exception's type (and a validation error's field paths), never its message: a
    message may quote vitals."""
    if isinstance(exc, ValidationError):
        locs = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
        return f"ValidationError in {', '.join(locs)}"
    return type(exc).__name__
