"""The daily health report: one person, one local calendar day.

`compute_report` turns a `DayData` (the day's readings plus the 7 days before, the day's
events, the person's normal ranges, medication adherence and sleep) into a plain,
JSON-serialisable dict. It is pure: no clock, no I/O. `render_plots` and `render_html` draw
it (the only I/O is writing the PNGs into the directory they are given), and
`narrative_ok` guards the local model's prose: a narrative that states a number the report
does not contain is rejected.

Rules (the tests compute these by hand):

* **Day** - local midnight to the next local midnight in `tz` (zoneinfo), so a spring-forward
  day lasts 23 hours and a fall-back day 25. A reading belongs to the day if
  ``start <= ts < end``. Times in the report are local ISO-8601 strings with their UTC offset
  (``2026-03-10T08:20:00+00:00``), which keeps the repeated hour of a fall-back day apart.
* **Per-vital stats** - min / mean / max / n over the day's non-missing values (the mean is
  the plain mean of the readings, not time-weighted).
* **Time out of range** - each reading of a vital *holds* from its timestamp until the next
  reading of the same vital, but for at most 3 x `expected_interval_s` and never past the end
  of the day. ``out_of_range_minutes`` is the sum of the hold intervals whose value is outside
  the person's normal range (``v < low or v > high``; the bounds themselves are normal).
  ``monitored_minutes`` is the sum of all hold intervals, and ``out_of_range_pct`` is
  out-of-range minutes as a percentage of monitored minutes. A reading from the evening
  before does not hold into the day. No normal range for a vital -> both are null.
* **Device gaps** - over all the day's readings (any device, any vital), two consecutive
  readings more than 3 x `expected_interval_s` apart are a gap ``{start, end, minutes}``
  from the earlier to the later reading. If the day has any reading, the stretch from local
  midnight to the first reading and from the last reading to the next midnight count the same
  way; a day with no reading has no gaps (``readings`` is 0).
* **NEWS2** - the day's maximum ``news2_total`` and the time it was first reached.
* **Anomalies** - readings whose ``anomaly`` score is >= 0.6, plus ``anomaly`` events (score
  from the event's ``score`` field, if any); an event at the same second as a flagged reading
  counts once. ``max_score`` is the highest score seen that day (flagged or not).
* **SOS** - counts and times of the day's ``soft_sos`` and ``hard_sos`` events, and of
  ``retrospective_alert`` openings (alerts found in late data); ``events`` counts every type. Events outside the day window are ignored.
* **Sleep** - the sessions as given (a night that began the evening before counts whole);
  ``total_minutes`` is their sum.
* **Adherence** - per medication, doses scheduled and how many were taken / missed /
  skipped / snoozed / pending; ``rate`` = taken / (scheduled - pending), a fraction, null if
  no dose has been decided yet.
* **vs_previous_7_days** - per vital: the day's mean minus the mean of the daily means of the
  7 previous local calendar days (days without data for that vital are left out);
  ``flag`` is true when ``|diff| > 2 x sd`` (sample standard deviation of those daily means).
  With fewer than 3 previous days of data, ``baseline_mean``, ``diff``, ``sd`` and ``flag``
  are null.

Rounding (half-up): vitals 1 decimal (temperature 2), minutes and percentages 1 decimal,
scores and adherence rates 3 decimals, comparison differences and sds 2 decimals.
"""

from __future__ import annotations

import base64
import html
import itertools
import math
import re
import statistics
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

if TYPE_CHECKING:  # imported where used: the gateway loads pandas only to make a report
    import pandas as pd

