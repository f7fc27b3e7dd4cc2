"""Device state as the family sees it: a reading's arrival (live or late, a skewed clock),
stale / not worn / offline changes become events, and a low battery is reported once until it
is charged. Apart from scoring: none of it depends on what the vitals say."""

from __future__ import annotations

from typing import NamedTuple

from gateway.contract.topics import NUMERIC_VITALS, EventType
from gateway.contract.values import Event, Reading
from gateway.monitor.stale import StaleTracker, StateChange
from gateway.monitor.timeline import Timeline

BATTERY_LOW = 15.0
BATTERY_OK = 25.0
_STATE = {"stale": "stale", "recovered": "active", "not_worn": "not_worn", "worn": "active",
          "offline": "offline", "online": "active"}  # fmt: skip
_EVENT = {
    "stale": EventType.DEVICE_STALE, "recovered": EventType.DEVICE_RECOVERED,
    "not_worn": EventType.DEVICE_NOT_WORN, "worn": EventType.DEVICE_RECOVERED,
    "offline": EventType.DEVICE_OFFLINE, "online": EventType.DEVICE_ONLINE,
}  # fmt: skip


class Arrival(NamedTuple):
    """What a reading's arrival says about its device, before its values are looked at (a
    NamedTuple: one per reading, on the hot path)."""

    events: list[Event]  # a skewed clock found, the device's state changed
    late: bool  # late data: scored on its own timeline, nobody is prompted
    interval: float  # the device's reading interval (configured, else learnt)


class DeviceWatch:
    def __init__(self, stale: StaleTracker, timeline: Timeline) -> None:
        self._stale = stale
        self._timeline = timeline
        self._state: dict[tuple[str, str], str] = {}
        self._battery_low: set[str] = set()

    def state(self, person: str, device: str) -> str:
        return self._state.get((person, device), "unknown")

    def change(self, ch: StateChange, now: float) -> Event:
        self._state[(ch.person, ch.device)] = _STATE.get(ch.kind, ch.kind)
        data = {"device": ch.device, "since": ch.since, **dict(ch.detail)}
        return Event(_EVENT[ch.kind], ch.person, now, data)

    def arrived(self, r: Reading, now: float, configured: float | None) -> Arrival:
        """`configured`: the interval the household states for this device, if any."""
        events: list[Event] = []
        timing = self._timeline.judge(r.person, r.device, r.ts, now)
        if timing.skew_detected is not None:
            events.append(Event(EventType.DEVICE_CLOCK_SKEW, r.person, now,
                                {"device": r.device, "offset_s": round(timing.skew_detected)}))  # fmt: skip
        other = any(getattr(r, v) is not None for v in NUMERIC_VITALS if v != "heart_rate")
        for ch in self._stale.seen(r.person, r.device, ts_received=now, heart_rate=r.heart_rate,
                                   steps=r.steps, expected_interval_s=configured,
                                   other_vitals=other):  # fmt: skip
            events.append(self.change(ch, now))
        interval = configured or self._stale.interval(r.person, r.device)
        return Arrival(events, timing.late, interval)

    def tick(self, now: float) -> list[Event]:
        """Devices that went quiet (wall clock)."""
        return [self.change(ch, now) for ch in self._stale.tick(now)]

    def status(self, person: str, device: str, online: bool, now: float) -> list[Event]:
        """The device's own online/offline report."""
        return [self.change(ch, now) for ch in self._stale.status(person, device, online, now)]

    def battery(self, r: Reading, now: float) -> list[Event]:
        if r.battery is None:
            return []
        if r.battery <= BATTERY_LOW and r.device not in self._battery_low:
            self._battery_low.add(r.device)
            data = {"device": r.device, "battery": r.battery}
            return [Event(EventType.BATTERY_LOW, r.person, now, data)]
        if r.battery >= BATTERY_OK:
            self._battery_low.discard(r.device)
        return []
