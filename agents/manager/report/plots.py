"""The daily report's charts: one PNG per vital with its normal band (matplotlib, loaded
only when a report is drawn). The only I/O is writing the PNGs into the directory given."""

from __future__ import annotations

import math
import re
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from agents.manager.report.stats import (
    GAP_FACTOR,
    VITAL_LABELS,
    VITALS,
    DayData,
    _anomalies,
    _events_in,
    _series,
    _slice,
    day_bounds,
)

if TYPE_CHECKING:  # imported where used: the gateway loads pandas only to make a report
    pass


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name) or "person"


def render_plots(d: DayData, out_dir: Path) -> list[Path]:
    """One PNG per vital with data that day: values over local time, the normal range as a
    shaded band, SOS and anomaly times as vertical lines. Returns the written paths.

    The x axis is elapsed hours since local midnight, labelled with the local clock time, so
    a 23- or 25-hour day is drawn at its true length."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    start, end = day_bounds(d.day, d.tz)
    z = ZoneInfo(d.tz)
    day = _slice(d.readings, start, end)
    events = _events_in(d.events, start, end)

    def hours(ts: float) -> float:
        return (ts - start) / 3600.0

    def clock(x: float, _pos: int | None = None) -> str:
        return datetime.fromtimestamp(start + x * 3600.0, z).strftime("%H:%M")

    marks: list[tuple[float, str, str]] = []
    for e in events:
        if e.get("type") == "soft_sos":
            marks.append((hours(float(e["ts"])), "orange", "soft SOS"))
        elif e.get("type") == "hard_sos":
            marks.append((hours(float(e["ts"])), "red", "hard SOS"))
    for t in _anomalies(day, events, d.tz)["times"]:
        marks.append((hours(datetime.fromisoformat(t).timestamp()), "purple", "anomaly"))

    out_dir.mkdir(parents=True, exist_ok=True)
    span = hours(end)
    paths: list[Path] = []
    for v in VITALS:
        ts, vals = _series(day, v)
        if not vals:
            continue
        fig = Figure(figsize=(8, 3), dpi=100)
        ax = fig.add_subplot()
        rng = d.normal_ranges.get(v)
        if rng is not None:
            ax.axhspan(float(rng[0]), float(rng[1]), color="tab:green", alpha=0.15, label="normal")
        xs: list[float] = []
        ys: list[float] = []
        for i, (t, y) in enumerate(zip(ts, vals, strict=True)):
            if i and t - ts[i - 1] > GAP_FACTOR * d.expected_interval_s:
                xs.append(math.nan)  # do not draw a line across a device gap
                ys.append(math.nan)
            xs.append(hours(t))
            ys.append(y)
        ax.plot(xs, ys, marker=".", linewidth=1, color="tab:blue", label=v)
        seen: set[str] = set()
        for x, colour, label in marks:
            ax.axvline(
                x, color=colour, linestyle="--", linewidth=1, label=None if label in seen else label
            )
            seen.add(label)
        ax.set_xlim(0.0, span)
        ax.set_xticks([float(h) for h in range(0, int(span) + 1, 3)])
        ax.xaxis.set_major_formatter(FuncFormatter(clock))
        ax.set_title(f"{VITAL_LABELS[v]} - {d.day.isoformat()}")
        ax.legend(loc="upper right", fontsize="small")
        fig.tight_layout()
        path = out_dir / f"{_safe(d.person)}_{d.day.isoformat()}_{v}.png"
        fig.savefig(path, format="png")
        paths.append(path)
    return paths


# ---------------------------------------------------------------- HTML