VITALS: tuple[str, ...] = (
    "heart_rate",
    "spo2",
    "respiratory_rate",
    "systolic_bp",
    "diastolic_bp",
    "temperature_c",
)
VITAL_LABELS: dict[str, str] = {
    "heart_rate": "Heart rate (bpm)",
    "spo2": "SpO2 (%)",
    "respiratory_rate": "Respiratory rate (/min)",
    "systolic_bp": "Systolic BP (mmHg)",
    "diastolic_bp": "Diastolic BP (mmHg)",
    "temperature_c": "Temperature (°C)",
}
VITAL_DECIMALS: dict[str, int] = {v: 1 for v in VITALS} | {"temperature_c": 2}
GAP_FACTOR = 3.0
ANOMALY_THRESHOLD = 0.6
BASELINE_DAYS = 7
MIN_BASELINE_DAYS = 3
DOSE_STATUSES: tuple[str, ...] = ("taken", "missed", "skipped", "snoozed", "pending")


@dataclass(frozen=True)
class DayData:
    person: str
    day: date  # local calendar day
    tz: str  # IANA timezone, e.g. "Europe/London"
    # columns: ts (epoch s), device, heart_rate, spo2, respiratory_rate, systolic_bp,
    # diastolic_bp, temperature_c, steps, news2_total, anomaly; the day and the 7 days before
    readings: pd.DataFrame
    events: list[dict[str, Any]] = field(default_factory=list)
    normal_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    adherence: list[dict[str, Any]] = field(default_factory=list)
    sleep: list[dict[str, Any]] = field(default_factory=list)
    expected_interval_s: float = 60.0


# ---------------------------------------------------------------- helpers


def _r(x: float, nd: int) -> float:
    """Round half-up (not banker's) so hand-computed expectations are unambiguous."""
    q = Decimal(1).scaleb(-nd)
    return float(Decimal(repr(float(x))).quantize(q, rounding=ROUND_HALF_UP))


def day_bounds(day: date, tz: str) -> tuple[float, float]:
    """Epoch seconds of local midnight starting `day` and of the next local midnight."""
    z = ZoneInfo(tz)
    start = datetime.combine(day, time(0), tzinfo=z)
    end = datetime.combine(day + timedelta(days=1), time(0), tzinfo=z)
    return start.timestamp(), end.timestamp()


def _iso(ts: float, tz: str) -> str:
    return datetime.fromtimestamp(ts, ZoneInfo(tz)).isoformat(timespec="seconds")


def _slice(df: pd.DataFrame, start: float, end: float) -> pd.DataFrame:
    import pandas as pd

    if df.empty or "ts" not in df.columns:
        return pd.DataFrame(columns=["ts"])
    ts = pd.to_numeric(df["ts"], errors="coerce")
    out = df[(ts >= start) & (ts < end)].copy()
    out["ts"] = pd.to_numeric(out["ts"], errors="coerce").astype(float)
    return out.sort_values("ts", kind="stable").reset_index(drop=True)


def _series(df: pd.DataFrame, col: str) -> tuple[list[float], list[float]]:
    """(timestamps, values) of the non-missing values of `col`, in time order."""
    import pandas as pd

    if col not in df.columns or df.empty:
        return [], []
    vals = pd.to_numeric(df[col], errors="coerce")
    mask = vals.notna()
    return (
        [float(t) for t in df.loc[mask, "ts"]],
        [float(v) for v in vals[mask]],
    )


def _holds(ts: Sequence[float], end: float, cap: float) -> list[float]:
    """Seconds each reading holds: until the next one, at most `cap`, never past `end`."""
    out: list[float] = []
    for i, t in enumerate(ts):
        nxt = ts[i + 1] if i + 1 < len(ts) else end
        out.append(max(0.0, min(nxt, t + cap, end) - t))
    return out


# ---------------------------------------------------------------- sections


