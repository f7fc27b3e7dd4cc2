"""Confirmation that fits the sensor: the value a wrist reading contributes to the alarms.

A clinical device's reading (a cuff, a finger oximeter, a thermometer, a value typed in)
counts at once. A consumer wrist sensor's single reading can be off by several points (SpO2
±6 %, Rafl et al. 2022), so what the alarms see from it is a robust statistic over the
device's recent readings of that vital: the value that at least `M` of the last `K` readings
agree on (each of them at or beyond it), taken on the side nearest the normal range. With a
full window that is the median; with fewer readings, all of them must agree. One odd reading
(a motion artefact, an arm lain on) never moves it; a real change moves it once most of the
window has changed.

Two windows (`window()`, docs/clinical.md §2b):

* the **short** one, `K = 3` readings at a cadence of 30 s or faster (two of the last three;
  with the 30 s time rule this keeps the fast streams' timings) and `K = 5` at slower
  cadences (three of the last five: two to four minutes at one reading a minute). A value
  *severe* enough (past a critical limit by more than about one reading's error,
  `SEVERE_MARGIN`: awake SpO2 89 % or less, a pulse of 37 or 134, breathing 6 or 27;
  asleep one and a half times as far) counts on it;
* the **long** one for values closer to their limits, where a wrist's slow bias (a watch that
  reads 2 % low for an hour) and brief physiological dips look exactly like a real change: the
  majority of the readings of the last `LONG_AWAKE_S` (15 minutes) on a slow device, and of
  the last `LONG_ASLEEP_S` (30) asleep on any device. RCP's response to a single red NEWS2
  parameter is an urgent review within the hour, not minutes: the wait costs little. Brief nocturnal dips that end
  within minutes are normal (healthy sleepers over 60 reach a lowest SpO2 of 89 % on average,
  Gries & Brooks 1996), a fit sleeper's pulse and breathing sit a few beats above the NEWS2
  red bands, and a wrist reads less well at night (SpO2 RMSE 2.3 %);
* several vitals agreeing are evidence one vital alone is not: when the short windows'
  values together score NEWS2 medium or high (5 or more), the NEWS2 alert is judged on them
  (the monitor does this: a sepsis raises pulse, breathing and temperature together, and
  waiting for each vital's long window would only delay the family);
* readings older than the window (plus slack) say nothing about now: after a gap the window
  starts again, and until enough readings agree the vital has no alarm value (unknown, never
  normal: it can neither raise nor clear an alert).

Pure state per (person, device, vital); the monitor keeps one instance for live data and one
for late data.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping
from typing import NamedTuple

from gateway.monitor.context import Context

K_FAST = 3
K_SLOW = 5
FAST_INTERVAL_S = 30.0
LONG_AWAKE_S = 900.0
LONG_ASLEEP_S = 1800.0
# How far past its critical limit a wrist value must be for the short window: about one
# reading's error (SpO2 SD ~2 %, pulse ~3 bpm, breathing ~1.5 /min); asleep, where nocturnal
# dips and slower breathing are normal, one and a half times that.
SEVERE_MARGIN = {"spo2": 2.0, "heart_rate": 3.0, "respiratory_rate": 2.0}
SLEEP_MARGIN_FACTOR = 1.5
K_MAX = 241  # readings kept per vital: 20 minutes at 5 s
_SLACK_S = 10.0
# How far behind the newest reading an out-of-order one still finds its neighbours (the live
# window: older readings are late data, judged by the late-data instance).
REORDER_KEEP_S = 600.0


def window(interval: float, ctx: Context, vital: str = "spo2") -> tuple[int, int]:
    """(the short window's readings, the long window's readings) for a device now; the
    long one equals the short one where it does not apply (a fast stream, awake)."""
    short = K_FAST if interval <= FAST_INTERVAL_S else K_SLOW
    span = LONG_ASLEEP_S if ctx.asleep else LONG_AWAKE_S if interval > FAST_INTERVAL_S else 0.0
    long = max(short, min(K_MAX, math.floor(span / max(interval, 1.0)) + 1))
    return short, long


def agreed(values: list[float], m: int, mid: float) -> float | None:
    """The value at least `m` of `values` are at or beyond, on the side nearest `mid`."""
    n = len(values)
    if n < m:
        return None
    s = sorted(values)
    low_side = s[m - 1]  # m readings are <= this
    high_side = s[n - m]  # m readings are >= this
    lo, hi = min(low_side, high_side), max(low_side, high_side)
    return min(max(mid, lo), hi)


def severe(
    value: float, limits: tuple[float, float], vital: str, *, asleep: bool, moving: bool = False
) -> bool:
    """Past a limit by more than about one reading's error. `limits`: the tightest of the
    person's critical limits, the intervention thresholds and, at rest for an adult, the
    NEWS2 red bands (a pulse floor lowered for a beta-blocker still has NEWS2's 40 above it).
    Asleep, and for SpO2 while walking (motion is its commonest artefact), one and a half
    times as far."""
    wider = asleep or (moving and vital == "spo2")
    m = SEVERE_MARGIN.get(vital, 0.0) * (SLEEP_MARGIN_FACTOR if wider else 1.0)
    return value < limits[0] - m or value > limits[1] + m


class _Buffer:
    """One (person, device, vital)'s recent readings, oldest first, in flat arrays: 17 bytes
    a reading where a deque of (ts, value, exercising) tuples took ~100. Up to K_MAX for each
    vital of each wrist: at 1,000 persons that was tens of MB. Values are floats (the
    plausibility step's `float(raw)`), so array("d") keeps them exactly."""

    __slots__ = ("ex", "ts", "value")

    def __init__(self) -> None:
        self.ts = array("d")
        self.value = array("d")
        self.ex = bytearray()

    def __len__(self) -> int:
        return len(self.ts)

    def add(self, ts: float, x: float, ex: bool) -> None:
        if self.ts and ts < self.ts[-1]:
            # Out of order: sorted as (ts, value, exercising) tuples, as before.
            old = zip(self.ts, self.value, map(bool, self.ex), strict=True)
            items = sorted([*old, (ts, x, ex)])
            self.ts[:] = array("d", (i[0] for i in items))
            self.value[:] = array("d", (i[1] for i in items))
            self.ex[:] = bytes(i[2] for i in items)
        else:
            self.ts.append(ts)
            self.value.append(x)
            self.ex.append(ex)

    def trim(self, keep_from: float) -> None:
        """Drop the oldest while more than K_MAX are kept or the oldest is before `keep_from`."""
        ts = self.ts
        n = len(ts)
        if n <= K_MAX and ts[0] >= keep_from:
            return  # the usual case: nothing to drop
        k = max(0, n - K_MAX)
        while k < n and ts[k] < keep_from:
            k += 1
        del self.ts[:k], self.value[:k], self.ex[:k]


def _window_values(
    buf: _Buffer, ts: float, since: float, k: int, *, exercising: bool
) -> list[float]:
    """The last `k` values at or before `ts` and after `since`, oldest first. At rest,
    readings taken while walking or recovering say nothing about rest."""
    out: list[float] = []
    i = len(buf.ts)
    for t in reversed(buf.ts):
        i -= 1
        if t > ts:
            continue
        if t < since or len(out) >= k:
            break
        if exercising or not buf.ex[i]:
            out.append(buf.value[i])
    out.reverse()
    return out


class Agreed(NamedTuple):
    alarm: dict[str, float]  # what the alarms see
    short: dict[str, float]  # the short window's values (corroboration across vitals)


class Sustainer:
    def __init__(self) -> None:
        # (reading time, value, taken while exercising) per (person, device, vital)
        self._buf: dict[tuple[str, str, str], _Buffer] = {}

    def values(
        self,
        person: str,
        device: str,
        readings: Mapping[str, float],
        ts: float,
        *,
        interval: float,
        ctx: Context,
        mids: Mapping[str, float],
        limits: Mapping[str, tuple[float, float]] | None = None,
    ) -> Agreed:
        """Add this reading's wrist values; return each vital's alarm value (vitals without
        enough agreeing readings yet are left out) and its short window's value.
        `limits`: per vital, the limits a value far enough past (see `severe`) is judged on
        the short window alone."""
        out: dict[str, float] = {}
        shorts: dict[str, float] = {}
        for v, x in readings.items():
            key = (person, device, v)
            buf = self._buf.get(key)
            if buf is None:
                buf = self._buf[key] = _Buffer()
            buf.add(ts, x, ctx.exercising)
            k_short, k_long = window(interval, ctx, v)
            span = k_long * interval * 1.5 + _SLACK_S
            # Kept longer than the window: a reading that arrives after newer ones (a
            # redelivery, a shuffled burst) is judged on the window ending at its own time,
            # what was agreed then, so the order of arrival never changes what readings say.
            buf.trim(buf.ts[-1] - max(span, REORDER_KEEP_S))
            values = _window_values(buf, ts, ts - span, k_long, exercising=ctx.exercising)
            mid = mids.get(v, x)
            value = short = agreed(values[-k_short:], k_short // 2 + 1, mid)
            if short is not None:
                shorts[v] = short
            near = (  # `severe` here, not a callback: the walk stays in this module
                value is not None
                and limits is not None
                and severe(value, limits[v], v, asleep=ctx.asleep, moving=ctx.moving)
            )
            if k_long > k_short and value is not None and not near:
                # Close to its limits: the long window decides (None: not enough yet).
                value = agreed(values[-k_long:], k_long // 2 + 1, mid)
            if value is not None:
                out[v] = value
        return Agreed(out, shorts)

    def last(self, person: str, device: str, vital: str) -> float | None:
        """The time of the newest reading of `vital` from `device` (None: none kept)."""
        buf = self._buf.get((person, device, vital))
        return buf.ts[-1] if buf else None

    def forget(self, person: str) -> None:
        for key in [k for k in self._buf if k[0] == person]:
            del self._buf[key]
