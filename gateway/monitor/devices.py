"""Device state as the family sees it: stale / not worn / offline changes become events, and a
low battery is reported once until it is charged."""

from __future__ import annotations

from gateway.contract import EventType
from gateway.model import Event, Reading
from gateway.monitor.stale import StateChange

BATTERY_LOW = 15.0
BATTERY_OK = 25.0
_STATE = {"stale": "stale", "recovered": "active", "not_worn": "not_worn", "worn": "active",
          "offline": "offline", "online": "active"}  # fmt: skip
_EVENT = {
    "stale": EventType.DEVICE_STALE, "recovered": EventType.DEVICE_RECOVERED,
    "not_worn": EventType.DEVICE_NOT_WORN, "worn": EventType.DEVICE_RECOVERED,
    "offline": EventType.DEVICE_OFFLINE, "online": EventType.DEVICE_ONLINE,
}  # fmt: skip


class DeviceWatch:
    def __init__(self) -> None:
        self._state: dict[tuple[str, str], str] = {}
        self._battery_low: set[str] = set()

    def state(self, person: str, device: str) -> str:
        return self._state.get((person, device), "unknown")

    def change(self, ch: StateChange, now: float) -> Event:
        self._state[(ch.person, ch.device)] = _STATE.get(ch.kind, ch.kind)
        data = {"device": ch.device, "since": ch.since, **dict(ch.detail)}
        return Event(_EVENT[ch.kind], ch.person, now, data)

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
