"""The daily report's charts: one PNG per vital (matplotlib, loaded only when a report is
drawn), drawn from `chart_data` alone so the console can show the same charts from the same
data. The only I/O is writing the PNGs into the directory given (durably, 0600)."""

from __future__ import annotations

import io
import math
import re
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from agents.reports.chart_data import chart_data
from agents.reports.stats import DayData
from gateway.base.files import write_durable

# Colour and line style differ per kind, so a marker is told apart without colour too.
MARKER_STYLE: dict[str, tuple[str, str, float]] = {
    "hard_sos": ("#c00000", "-", 2.0),
    "soft_sos": ("#e07000", "--", 1.5),
    "advisory": ("#8a8a00", ":", 0.8),  # thin: low priority
    "retrospective_alert": ("#7a4a00", "-.", 1.5),
    "fall_detected": ("#000000", "-", 2.0),
    "anomaly": ("#7030a0", ":", 1.5),
}


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name) or "person"


def _merged(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Overlapping gaps of several devices shaded once."""
    out: list[tuple[float, float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def draw_charts(chart: dict[str, Any], out_dir: Path) -> list[Path]:
    """One PNG per series of `chart` (a `chart_data` dict): the values over local time, the
    normal range as a green band, silent stretches grey, and every marker (SOS, alerts,
    anomalies, falls) as a vertical line in the legend. Returns the written paths.

    The x axis is elapsed hours since local midnight, labelled with the local clock time, so
    a 23- or 25-hour day is drawn at its true length."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    start, end = float(chart["start"]), float(chart["end"])
    z = ZoneInfo(str(chart["tz"]))

    def hours(ts: float) -> float:
        return (ts - start) / 3600.0

    def clock(x: float, _pos: int | None = None) -> str:
        return datetime.fromtimestamp(start + x * 3600.0, z).strftime("%H:%M")

    span = hours(end)
    silent = _merged([(hours(g["start"]), hours(g["end"])) for g in chart["gaps"]])
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for vital, s in chart["series"].items():
        fig = Figure(figsize=(10, 2.8), dpi=100)
        ax = fig.add_subplot()
        if s["normal"] is not None:
            lo, hi = s["normal"]
            ax.axhspan(lo, hi, color="#2e8b57", alpha=0.15, label="normal range")
        for i, (a, b) in enumerate(silent):
            ax.axvspan(a, b, color="#888888", alpha=0.18, hatch="//", linewidth=0,
                       label=None if i else "no readings")  # fmt: skip
        xs = [hours(t) for t, _ in s["points"]]
        ys = [math.nan if v is None else v for _, v in s["points"]]
        ax.plot(xs, ys, marker=".", markersize=3, linewidth=1, color="#1f5fa8", label=s["label"])
        seen: set[str] = set()
        for m in chart["markers"]:
            colour, style, width = MARKER_STYLE.get(m["kind"], ("#444444", "--", 1.0))
            ax.axvline(hours(m["ts"]), color=colour, linestyle=style, linewidth=width,
                       label=None if m["kind"] in seen else m["label"])  # fmt: skip
            seen.add(m["kind"])
        ax.set_xlim(0.0, span)
        ax.set_xticks([float(h) for h in range(0, int(span) + 1, 3)])
        ax.xaxis.set_major_formatter(FuncFormatter(clock))
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(s["label"], loc="left", fontsize="medium")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
        # Fixed margins, not tight_layout: every chart's time axis lines up under the others.
        fig.subplots_adjust(left=0.07, right=0.80, top=0.88, bottom=0.12)
        path = out_dir / f"{_safe(str(chart['person']))}_{chart['date']}_{vital}.png"
        png = io.BytesIO()
        fig.savefig(png, format="png")
        write_durable(path, png.getvalue())  # whole after a crash, like the rest of the report
        paths.append(path)
    return paths


def render_plots(d: DayData, out_dir: Path) -> list[Path]:
    """The day's charts (one PNG per vital with data that day)."""
    return draw_charts(chart_data(d), out_dir)
