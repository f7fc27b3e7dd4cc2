"""A person's own resting baseline: the range their resting values usually keep, learnt over
days of their own readings (docs/clinical.md §2d, "A person's own baseline").

It is evidence for one decision only: a low-priority alert (a vital mildly outside the
population's normal range, tier 1) whose value lies inside the person's usual range is shown
as an information signal, "usual for them", instead of a low-priority alarm
(`response.usual_for_them`). It never touches a NEWS2 red parameter, a critical or an
intervention value, or anything of medium or high priority: a baseline learnt over weeks can
drift with a slow illness, so it may only quiet what already wakes nobody.

What it learns from (river's rule: never learn from what was flagged):

* live readings taken at rest (not active, not recovering) of vitals a device measures (a
  wrist temperature is a trend, never scored, so never learnt);
* values classed normal, low or high only (never critical or implausible), from readings the
  anomaly score did not flag, while no urgent alert is open for the person (the caller's
  checks);
* asleep and awake apart: a pulse of 44 asleep says nothing about 44 awake.

Per local day it keeps a histogram of values; the usual range is the central 95 % (the 2.5th
to 97.5th centile, as a laboratory reference interval, CLSI EP28-A3c) of
the last `WINDOW_DAYS` completed days, once `min_days` of them hold values and at least
`MIN_VALUES` values in all (a cuff three times a day reaches that in a week). The day in
progress never counts: a bad morning cannot widen the range it is judged by.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from datetime import datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

from gateway.contract.vitals import NUMERIC_VITALS
from gateway.monitor.observe import ANOMALY_OPEN

Pair = tuple[float, float]
State = Literal["awake", "asleep"]

# Consumer wearables set a personal baseline after about a week of wear and keep a rolling
# month (Bellabeat: "first meaningful ... after 7 days"; Biostrap: the last 5-30 days).
MIN_DAYS = 7
WINDOW_DAYS = 28
MIN_VALUES = 20
# The central 95 %, as a laboratory reference interval is (CLSI EP28-A3c).
LOW_Q, HIGH_Q = 0.025, 0.975
LEARNT: tuple[str, ...] = NUMERIC_VITALS
# Histogram bins: whole units, tenths of a degree.
_RESOLUTION: dict[str, float] = {"temperature_c": 0.1}
SNAPSHOT_VERSION = 1


class Baselines:
    """Per (person, vital, asleep/awake): a histogram per local day. Use from one thread."""

    def __init__(
        self,
        timezone: str,
        *,
        min_days: int = MIN_DAYS,
        window_days: int = WINDOW_DAYS,
        min_values: int = MIN_VALUES,
    ) -> None:
        """`min_days` 0: never usual (the baseline is off)."""
        self._tz = ZoneInfo(timezone)
        self.min_days = min_days
        self.window_days = window_days
        self.min_values = min_values
        self._days: dict[tuple[str, str, State], dict[int, Counter[int]]] = {}
        # (person, state) -> (day it was computed on, vital -> usual range)
        self._usual: dict[tuple[str, State], tuple[int, dict[str, Pair]]] = {}
        # The local day the last timestamp fell in, and its bounds (one conversion a day).
        self._day = (0, 0.0, -1.0)
        self.dirty = False  # a day was completed since the last snapshot: worth writing

    @property
    def enabled(self) -> bool:
        return self.min_days > 0

    def day_of(self, ts: float) -> int:
        """The household's local date of `ts`, as an ordinal."""
        day, start, end = self._day
        if start <= ts < end:
            return day
        d = datetime.fromtimestamp(ts, self._tz).date()
        start = datetime.combine(d, time(), self._tz).timestamp()
        end = datetime.combine(d + timedelta(days=1), time(), self._tz).timestamp()
        self._day = (d.toordinal(), start, end)
        return self._day[0]

    def learn(self, person: str, values: Mapping[str, float], *, ts: float, asleep: bool) -> None:
        """One resting reading's values the caller judged fit to learn from."""
        if not self.enabled:
            return
        day = self.day_of(ts)
        state: State = "asleep" if asleep else "awake"
        for v, x in values.items():
            if v not in LEARNT:
                continue
            days = self._days.setdefault((person, v, state), {})
            hist = days.get(day)
            if hist is None:
                hist = days[day] = Counter()
                # A new day: yesterday is complete, the window moves on.
                for old in [d for d in days if d <= day - self.window_days]:
                    del days[old]
                self._usual.pop((person, state), None)
                self.dirty = True
            hist[round(x / _RESOLUTION.get(v, 1.0))] += 1

    def usual(self, person: str, *, ts: float, asleep: bool) -> Mapping[str, Pair]:
        """vital -> the person's usual resting range in this state, for the vitals with
        enough completed days (empty until then)."""
        if not self.enabled:
            return {}
        today = self.day_of(ts)
        state: State = "asleep" if asleep else "awake"
        cached = self._usual.get((person, state))
        if cached is not None and cached[0] == today:
            return cached[1]
        out: dict[str, Pair] = {}
        for v in LEARNT:
            days = self._days.get((person, v, state))
            if not days:
                continue
            done = [h for d, h in days.items() if today - self.window_days <= d < today and h]
            if len(done) < self.min_days:
                continue
            merged: Counter[int] = Counter()
            for h in done:
                merged.update(h)
            if sum(merged.values()) >= self.min_values:
                res = _RESOLUTION.get(v, 1.0)
                lo, hi = _centiles(merged, LOW_Q, HIGH_Q)
                out[v] = (round(lo * res, 1), round(hi * res, 1))
        self._usual[(person, state)] = (today, out)
        return out

    # --- persistence ---------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        self.dirty = False
        return {
            "version": SNAPSHOT_VERSION,
            "keys": [
                {"person": p, "vital": v, "state": s,
                 "days": {str(d): {str(b): n for b, n in h.items()} for d, h in days.items()}}
                for (p, v, s), days in self._days.items()
            ],
        }  # fmt: skip

    def restore(self, data: Mapping[str, Any]) -> None:
        """Replace the state with a ``snapshot()``; raises ValueError/TypeError/KeyError on a
        malformed one and keeps the current state."""
        if not data:
            return
        if data.get("version") != SNAPSHOT_VERSION:
            raise ValueError("unknown baseline snapshot version")
        out: dict[tuple[str, str, State], dict[int, Counter[int]]] = {}
        for k in data["keys"]:
            state = k["state"]
            if state not in ("awake", "asleep") or k["vital"] not in LEARNT:
                raise ValueError("malformed baseline key")
            out[(str(k["person"]), str(k["vital"]), state)] = {
                int(d): Counter({int(b): int(n) for b, n in h.items()})
                for d, h in k["days"].items()
            }
        self._days, self._usual = out, {}


def _centiles(hist: Counter[int], lo_q: float, hi_q: float) -> tuple[int, int]:
    """The bins holding the `lo_q` and `hi_q` centiles of a histogram (nearest rank)."""
    n = sum(hist.values())
    lo_rank, hi_rank = max(1, math.ceil(lo_q * n)), max(1, math.ceil(hi_q * n))
    lo = hi = None
    seen = 0
    for b in sorted(hist):
        seen += hist[b]
        if lo is None and seen >= lo_rank:
            lo = b
        if seen >= hi_rank:
            hi = b
            break
    assert lo is not None and hi is not None
    return lo, hi


_LEARNABLE = frozenset({"normal", "low", "high"})


def learnable(
    accepted: Mapping[str, float], classes: Mapping[str, str], anomaly: float | None
) -> dict[str, float]:
    """The values of a resting reading fit to learn from: none if the anomaly forest flagged
    the reading, and only those classed normal, low or high (never critical or implausible).
    (At rest and with no urgent alert open: the caller's checks.)"""
    if anomaly is not None and anomaly >= ANOMALY_OPEN:
        return {}
    return {v: x for v, x in accepted.items() if classes.get(v) in _LEARNABLE}