def _vital_stats(
    ts: list[float],
    vals: list[float],
    rng: tuple[float, float] | None,
    end: float,
    cap: float,
    nd: int,
) -> dict[str, Any]:
    if not vals:
        return {
            "min": None,
            "mean": None,
            "max": None,
            "n": 0,
            "out_of_range_minutes": None,
            "out_of_range_pct": None,
            "monitored_minutes": 0.0,
            "normal_range": None if rng is None else [rng[0], rng[1]],
        }
    holds = _holds(ts, end, cap)
    monitored = sum(holds)
    out_min: float | None = None
    pct: float | None = None
    if rng is not None:
        lo, hi = rng
        out_s = sum(h for h, v in zip(holds, vals, strict=True) if v < lo or v > hi)
        out_min = _r(out_s / 60.0, 1)
        pct = _r(100.0 * out_s / monitored, 1) if monitored > 0 else None
    return {
        "min": _r(min(vals), nd),
        "mean": _r(statistics.fmean(vals), nd),
        "max": _r(max(vals), nd),
        "n": len(vals),
        "out_of_range_minutes": out_min,
        "out_of_range_pct": pct,
        "monitored_minutes": _r(monitored / 60.0, 1),
        "normal_range": None if rng is None else [rng[0], rng[1]],
    }


def _gaps(ts: list[float], start: float, end: float, cap: float, tz: str) -> list[dict[str, Any]]:
    if not ts:
        return []
    points = [start, *ts, end]
    gaps = []
    for a, b in itertools.pairwise(points):
        if b - a > cap:
            gaps.append({"start": _iso(a, tz), "end": _iso(b, tz), "minutes": _r((b - a) / 60, 1)})
    return gaps


def _news2(day: pd.DataFrame, tz: str) -> dict[str, Any] | None:
    ts, vals = _series(day, "news2_total")
    if not vals:
        return None
    best = max(vals)
    i = vals.index(best)
    return {"value": int(best), "time": _iso(ts[i], tz)}


def _anomalies(day: pd.DataFrame, events: list[dict[str, Any]], tz: str) -> dict[str, Any]:
    ts, scores = _series(day, "anomaly")
    flagged = {int(t) for t, s in zip(ts, scores, strict=True) if s >= ANOMALY_THRESHOLD}
    all_scores = list(scores)
    for e in events:
        if e.get("type") != "anomaly":
            continue
        score = e.get("score")
        if isinstance(score, int | float) and not isinstance(score, bool) and not math.isnan(score):
            all_scores.append(float(score))
        flagged.add(int(float(e["ts"])))
    times = sorted(flagged)
    return {
        "count": len(times),
        "max_score": _r(max(all_scores), 3) if all_scores else None,
        "times": [_iso(t, tz) for t in times],
    }


def _events_in(events: list[dict[str, Any]], start: float, end: float) -> list[dict[str, Any]]:
    out = []
    for e in events:
        try:
            t = float(e["ts"])
        except (KeyError, TypeError, ValueError):
            continue
        if start <= t < end:
            out.append(e)
    return sorted(out, key=lambda e: float(e["ts"]))


