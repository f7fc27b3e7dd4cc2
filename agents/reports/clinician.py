"""The clinician summary (issue 28): one person over a period (default the last 14 days) as a
GP reads it in a minute. This module gathers and computes; clinician_pdf.py draws the PDF.

What it shows and where each part comes from:

* **Who** - name, age at the period's end, sex, conditions and the medications the
  household file lists (gateway/household/model.py).
* **Medications and adherence** - the prescriptions confirmed in the hub (the `prescriptions`
  table, agents/medication/service.py) and, per medication, the period's doses from the dose
  ledger (`doses`, agents/medication/reminders.py): taken / missed / skipped / still to come,
  and the taken rate of the doses that ended (stats.py's rule).
* **Each vital's trend** - from the stored readings, one local day at a time (a day is read,
  reduced and dropped: a 5 s watch is 17,000 rows a day): hourly means for the chart, daily
  min / mean / max, and the share of readings outside the person's band (`ranges_for`, the
  band the monitor uses).
* **NEWS2** - each day's maximum `news2_total` of the stored readings and when it was first
  reached.
* **Alerts and SOS** - the events (hard and soft SOS, low-priority alerts, alerts found in
  synced data, falls, escalations), at the time of the reading that caused them
  (stats.event_time).
* **What the hub asked and the answers** - the escalation prompts ("are you OK?",
  gateway/escalation/prompt_store.py, in safety.db) and their end: answered OK / not OK
  (`prompt_answered` events), no answer so the contacts were texted (`alert_escalated`) or
  an SOS was started (`sos_escalated`), withdrawn or resolved.
* **Device gaps** - per device, merged silences longer than gaps.py's threshold across the
  whole period (midnight does not split them), the hours without readings and the longest.

Nothing recorded in the period (no reading, event, prompt or dose) raises `NothingToReport`:
the API answers 404 with that sentence rather than an empty PDF.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from agents.reports.stats import VITAL_DECIMALS, VITALS, _r, day_bounds
from gateway.base.ports import NothingToReport
from gateway.contract.vital_words import label, unit_words

DEFAULT_DAYS = 14
MAX_DAYS = 31  # one or two pages: a longer period is asked for in parts
LISTED_GAP_S = 3600.0  # the gaps a GP reads: an hour or more without readings
MAX_EVENT_ROWS = 40

# Events on the charts and in the list, in a GP's words.
EVENT_WORDS: dict[str, str] = {
    "hard_sos": "Hard SOS (emergency)",
    "soft_sos": "Alert",
    "advisory": "Low-priority alert",
    "retrospective_alert": "Alert in synced data",
    "fall_detected": "Fall detected",
    "alert_escalated": "No answer: contacts texted",
    "sos_escalated": "Escalated to SOS",
}
_OPENINGS = ("opened", "reopened", "recurred")
PROMPT_REASONS: dict[str, str] = {
    "alert_unanswered": "Are you OK? (an alert)",
    "implausible_unanswered": "Are you OK? (an unlikely reading)",
    "unconfirmed_unanswered": "Are you OK? (a single worrying reading)",
    "fall_no_movement": "Are you OK? (a fall, no movement after it)",
}


def default_period(today: date, days: int = DEFAULT_DAYS) -> tuple[date, date]:
    return today - timedelta(days=days - 1), today


def check_period(since: date, until: date) -> None:
    """ValueError (the API's 422) for a period the summary cannot cover."""
    if until < since:
        raise ValueError("`until` is before `since`")
    if (until - since).days + 1 > MAX_DAYS:
        raise ValueError(f"the period is longer than {MAX_DAYS} days; ask for it in parts")


def reduce_day(
    rows: list[dict[str, Any]], start: float, end: float, normal: Mapping[str, tuple[float, float]]
) -> dict[str, Any]:
    """One day's readings, reduced: per vital {n, min, mean, max, out (readings outside the
    band), hourly [[mid-hour ts, mean], ...]} and the NEWS2 maximum with its first time."""
    vitals: dict[str, Any] = {}
    for v in VITALS:
        vals = [(float(r["ts"]), float(r[v])) for r in rows
                if isinstance(r.get(v), int | float) and not isinstance(r.get(v), bool)
                and start <= float(r["ts"]) < end]  # fmt: skip
        if not vals:
            continue
        hours: dict[int, list[float]] = {}
        for t, x in vals:
            hours.setdefault(int((t - start) // 3600), []).append(x)
        band = normal.get(v)
        xs = [x for _, x in vals]
        vitals[v] = {
            "n": len(xs),
            "min": min(xs),
            "max": max(xs),
            "mean": statistics.fmean(xs),
            "out": 0 if band is None else sum(1 for x in xs if x < band[0] or x > band[1]),
            "hourly": [
                [start + h * 3600 + 1800, statistics.fmean(hx)] for h, hx in sorted(hours.items())
            ],
        }
    news = [(float(r["ts"]), int(r["news2_total"])) for r in rows
            if isinstance(r.get("news2_total"), int | float) and start <= float(r["ts"]) < end]  # fmt: skip
    best = max((n for _, n in news), default=None)
    first = next((t for t, n in news if n == best), None)
    return {"vitals": vitals, "news2_max": best, "news2_ts": first,
            "readings": sum(1 for r in rows if start <= float(r["ts"]) < end)}  # fmt: skip


@dataclass(frozen=True)
class SummaryData:
    """What `compute_summary` needs, gathered (or made by hand in tests)."""

    person: str
    name: str
    birth_date: date | None
    sex: str | None
    conditions: list[str]
    listed_medications: list[str]
    tz: str
    since: date
    until: date
    as_of: float
    normal_ranges: dict[str, tuple[float, float]]
    days: dict[str, dict[str, Any]]  # ISO day -> reduce_day()
    events: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)
    doses: list[dict[str, Any]] = field(default_factory=list)
    prescriptions: list[dict[str, Any]] = field(default_factory=list)
    gaps: list[dict[str, Any]] = field(default_factory=list)
    device_readings: dict[str, int] = field(default_factory=dict)
    spo2_scale: int = 1
    news2_applies: bool = True  # not for a child or in pregnancy (RCP NEWS2)


def _local(ts: float, tz: str) -> datetime:
    return datetime.fromtimestamp(ts, ZoneInfo(tz))


def _when(ts: float, tz: str) -> str:
    return _local(ts, tz).strftime("%a %d %b %H:%M")


def age_on(birth: date, day: date) -> int:
    return day.year - birth.year - ((day.month, day.day) < (birth.month, birth.day))


def _vitals(d: SummaryData) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for v in VITALS:
        per_day = [(day, x["vitals"][v]) for day, x in sorted(d.days.items()) if v in x["vitals"]]
        if not per_day:
            continue
        nd = VITAL_DECIMALS[v]
        n = sum(s["n"] for _, s in per_day)
        band = d.normal_ranges.get(v)
        out[v] = {
            "label": label(v),
            "unit": unit_words(v),
            "band": None if band is None else [band[0], band[1]],
            "n": n,
            "min": _r(min(s["min"] for _, s in per_day), nd),
            "max": _r(max(s["max"] for _, s in per_day), nd),
            "mean": _r(sum(s["mean"] * s["n"] for _, s in per_day) / n, nd),
            "out_pct": None
            if band is None
            else _r(100.0 * sum(s["out"] for _, s in per_day) / n, 1),
            "daily": [
                {
                    "day": day,
                    "min": _r(s["min"], nd),
                    "mean": _r(s["mean"], nd),
                    "max": _r(s["max"], nd),
                }
                for day, s in per_day
            ],
            "hourly": [pt for _, s in per_day for pt in s["hourly"]],
        }
    return out


def _is_marker(e: Mapping[str, Any]) -> bool:
    kind = e.get("type")
    if kind in ("soft_sos", "advisory"):
        return e.get("priority") != "information"  # inside their own usual range: information
    if kind == "retrospective_alert":
        return e.get("transition") in _OPENINGS
    return kind in ("hard_sos", "fall_detected")


def _detail(e: Mapping[str, Any]) -> str:
    text = e.get("why") or e.get("detail") or e.get("trigger") or ""
    text = " ".join(str(text).split())
    return text if len(text) <= 110 else text[:107].rstrip() + "..."


def _events(d: SummaryData) -> dict[str, Any]:
    marked = [e for e in d.events if _is_marker(e)]
    counts = {EVENT_WORDS[k]: sum(1 for e in marked if e.get("type") == k)
              for k in EVENT_WORDS if any(e.get("type") == k for e in marked)}  # fmt: skip
    # Most serious first when there are too many to list, shown in time order.
    rank = {"hard_sos": 0, "fall_detected": 1, "soft_sos": 2, "retrospective_alert": 3}
    keep = sorted(marked, key=lambda e: (rank.get(str(e.get("type")), 4), float(e["ts"])))
    keep = sorted(keep[:MAX_EVENT_ROWS], key=lambda e: float(e["ts"]))
    return {
        "counts": counts,
        "total": len(marked),
        "listed": [
            {
                "time": _when(float(e["ts"]), d.tz),
                "what": EVENT_WORDS[str(e["type"])],
                "detail": _detail(e),
            }
            for e in keep
        ],
        "markers": [{"ts": float(e["ts"]), "kind": str(e["type"])} for e in marked],
    }


def _answer(p: Mapping[str, Any], events: list[dict[str, Any]]) -> str:
    pid = p.get("prompt_id")
    for e in events:
        if e.get("type") == "prompt_answered" and pid in (e.get("prompt_ids") or []):
            return "Answered: OK" if e.get("ok") else "Answered: NOT OK (SOS started)"
    for e in events:
        if e.get("prompt_id") == pid and e.get("type") == "alert_escalated":
            return "No answer: contacts texted"
        if e.get("prompt_id") == pid and e.get("type") == "sos_escalated":
            return "No answer: SOS started"
    return {
        "resolved": "Withdrawn (readings settled or the alert cleared)",
        "expired": "No answer (nobody needed telling)",
        "pending": "Waiting for an answer",
        "answered": "Answered",
    }.get(str(p.get("state")), "No answer: escalated")


def _prompts(d: SummaryData) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for p in d.prompts:
        question = PROMPT_REASONS.get(str(p.get("reason")), "Are you OK?")
        summary = " ".join(str(p.get("summary") or "").split())
        rows.append({"ts": float(p["created_at"]),
                     "question": f"{question}: {summary}" if summary else question,
                     "answer": _answer(p, d.events)})  # fmt: skip
    for e in d.events:  # "not OK" pressed with no question pending
        if e.get("type") == "prompt_answered" and not e.get("prompt_ids") and not e.get("ok"):
            rows.append({"ts": float(e["ts"]), "question": "(not asked: pressed 'not OK')",
                         "answer": "NOT OK (SOS started)"})  # fmt: skip
    rows.sort(key=lambda r: r["ts"])
    answers = [r["answer"] for r in rows]
    return {
        "asked": len(d.prompts),
        "ok": sum(a == "Answered: OK" for a in answers),
        "not_ok": sum("NOT OK" in a for a in answers),
        "no_answer": sum(a.startswith("No answer") for a in answers),
        "listed": [
            {"time": _when(r["ts"], d.tz), "question": r["question"], "answer": r["answer"]}
            for r in rows[-MAX_EVENT_ROWS:]
        ],
    }


def _prescription_words(row: Mapping[str, Any]) -> tuple[str, str]:
    try:
        rx = json.loads(str(row.get("parsed")))
        dose = rx.get("dose") or {}
        amount = f"{float(dose['amount']):g} {dose['unit']}" if dose.get("amount") else ""
        times = ", ".join(rx.get("times") or [])
        how = ", ".join(x for x in (amount, str(rx.get("frequency") or ""), times) if x)
        return str(rx["medicine"]).lower(), how
    except (ValueError, KeyError, TypeError, AttributeError):
        return "", ""


def _medications(d: SummaryData) -> list[dict[str, Any]]:
    meds: dict[str, dict[str, Any]] = {}
    for name in d.listed_medications:
        meds.setdefault(name.lower(), {"name": name, "how": "listed in the household file"})
    for row in d.prescriptions:
        name, how = _prescription_words(row)
        if name:
            meds[name] = {"name": name, "how": how or "prescription"}
    doses: dict[str, list[str]] = {}
    for r in d.doses:
        doses.setdefault(str(r.get("medication", "")).lower(), []).append(str(r.get("status")))
    # "bisoprolol 5 mg" in the household file is the hub's "bisoprolol": shown once.
    known = set(meds) | set(doses)
    for name in d.listed_medications:
        key = name.lower()
        if key in meds and any(k != key and key.split()[0] == k.split()[0] for k in known):
            meds.pop(key)
    out = []
    for key in sorted(set(meds) | set(doses)):
        st = doses.get(key, [])
        c = {s: st.count(s) for s in ("taken", "missed", "skipped", "snoozed", "pending")}
        decided = len(st) - c["pending"] - c["snoozed"]
        entry = meds.get(key, {"name": key, "how": "reminders"})
        out.append({**entry, "scheduled": len(st), **c,
                    "rate": _r(c["taken"] / decided, 3) if decided > 0 else None})  # fmt: skip
    return out


def _devices(d: SummaryData) -> dict[str, Any]:
    devices = []
    for dev, n in sorted(d.device_readings.items()):
        gs = [g for g in d.gaps if g["device"] == dev]
        longest = max(gs, key=lambda g: g["seconds"], default=None)
        devices.append({
            "device": dev or "unknown", "readings": n, "gaps": len(gs),
            "hours_without": _r(sum(g["seconds"] for g in gs) / 3600.0, 1),
            "longest_hours": None if longest is None else _r(longest["seconds"] / 3600.0, 1),
            "longest_from": None if longest is None else _when(longest["start"], d.tz),
        })  # fmt: skip
    long_gaps = sorted(
        (g for g in d.gaps if g["seconds"] >= LISTED_GAP_S), key=lambda g: g["start"]
    )
    return {"devices": devices, "long_gaps": len(long_gaps),
            "spans": [[g["start"], g["end"]] for g in long_gaps]}  # fmt: skip


def compute_summary(d: SummaryData) -> dict[str, Any]:
    """The summary as plain data (clinician_pdf.py draws it). Raises NothingToReport when
    nothing at all was recorded for the person in the period."""
    readings = sum(int(x["readings"]) for x in d.days.values())
    if not (readings or d.events or d.prompts or d.doses):
        raise NothingToReport(
            f"nothing was recorded for {d.person} from {d.since.isoformat()} to "
            f"{d.until.isoformat()}: no readings, alerts, questions or doses"
        )
    start, _ = day_bounds(d.since, d.tz)
    _, end = day_bounds(d.until, d.tz)
    news2 = [{"day": day, "max": x["news2_max"],
              "time": None if x["news2_ts"] is None else _local(x["news2_ts"], d.tz).strftime("%H:%M")}
             for day, x in sorted(d.days.items())]  # fmt: skip
    scored = [n for n in news2 if n["max"] is not None]
    peak = max(scored, key=lambda n: n["max"], default=None)
    return {
        "person": d.person,
        "name": d.name,
        "age": None if d.birth_date is None else age_on(d.birth_date, d.until),
        "birth_date": None if d.birth_date is None else d.birth_date.isoformat(),
        "sex": d.sex,
        "conditions": [c.replace("_", " ") for c in d.conditions],
        "spo2_scale": d.spo2_scale,
        "news2_applies": d.news2_applies,
        "tz": d.tz,
        "since": d.since.isoformat(),
        "until": d.until.isoformat(),
        "start": start,
        "end": end,
        "days": (d.until - d.since).days + 1,
        "generated": _local(d.as_of, d.tz).strftime("%Y-%m-%d %H:%M %Z"),
        "readings": readings,
        "days_with_readings": sum(1 for x in d.days.values() if x["readings"]),
        "vitals": _vitals(d),
        "news2": news2,
        "news2_peak": peak,
        "events": _events(d),
        "prompts": _prompts(d),
        "medications": _medications(d),
        "devices": _devices(d),
    }
