"""The daily health report: one person, one local calendar day.

`compute_report` turns a `DayData` (the day's readings plus the 7 days before, the day's
events, the person's normal ranges, medication adherence and sleep) into a plain,
JSON-serialisable dict. It is pure: no clock, no I/O. plots.py and page.py draw it,
check.py guards the local model's prose.

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
* **Device gaps** - per device, merged runs of silence longer than
  ``max(3 x the device's interval, 5 min)``, with a count and a total; the 10 longest are
  listed (gaps.py has the rules). ``as_of`` (when the report is made before midnight) ends
  the day there for gaps: the hours still to come are not silence.
* **NEWS2** - the day's maximum ``news2_total`` and the time it was first reached.
* **Anomalies** - readings whose ``anomaly`` score is >= 0.6, plus ``anomaly`` events (score
  from the event's ``score`` field, if any); an event at the same second as a flagged reading
  counts once. ``max_score`` is the highest score seen that day (flagged or not).
* **Event time** - an event belongs to the day of the reading that caused it: its
  ``reading_ts`` when the payload has one (alerts from a reading, late data), else the time it
  was stored. A watch that syncs a day late puts its alerts in the day they happened; every
  event keeps ``stored_ts`` too.
* **SOS** - counts and times of the day's ``soft_sos`` and ``hard_sos`` events, and of
  ``retrospective_alert`` openings (alerts found in late data); ``events`` counts every type. Events outside the day window are ignored.
* **Sleep** - the sessions as given (sleep.py makes them from the watches' stage minutes; a
  night that began the evening before counts whole, on the day it ends); ``total_minutes``
  is the minutes asleep, ``stages`` the minutes per stage when the sessions have them.
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

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from agents.reports.gaps import find_gaps, summarise
from agents.reports.sleep import summarise_sleep
from gateway.contract.vital_words import label, unit_words

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
# Chart titles and table rows: the vitals table's words and unit ("Oxygen saturation (%)").
VITAL_LABELS: dict[str, str] = {
    v: f"{label(v)[:1].upper()}{label(v)[1:]} ({unit_words(v)})" for v in VITALS
}
VITAL_DECIMALS: dict[str, int] = {v: 1 for v in VITALS} | {"temperature_c": 2}
GAP_FACTOR = 3.0  # the hold cap of a reading, in intervals
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
    expected_interval_s: float = 60.0  # devices not in device_intervals
    name: str | None = None  # the person's name, for the page's title
    device_intervals: dict[str, float] = field(default_factory=dict)  # configured, per device
    as_of: float | None = None  # when the data was gathered (the evening job: before midnight)


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


def event_time(e: dict[str, Any]) -> float | None:
    """The time of the reading that caused the event, else the time it was stored."""
    for key in ("reading_ts", "ts"):
        v = e.get(key)
        if isinstance(v, bool) or v is None:
            continue
        try:
            t = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(t):
            return t
    return None


def _events_in(events: list[dict[str, Any]], start: float, end: float) -> list[dict[str, Any]]:
    """The day's events by reading time, as copies whose ``ts`` is that time."""
    out = []
    for e in events:
        t = event_time(e)
        if t is not None and start <= t < end:
            out.append({**e, "ts": t, "stored_ts": e.get("ts")})
    return sorted(out, key=lambda e: float(e["ts"]))


def _sos(events: list[dict[str, Any]], tz: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    # Low-priority alerts (advisory: a vital mildly out of range) woke nobody; this is where
    # the family reads them.
    for kind, key in (("soft_sos", "soft"), ("hard_sos", "hard"), ("advisory", "low")):
        times = [_iso(float(e["ts"]), tz) for e in events
                 if e.get("type") == kind and e.get("priority") != "information"]  # fmt: skip
        out[key] = {"count": len(times), "times": times}
    # Mild values inside the person's own usual range (their baseline): information only.
    usual = [_iso(float(e["ts"]), tz) for e in events
             if e.get("type") == "advisory" and e.get("priority") == "information"]  # fmt: skip
    out["usual"] = {"count": len(usual), "times": usual}
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
    return summarise_sleep(sessions, lambda t: _iso(t, tz), _r)


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

    gaps = find_gaps(day, start, end, intervals=d.device_intervals,
                     default_interval_s=d.expected_interval_s, as_of=d.as_of)  # fmt: skip
    return {
        "person": d.person,
        "name": d.name,
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
        "device_gaps": summarise(gaps, lambda t: _iso(t, d.tz), _r),
        "sleep": _sleep(d.sleep, d.tz),
        "adherence": _adherence(d.adherence),
        "baseline_window_days": BASELINE_DAYS,
        "baseline_from": (d.day - timedelta(days=BASELINE_DAYS)).isoformat(),
        "baseline_to": (d.day - timedelta(days=1)).isoformat(),
        "vs_previous_7_days": _vs_previous(d, today_means),
    }


# ---------------------------------------------------------------- plots