def _sos(events: list[dict[str, Any]], tz: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, key in (("soft_sos", "soft"), ("hard_sos", "hard")):
        times = [_iso(float(e["ts"]), tz) for e in events if e.get("type") == kind]
        out[key] = {"count": len(times), "times": times}
    # Alerts found in late data (a watch syncing what it kept): nobody was woken for them,
    # so the report is where they are seen. Stamped with the readings' own time.
    late = [
        _iso(float(e["ts"]), tz)
        for e in events
        if e.get("type") == "retrospective_alert"
        and e.get("transition") in ("opened", "reopened", "recurred")
    ]
    out["retrospective"] = {"count": len(late), "times": late}
    return out


def _sleep(sessions: list[dict[str, Any]], tz: str) -> dict[str, Any]:
    rows = []
    total = 0.0
    for s in sorted(sessions, key=lambda s: float(s["start"])):
        a, b = float(s["start"]), float(s["end"])
        minutes = max(0.0, b - a) / 60.0
        total += minutes
        row: dict[str, Any] = {"start": _iso(a, tz), "end": _iso(b, tz), "minutes": _r(minutes, 1)}
        q = s.get("quality")
        if isinstance(q, int | float) and not isinstance(q, bool) and not math.isnan(q):
            row["quality"] = _r(float(q), 3)
        rows.append(row)
    return {"total_minutes": _r(total, 1), "sessions": rows}


def _adherence_counts(doses: list[dict[str, Any]]) -> dict[str, Any]:
    counts = {s: sum(1 for d in doses if d.get("status") == s) for s in DOSE_STATUSES}
    decided = len(doses) - counts["pending"]
    return {
        "scheduled": len(doses),
        **counts,
        "rate": _r(counts["taken"] / decided, 3) if decided > 0 else None,
    }


def _adherence(doses: list[dict[str, Any]]) -> dict[str, Any]:
    by_med: dict[str, list[dict[str, Any]]] = {}
    for d in sorted(doses, key=lambda d: float(d.get("scheduled", 0.0))):
        by_med.setdefault(str(d.get("medication", "")), []).append(d)
    return {
        "medications": {m: _adherence_counts(ds) for m, ds in sorted(by_med.items())},
        "overall": _adherence_counts(doses),
    }


def _daily_mean(df: pd.DataFrame, col: str, start: float, end: float) -> float | None:
    _, vals = _series(_slice(df, start, end), col)
    return statistics.fmean(vals) if vals else None


def _vs_previous(d: DayData, today: dict[str, float | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    bounds = [day_bounds(d.day - timedelta(days=k), d.tz) for k in range(1, BASELINE_DAYS + 1)]
    for v in VITALS:
        means = [m for a, b in bounds if (m := _daily_mean(d.readings, v, a, b)) is not None]
        entry: dict[str, Any] = {
            "days": len(means),
            "baseline_mean": None,
            "diff": None,
            "sd": None,
            "flag": None,
        }
        t = today.get(v)
        if t is not None and len(means) >= MIN_BASELINE_DAYS:
            base = statistics.fmean(means)
            sd = statistics.stdev(means)
            diff = t - base
            entry |= {
                "baseline_mean": _r(base, VITAL_DECIMALS[v]),
                "diff": _r(diff, 2),
                "sd": _r(sd, 2),
                "flag": bool(abs(diff) > 2 * sd),
            }
        out[v] = entry
    return out


def compute_report(d: DayData) -> dict[str, Any]:
    """The daily report for `d` (see the module docstring for every rule)."""
    start, end = day_bounds(d.day, d.tz)
    cap = GAP_FACTOR * d.expected_interval_s
    day = _slice(d.readings, start, end)
    events = _events_in(d.events, start, end)

    vitals: dict[str, Any] = {}
    today_means: dict[str, float | None] = {}
    for v in VITALS:
        ts, vals = _series(day, v)
        rng = d.normal_ranges.get(v)
        rng_t = (float(rng[0]), float(rng[1])) if rng is not None else None
        vitals[v] = _vital_stats(ts, vals, rng_t, end, cap, VITAL_DECIMALS[v])
        today_means[v] = statistics.fmean(vals) if vals else None

    _, steps = _series(day, "steps")
    event_counts: dict[str, int] = {}
    for e in events:
        k = str(e.get("type", "unknown"))
        event_counts[k] = event_counts.get(k, 0) + 1

    return {
        "person": d.person,
        "date": d.day.isoformat(),
        "tz": d.tz,
        "day_start": _iso(start, d.tz),
        "day_end": _iso(end, d.tz),
        "hours": _r((end - start) / 3600.0, 1),
        "expected_interval_s": _r(d.expected_interval_s, 1),
        "readings": len(day),
        "vitals": vitals,
        "steps": {"total": int(sum(steps)), "n": len(steps)},
        "news2_max": _news2(day, d.tz),
        "anomalies": _anomalies(day, events, d.tz),
        "sos": _sos(events, d.tz),
        "events": dict(sorted(event_counts.items())),
        "device_gaps": _gaps([float(t) for t in day["ts"]], start, end, cap, d.tz),
        "sleep": _sleep(d.sleep, d.tz),
        "adherence": _adherence(d.adherence),
        "baseline_window_days": BASELINE_DAYS,
        "baseline_from": (d.day - timedelta(days=BASELINE_DAYS)).isoformat(),
        "baseline_to": (d.day - timedelta(days=1)).isoformat(),
        "vs_previous_7_days": _vs_previous(d, today_means),
    }


# ---------------------------------------------------------------- plots


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

_CSS = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:1rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}
th:first-child,td:first-child{text-align:left}
.flag{color:#b00;font-weight:bold}.narrative{background:#f4f7fb;padding:.75rem;border-radius:6px}
img{max-width:100%;display:block;margin:.5rem 0}
"""


def _e(x: Any) -> str:
    if x is None:
        return "–"
    return html.escape(str(x), quote=True)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(report: dict[str, Any], plots: list[Path], narrative: str | None) -> str:
    """A self-contained HTML page (inline CSS, plots as base64 <img>); all text escaped."""
    parts: list[str] = []
    title = f"Daily health report - {report.get('person', '')} - {report.get('date', '')}"
    parts.append(f"<h1>{_e(title)}</h1>")
    if narrative:
        paras = "".join(f"<p>{_e(p)}</p>" for p in narrative.split("\n\n") if p.strip())
        parts.append(f'<div class="narrative">{paras}</div>')

    vitals = report.get("vitals", {})
    rows = [
        [
            VITAL_LABELS.get(v, v),
            s.get("n"),
            s.get("min"),
            s.get("mean"),
            s.get("max"),
            s.get("out_of_range_minutes"),
            s.get("out_of_range_pct"),
        ]
        for v, s in vitals.items()
        if s.get("n")
    ]
    parts.append("<h2>Vitals</h2>")
    parts.append(
        _table(["Vital", "n", "min", "mean", "max", "min out of range", "% out of range"], rows)
    )

    n2 = report.get("news2_max")
    an = report.get("anomalies", {})
    sos = report.get("sos", {})
    parts.append("<h2>Alerts</h2>")
    parts.append(
        _table(
            ["Item", "Value", "Times"],
            [
                ["NEWS2 max", n2.get("value") if n2 else None, n2.get("time") if n2 else ""],
                ["Anomalies", an.get("count"), ", ".join(an.get("times", []))],
                [
                    "Soft SOS",
                    sos.get("soft", {}).get("count"),
                    ", ".join(sos.get("soft", {}).get("times", [])),
                ],
                [
                    "Hard SOS",
                    sos.get("hard", {}).get("count"),
                    ", ".join(sos.get("hard", {}).get("times", [])),
                ],
                [
                    "Alerts found in synced data (nobody was alerted)",
                    sos.get("retrospective", {}).get("count"),
                    ", ".join(sos.get("retrospective", {}).get("times", [])),
                ],
            ],
        )
    )

    gaps = report.get("device_gaps", [])
    parts.append("<h2>Device gaps</h2>")
    parts.append(
        _table(["Start", "End", "Minutes"], [[g["start"], g["end"], g["minutes"]] for g in gaps])
    )

    sl = report.get("sleep", {})
    parts.append(f"<h2>Sleep: {_e(sl.get('total_minutes'))} minutes</h2>")
    parts.append(
        _table(
            ["Start", "End", "Minutes", "Quality"],
            [
                [s["start"], s["end"], s["minutes"], s.get("quality")]
                for s in sl.get("sessions", [])
            ],
        )
    )

    meds = report.get("adherence", {}).get("medications", {})
    parts.append("<h2>Medication</h2>")
    parts.append(
        _table(
            ["Medication", "Scheduled", "Taken", "Missed", "Skipped", "Rate"],
            [
                [m, a["scheduled"], a["taken"], a["missed"], a["skipped"], a["rate"]]
                for m, a in meds.items()
            ],
        )
    )

    vs = report.get("vs_previous_7_days", {})
    parts.append("<h2>Compared with the previous 7 days</h2>")
    vs_rows = []
    for v, c in vs.items():
        if c.get("diff") is None:
            continue
        flag = '<span class="flag">unusual</span>' if c.get("flag") else ""
        cells = [
            VITAL_LABELS.get(v, v),
            c.get("baseline_mean"),
            c.get("diff"),
            c.get("sd"),
            c.get("days"),
        ]
        vs_rows.append(
            "<tr>" + "".join(f"<td>{_e(x)}</td>" for x in cells) + f"<td>{flag}</td></tr>"
        )
    head = "".join(
        f"<th>{_e(h)}</th>" for h in ["Vital", "Baseline", "Difference", "SD", "Days", ""]
    )
    parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(vs_rows)}</tbody></table>")

    if plots:
        parts.append("<h2>Charts</h2>")
    for p in plots:
        data = base64.b64encode(p.read_bytes()).decode("ascii")
        parts.append(f'<img alt="{_e(p.stem)}" src="data:image/png;base64,{data}">')

    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        + "\n".join(parts)
        + "</body></html>\n"
    )


# ---------------------------------------------------------------- narrative check

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_ORD = r"(?:st|nd|rd|th)"
_DATE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b"),
    re.compile(
        rf"\b(?P<d>\d{{1,2}}){_ORD}?(?:\s+of)?\s+(?:{_MONTHS})\.?(?:,?\s+(?P<y>\d{{4}}))?\b", re.I
    ),
    re.compile(rf"\b(?:{_MONTHS})\.?\s+(?P<d>\d{{1,2}}){_ORD}?(?:,?\s+(?P<y>\d{{4}}))?\b", re.I),
    re.compile(rf"\b(?:{_WEEKDAYS}),?\s+(?:the\s+)?(?P<d>\d{{1,2}}){_ORD}?\b", re.I),
    re.compile(rf"\b(?:{_MONTHS})\.?,?\s+(?P<y>\d{{4}})\b", re.I),
)
_TIME_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?<![\w.:])(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ap>[ap])\.?m\b\.?", re.I),
    re.compile(r"(?<![\w.:])(?P<h>\d{1,2}):(?P<m>\d{2})(?::\d{2})?(?![\d:])"),
)
_NUMBER = re.compile(
    r"(?<![\w.])[-+−]?(?P<n>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<pct>\s*(?:%|percent\b|per\s+cent\b))?",
    re.I,
)


@dataclass(frozen=True)
class _Num:
    value: float
    decimals: int
    percent: bool


@dataclass
class _Parsed:
    numbers: list[_Num] = field(default_factory=list)
    times: list[tuple[int, int]] = field(default_factory=list)
    dates: list[tuple[int | None, int | None, int | None]] = field(default_factory=list)


def _blank(text: str, m: re.Match[str]) -> str:
    return text[: m.start()] + " " * (m.end() - m.start()) + text[m.end() :]


def _parse(text: str) -> _Parsed:
    """Dates and times first (blanked out of the text), then the remaining numbers."""
    out = _Parsed()
    for pat in _DATE_PATTERNS:
        while (m := pat.search(text)) is not None:
            g = m.groupdict()
            y = int(g["y"]) if g.get("y") else None
            mo = int(g["m"]) if g.get("m") else None
            dd = int(g["d"]) if g.get("d") else None
            out.dates.append((y, mo, dd))
            text = _blank(text, m)
    for pat in _TIME_PATTERNS:
        while (m := pat.search(text)) is not None:
            h, mi = int(m["h"]), int(m["m"] or 0)
            ap = (m.groupdict().get("ap") or "").lower()
            if ap == "p" and h < 12:
                h += 12
            elif ap == "a" and h == 12:
                h = 0
            out.times.append((h, mi))
            text = _blank(text, m)
    for m in _NUMBER.finditer(text):
        if not m["pct"] and re.match(_ORD + r"\b", text[m.end("n") :], re.I):
            continue  # "2nd dose": an ordinal, a counting word
        raw = m["n"].replace(",", "")
        decimals = len(raw.split(".")[1]) if "." in raw else 0
        out.numbers.append(_Num(float(raw), decimals, bool(m["pct"])))
    return out


def numbers_in(text: str) -> list[float]:
    """The quantities stated in `text`, in order: integers, decimals (``1,200`` is 1200),
    percentages (``88%`` -> 88.0), signs dropped. Dates ("10 March 2026", "Tuesday the 10th",
    "2026-03-10"), clock times ("08:20", "8pm") and ordinals ("2nd") are not quantities and are left out;
    digits glued to letters ("SpO2", "NEWS2") are not numbers; number words ("two",
    "twice") are not parsed."""
    return [n.value for n in _parse(text).numbers]


def _walk(obj: Any, key_text: list[str]) -> Iterator[Any]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            key_text.append(str(k))
            yield from _walk(v, key_text)
    elif isinstance(obj, list | tuple):
        for v in obj:
            yield from _walk(v, key_text)
    else:
        yield obj


def _report_facts(report: dict[str, Any]) -> tuple[list[float], set[tuple[int, int]], set[date]]:
    numbers: list[float] = []
    times: set[tuple[int, int]] = set()
    dates: set[date] = set()
    keys: list[str] = []
    for leaf in _walk(report, keys):
        if isinstance(leaf, bool) or leaf is None:
            continue
        if isinstance(leaf, int | float):
            if not math.isnan(leaf):
                numbers.append(abs(float(leaf)))
            continue
        if not isinstance(leaf, str):
            continue
        try:
            dt = datetime.fromisoformat(leaf)
        except ValueError:
            parsed = _parse(leaf)
            numbers += [n.value for n in parsed.numbers]
            times |= set(parsed.times)
            continue
        if len(leaf) <= 10:  # a date
            dates.add(dt.date())
            continue
        times.add((dt.hour, dt.minute))
        if dt.time() != time(0):  # the next midnight (day_end) does not name the next day
            dates.add(dt.date())
    for k in keys:
        numbers += [n.value for n in _parse(k).numbers]
    return numbers, times, dates


def _matches(n: _Num, facts: list[float]) -> bool:
    tol = 0.5 * 10.0 ** (-n.decimals) + 1e-9
    for v in facts:
        if abs(v - n.value) <= tol:
            return True
        if n.percent and abs(v * 100.0 - n.value) <= tol:  # rate 0.667 stated as 66.7%
            return True
    return False


def narrative_ok(narrative: str, report: dict[str, Any]) -> bool:
    """True only if every number the narrative states is in the report.

    A stated number with k decimals matches a report number v when v rounds to it at k
    decimals (|v - n| <= 0.5 x 10^-k): "83" and "83.3" both match a mean of 83.3, "85" does
    not match 88. Signs are ignored (a diff of -3.2 may be told as "3.2 lower"); a
    percentage also matches a fraction in the report (66.7% ~ rate 0.667). Dates count only
    when they name a date in the report (the day itself, the baseline window): a day-of-month
    stated as a date ("10 March", "Tuesday the 10th") and a bare year equal to the report's
    are fine, but a bare "10" is a quantity and must be in the data; clock times must be times in the
    report; number words ("two", "twice") are not checked.
    """
    facts, times, dates = _report_facts(report)
    try:
        day = date.fromisoformat(str(report.get("date")))
    except ValueError:
        day = None
    years = {d.year for d in dates}
    days_of_month = {d.day for d in dates}
    parsed = _parse(narrative)
    for y, mo, dd in parsed.dates:
        if y is not None and y not in years:
            return False
        if dd is not None and dd not in days_of_month:
            return False
        if y is not None and mo is not None and dd is not None:
            try:
                if date(y, mo, dd) not in dates:
                    return False
            except ValueError:
                return False
    if any(t not in times for t in parsed.times):
        return False
    for n in parsed.numbers:
        if day is not None and not n.percent and n.decimals == 0 and n.value == day.year:
            continue
        if not _matches(n, facts):
            return False
    return True
