"""What the day's charts show, as plain JSON-ready data: one series per vital with its normal
band, the event markers (SOS, alerts, anomalies, falls) and the device gaps, on one time axis.

The report's PNGs (plots.py) are drawn from this and nothing else, so another view of the
same day (the console's person page, drawing in the browser) can take the same dict and
show the same charts. Times are epoch seconds; `tz` says how to label them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agents.reports.gaps import device_interval, find_gaps, gap_threshold_s
from agents.reports.stats import (
    VITAL_LABELS,
    VITALS,
    DayData,
    _anomalies,
    _events_in,
    _slice,
    day_bounds,
)

# (event type, its label on the charts). Alerts found in late data are marked at the time
# of their readings, like every other event (stats.event_time).
MARKERS: dict[str, str] = {
    "hard_sos": "Hard SOS",
    "soft_sos": "Alert (soft SOS)",
    "advisory": "Low-priority alert",
    "retrospective_alert": "Alert in synced data",
    "fall_detected": "Fall",
}
_OPENINGS = ("opened", "reopened", "recurred")


def _markers(d: DayData, day: Any, start: float, end: float) -> list[dict[str, Any]]:
    events = _events_in(d.events, start, end)
    out: list[dict[str, Any]] = []
    for e in events:
        kind = str(e.get("type"))
        if kind not in MARKERS:
            continue
        if kind == "retrospective_alert" and e.get("transition") not in _OPENINGS:
            continue  # its updates and clearing are not new alerts
        out.append({"ts": float(e["ts"]), "kind": kind, "label": MARKERS[kind]})
    for t in _anomalies(day, events, d.tz)["times"]:
        ts = datetime.fromisoformat(t).timestamp()
        out.append({"ts": ts, "kind": "anomaly", "label": "Anomaly"})
    return sorted(out, key=lambda m: (m["ts"], m["kind"]))


def _series(d: DayData, day: Any, vital: str) -> list[list[float | None]]:
    """[[ts, value], ...] in time order, with [ts, None] where the device was silent (a
    break in the line, not a line drawn across the gap)."""
    import pandas as pd

    if vital not in day.columns or day.empty:
        return []
    vals = pd.to_numeric(day[vital], errors="coerce")
    devices = day["device"] if "device" in day.columns else pd.Series([""] * len(day))
    out: list[list[float | None]] = []
    prev: float | None = None
    for t, v, dev in zip(day["ts"], vals, devices, strict=True):
        if pd.isna(v):
            continue
        t = float(t)
        limit = gap_threshold_s(
            device_interval(str(dev), d.device_intervals, d.expected_interval_s)
        )
        if prev is not None and t - prev > limit:
            out.append([(prev + t) / 2.0, None])
        out.append([t, float(v)])
        prev = t
    return out


def chart_data(d: DayData) -> dict[str, Any]:
    """The charts of `d`'s day: {person, date, tz, start, end, series, markers, gaps}.

    series: {vital: {label, points, normal}} for the vitals with data that day;
    markers: [{ts, kind, label}]; gaps: [{device, start, end}] (every gap, gaps.py rules)."""
    start, end = day_bounds(d.day, d.tz)
    day = _slice(d.readings, start, end)
    series: dict[str, Any] = {}
    for v in VITALS:
        points = _series(d, day, v)
        if not points:
            continue
        rng = d.normal_ranges.get(v)
        series[v] = {
            "label": VITAL_LABELS[v],
            "points": points,
            "normal": None if rng is None else [float(rng[0]), float(rng[1])],
        }
    gaps = find_gaps(day, start, end, intervals=d.device_intervals,
                     default_interval_s=d.expected_interval_s, as_of=d.as_of)  # fmt: skip
    return {
        "person": d.person,
        "date": d.day.isoformat(),
        "tz": d.tz,
        "start": start,
        "end": end,
        "series": series,
        "markers": _markers(d, day, start, end),
        "gaps": [{"device": g["device"], "start": g["start"], "end": g["end"]} for g in gaps],
    }
