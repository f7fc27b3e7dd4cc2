"""Device liveness: stale (silent), not worn, offline. Pure logic with injected time.

Per (person, device) three independent flags are tracked; the reported state is the most
serious one: ``offline`` > ``stale`` > ``not_worn`` > ``active``. Every flip of a flag is
reported once, as a :class:`StateChange`; nothing repeats on later ticks.

Stale
    No reading for ``factor`` x the device's interval. The interval is the household's
    ``expected_interval_s`` when given; else the median of the last ``gap_window`` gaps
    between readings (at least ``min_gaps`` of them), clamped to
    [``min_interval_s``, ``max_interval_s``]; else ``default_interval_s``. The median shrugs
    off outages and bursts; gaps shorter than ``min_interval_s`` (QoS 1 redeliveries after a
    reconnect) are not cadence and are ignored. ``tick(now)`` detects silence; the next
    reading reports ``recovered``.

Not worn
    ``not_worn_readings`` consecutive readings with no heart rate (None or 0) and no motion
    (steps None or 0) -> ``not_worn``; the next reading with a heart rate > 0 -> ``worn``.
    Only devices that have shown they measure heart rate (sent one, even 0) are judged on a
    missing heart rate: a BP cuff or thermometer never sends one and is not "off the wrist".
    Readings with motion, or with another contact vital (``other_vitals=True``: SpO2,
    temperature, BP measured on the body), restart the count but do not by themselves
    report ``worn``: a watch can count steps in a pocket.

Offline / online (the retained status topic, LWT)
    ``offline`` is reported at once. ``online`` after ``offline`` is reported at once too (the
    device's own claim that its connection is back); it does not mean readings flow again,
    so the silence clock restarts at that moment and, if no reading follows within
    factor x interval, ``tick`` reports ``stale``. A reading while offline is proof of life:
    ``online`` is reported. A retained ``online`` for a device not known to be offline is no
    change (nothing is reported) but starts watching it for silence.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

DeviceState = Literal["active", "stale", "not_worn", "offline"]
ChangeKind = Literal["stale", "recovered", "not_worn", "worn", "offline", "online"]


@dataclass(frozen=True, slots=True)
class StateChange:
    person: str
    device: str
    kind: ChangeKind
    since: float  # when the new state began (for stale: when the device went silent)
    detail: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "person": self.person,
            "device": self.device,
            "kind": self.kind,
            "since": self.since,
            **dict(self.detail),
        }


@dataclass(slots=True)
class _Device:
    gaps: deque[float]
    last_seen: float | None = None
    silence_base: float | None = None  # silence is measured from here (last reading / online)
    configured_interval: float | None = None
    stale: bool = False
    offline: bool = False
    not_worn: bool = False
    hr_capable: bool = False
    no_wear_count: int = 0
    no_wear_since: float | None = None
    last_change_at: float | None = None  # `since` of the last reported change
    seen_readings: int = 0

    def state(self) -> DeviceState:
        if self.offline:
            return "offline"
        if self.stale:
            return "stale"
        if self.not_worn:
            return "not_worn"
        return "active"


class StaleTracker:
    def __init__(
        self,
        factor: float = 3.0,
        default_interval_s: float = 60.0,
        not_worn_readings: int = 3,
        *,
        gap_window: int = 20,
        min_gaps: int = 3,
        min_interval_s: float = 1.0,
        max_interval_s: float = 3600.0,
    ) -> None:
        if factor <= 1 or default_interval_s <= 0 or not_worn_readings < 1:
            raise ValueError("factor must be > 1, default_interval_s > 0, not_worn_readings >= 1")
        if not 0 < min_interval_s <= max_interval_s or gap_window < 1 or min_gaps < 1:
            raise ValueError("invalid interval estimate settings")
        self.factor = factor
        self.default_interval_s = default_interval_s
        self.not_worn_readings = not_worn_readings
        self.gap_window = gap_window
        self.min_gaps = min_gaps
        self.min_interval_s = min_interval_s
        self.max_interval_s = max_interval_s
        self._devices: dict[tuple[str, str], _Device] = {}

    def _device(self, person: str, device: str) -> _Device:
        d = self._devices.get((person, device))
        if d is None:
            d = self._devices[(person, device)] = _Device(gaps=deque(maxlen=self.gap_window))
        return d

    def _interval(self, d: _Device) -> tuple[float, str]:
        if d.configured_interval is not None and d.configured_interval > 0:
            return d.configured_interval, "config"
        if len(d.gaps) >= self.min_gaps:
            est = statistics.median(d.gaps)
            return min(max(est, self.min_interval_s), self.max_interval_s), "estimate"
        return self.default_interval_s, "default"

    # --- inputs --------------------------------------------------------------------------
    def seen(
        self,
        person: str,
        device: str,
        *,
        ts_received: float,
        heart_rate: float | None,
        steps: int | None,
        expected_interval_s: float | None,
        other_vitals: bool = False,
    ) -> list[StateChange]:
        """A reading arrived (``ts_received``: gateway receive time)."""
        d = self._device(person, device)
        d.configured_interval = expected_interval_s
        out: list[StateChange] = []
        gap = None if d.last_seen is None else ts_received - d.last_seen
        if gap is not None and gap >= self.min_interval_s:
            d.gaps.append(gap)
        interval, source = self._interval(d)

        if d.offline:
            d.offline = False
            out.append(self._change(person, device, d, "online", ts_received, {"via": "reading"}))
        if d.stale:
            d.stale = False
            silent_for = ts_received - d.silence_base if d.silence_base is not None else None
            out.append(
                self._change(
                    person,
                    device,
                    d,
                    "recovered",
                    ts_received,
                    {
                        "silent_for_s": None if silent_for is None else round(silent_for, 3),
                        "interval_s": interval,
                        "interval_source": source,
                    },
                )
            )

        if heart_rate is not None:
            d.hr_capable = True
        if heart_rate is not None and heart_rate > 0:
            d.no_wear_count, d.no_wear_since = 0, None
            if d.not_worn:
                d.not_worn = False
                out.append(self._change(person, device, d, "worn", ts_received, {}))
        elif (steps is not None and steps > 0) or other_vitals:
            d.no_wear_count, d.no_wear_since = 0, None  # evidence of wear, not proof
        elif d.hr_capable:
            d.no_wear_count += 1
            if d.no_wear_since is None:
                d.no_wear_since = ts_received
            if d.no_wear_count >= self.not_worn_readings and not d.not_worn:
                d.not_worn = True
                out.append(
                    self._change(
                        person,
                        device,
                        d,
                        "not_worn",
                        d.no_wear_since,
                        {"readings": d.no_wear_count},
                    )
                )

        d.last_seen = ts_received if d.last_seen is None else max(d.last_seen, ts_received)
        d.silence_base = d.last_seen
        d.seen_readings += 1
        return out

    def status(self, person: str, device: str, online: bool, now: float) -> list[StateChange]:
        """The retained status topic (``online``/``offline``, the device's LWT)."""
        d = self._device(person, device)
        if not online:
            if d.offline:
                return []
            d.offline = True
            return [self._change(person, device, d, "offline", now, {"last_seen": d.last_seen})]
        if not d.offline:
            if d.silence_base is None:
                d.silence_base = now  # announced itself: expect readings from now on
            return []
        d.offline = False
        d.silence_base = now if d.last_seen is None else max(d.last_seen, now)
        return [self._change(person, device, d, "online", now, {"via": "status"})]

    def tick(self, now: float) -> list[StateChange]:
        """Report devices that have gone silent (call every few seconds)."""
        out: list[StateChange] = []
        for (person, device), d in self._devices.items():
            if d.offline or d.stale or d.silence_base is None:
                continue  # offline already says more than stale
            interval, source = self._interval(d)
            silent_for = now - d.silence_base
            if silent_for >= self.factor * interval:
                d.stale = True
                out.append(
                    self._change(
                        person,
                        device,
                        d,
                        "stale",
                        d.silence_base,
                        {
                            "silent_for_s": round(silent_for, 3),
                            "interval_s": interval,
                            "interval_source": source,
                            "last_seen": d.last_seen,
                        },
                    )
                )
        return out

    @staticmethod
    def _change(
        person: str,
        device: str,
        d: _Device,
        kind: ChangeKind,
        since: float,
        detail: Mapping[str, Any],
    ) -> StateChange:
        d.last_change_at = since
        return StateChange(person, device, kind, since, dict(detail))

    # --- views ---------------------------------------------------------------------------
    def state(self, person: str, device: str) -> DeviceState | None:
        d = self._devices.get((person, device))
        return None if d is None else d.state()

    def last_seen(self, person: str, device: str) -> float | None:
        d = self._devices.get((person, device))
        return None if d is None else d.last_seen

    def interval(self, person: str, device: str) -> float:
        """The interval staleness is judged against (config, estimate or default)."""
        d = self._devices.get((person, device))
        return self.default_interval_s if d is None else self._interval(d)[0]

    def forget(self, person: str, device: str | None = None) -> None:
        for key in [k for k in self._devices if k[0] == person and device in (None, k[1])]:
            del self._devices[key]

    def snapshot(self) -> dict[str, dict[str, dict[str, Any]]]:
        """JSON-able view: person -> device -> state, last seen, interval, flags."""
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for (person, device), d in self._devices.items():
            interval, source = self._interval(d)
            out.setdefault(person, {})[device] = {
                "state": d.state(),
                "last_change_at": d.last_change_at,
                "last_seen": d.last_seen,
                "stale": d.stale,
                "not_worn": d.not_worn,
                "offline": d.offline,
                "interval_s": interval,
                "interval_source": source,
                "readings": d.seen_readings,
            }
        return out
