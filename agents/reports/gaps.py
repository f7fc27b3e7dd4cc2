"""Device gaps: when each device was silent, as a reader wants it (a few long stretches, a
total), not one row per late reading.

Rules (the tests compute these by hand):

* Per device, over that device's readings of the day (any vital): the silence between two
  consecutive readings, and from local midnight to its first reading and from its last
  reading to the end of the day, is a gap when it is longer than
  ``max(3 x the device's interval, 5 min)``. The floor keeps a device that reads every
  minute while configured for 5 s from listing every minute (issue 14: 1,441 rows a day).
* The day ends at ``as_of`` when the report is made before midnight (the evening job): the
  hours still to come are not silence.
* A device with no reading that day has no gaps (nothing says it was worn that day).
* ``count`` and ``total_minutes`` cover every gap; ``listed`` keeps the ``MAX_LISTED``
  longest, in time order (ties: the earlier one).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: the gateway loads pandas only to make a report
    import pandas as pd

GAP_FACTOR = 3.0
MIN_GAP_S = 300.0
MAX_LISTED = 10


def gap_threshold_s(interval_s: float) -> float:
    """Silence longer than this is a gap (also where the charts stop drawing a line)."""
    return max(GAP_FACTOR * interval_s, MIN_GAP_S)


def device_interval(device: str, intervals: Mapping[str, float], default_s: float) -> float:
    return float(intervals.get(device, default_s))


def _device_ts(day: pd.DataFrame) -> dict[str, list[float]]:
    import pandas as pd

    if day.empty:
        return {}
    devices = day["device"] if "device" in day.columns else pd.Series([None] * len(day))
    out: dict[str, list[float]] = {}
    for dev, t in zip(devices, day["ts"], strict=True):
        name = "" if dev is None or (isinstance(dev, float) and dev != dev) else str(dev)
        out.setdefault(name, []).append(float(t))
    return {k: sorted(v) for k, v in sorted(out.items())}


def find_gaps(
    day: pd.DataFrame,
    start: float,
    end: float,
    *,
    intervals: Mapping[str, float],
    default_interval_s: float,
    as_of: float | None = None,
) -> list[dict[str, Any]]:
    """Every gap of the day as {device, start, end, seconds, threshold_s} (epoch seconds),
    in time order."""
    stop = end if as_of is None else max(start, min(end, as_of))
    gaps: list[dict[str, Any]] = []
    for dev, ts in _device_ts(day).items():
        limit = gap_threshold_s(device_interval(dev, intervals, default_interval_s))
        for a, b in itertools.pairwise([start, *ts, max(stop, ts[-1])]):
            if b - a > limit:
                gaps.append({"device": dev, "start": a, "end": b, "seconds": b - a})
    return sorted(gaps, key=lambda g: (g["start"], g["device"]))


def summarise(
    gaps: list[dict[str, Any]], iso: Callable[[float], str], rnd: Callable[[float, int], float]
) -> dict[str, Any]:
    """The report's section: count and total over all gaps, the longest few listed."""
    longest = sorted(gaps, key=lambda g: (-g["seconds"], g["start"]))[:MAX_LISTED]
    listed = sorted(longest, key=lambda g: (g["start"], g["device"]))
    return {
        "count": len(gaps),
        "total_minutes": rnd(sum(g["seconds"] for g in gaps) / 60.0, 1),
        "min_gap_minutes": rnd(MIN_GAP_S / 60.0, 1),
        "listed": [
            {
                "device": g["device"],
                "start": iso(g["start"]),
                "end": iso(g["end"]),
                "minutes": rnd(g["seconds"] / 60.0, 1),
            }
            for g in listed
        ],
    }
