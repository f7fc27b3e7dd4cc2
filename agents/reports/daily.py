"""Daily health reports: gather one person's day from the store, compute it
(agents/reports/), draw it, keep it under `<data_dir>/reports/<person>/<day>/`
(report.json, report.html, plots), list it, and announce it on the events topic.

A narrative is optional: the local model is given only the computed numbers, and its text is
kept only if `narrative_ok` finds every number it states in the report.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from agents.reports import (
    DayData,
    chart_data,
    compute_report,
    day_bounds,
    draw_charts,
    narrative_ok,
    render_html,
)
from agents.reports.clinician import check_period, compute_summary
from agents.reports.clinician_gather import ReadingSource, gather
from agents.reports.clinician_pdf import render_pdf
from agents.reports.process import BuildRequest, ReportProcess, SummaryRequest
from agents.reports.sleep import sessions_ending_in, sleep_sessions
from gateway.base.clock import Clock
from gateway.base.db import Database
from gateway.base.files import write_durable
from gateway.contract.topics import EventType
from gateway.contract.values import Event
from gateway.household.model import Household
from gateway.monitor.ranges import Profile, ranges_for

log = logging.getLogger(__name__)
# How far a reading's ts may run ahead of the hub (gateway/edge/validate.py's MAX_FUTURE_S; agents
# may not import the validator): its events can be stored that much before the reading's day.
FUTURE_MARGIN_S = 300.0
EXPORT_TOOL = "clinician_summary_export"  # the audit rows' `tool` for a summary's export

COLUMNS = ("ts", "device", "heart_rate", "spo2", "respiratory_rate", "systolic_bp",
           "diastolic_bp", "temperature_c", "steps", "news2_total", "anomaly")  # fmt: skip


Narrator = Callable[[dict[str, Any]], Awaitable[str | None]]


class DailyReports:
    def __init__(
        self,
        store: ReadingSource,
        household: Household,
        data_dir: Path,
        clock: Clock,
        *,
        doses: Database | None = None,
        emit: Callable[[Event], Awaitable[None]] | None = None,
        narrator: Narrator | None = None,
        process: tuple[ReportProcess, Path, Callable[[Path], ReadingSource]] | None = None,
        prompts: Database | None = None,
        audit: Callable[[Mapping[str, Any]], None] | None = None,
    ) -> None:
        """`process`: build each report in that child process, reading the database at that
        path opened with that function (agents/reports/process.py: why); None builds
        on a thread (tools, tests). `prompts`: safety.db, where the escalation prompts are
        (the clinician summary's questions and answers); `audit`: where a clinician
        summary's export is recorded (the store's audit table)."""
        self.store = store
        self.household = household
        self.root = Path(data_dir) / "reports"
        self.clock = clock
        self._doses = doses
        self._emit = emit
        self._narrator = narrator
        self._process = process
        self._prompts = prompts
        self._audit = audit
        self._one_at_a_time = asyncio.Lock()  # at the report time, every person's job fires

    def day_data(self, person: str, day: date) -> DayData:
        p = self.household.person(person)
        if p is None:
            raise ValueError("unknown person")
        tz = self.household.timezone
        start, end = day_bounds(day, tz)
        base_start, _ = day_bounds(day - timedelta(days=7), tz)
        rows = self.store.readings(person, since=base_start, until=end, limit=200_000)
        import pandas as pd  # here: the gateway loads pandas only to make a report

        frame = pd.DataFrame([{c: r.get(c) for c in COLUMNS} for r in rows], columns=list(COLUMNS))
        for c in COLUMNS:
            if c != "device":
                frame[c] = pd.to_numeric(frame[c], errors="coerce")
        # Events are stored when they are made, which for a watch syncing a day late is the
        # next day: fetch from the day's start (less the future skew the edge allows) up to
        # now; compute_report keeps those whose readings belong to the day.
        events = [
            {**e, "ts": _ts(e.get("ts"))}
            for e in self.store.events(
                person=person, types=None, since=start - FUTURE_MARGIN_S, until=None, limit=100_000
            )
        ]
        profile = Profile.from_person(p, day)
        normal = {
            k: (float(v.normal[0]), float(v.normal[1])) for k, v in ranges_for(profile).items()
        }
        # Nights from the watches' stage minutes; a night counts on the day it ends.
        sleep = sessions_ending_in(sleep_sessions(rows), start, end)
        intervals = {d.id: float(d.interval_s) for d in p.devices}
        return DayData(
            person=person,
            day=day,
            tz=tz,
            readings=frame,
            events=events,
            normal_ranges=normal,
            adherence=self._adherence(person, day),
            sleep=sleep,
            expected_interval_s=min(intervals.values(), default=60.0),
            device_intervals=intervals,
            name=p.name,
            as_of=self.clock.now(),
        )

    def _adherence(self, person: str, day: date) -> list[dict[str, Any]]:
        if self._doses is None:
            return []
        try:
            rows = self._doses.conn().execute(
                "SELECT medication, scheduled, status FROM doses WHERE person = ? AND local_day = ?",
                (person, day.isoformat()),
            )
        except Exception:  # no reminders yet: the table does not exist
            return []
        return [{"medication": r[0], "scheduled": r[1], "status": r[2]} for r in rows]

    async def make(self, person: str, day: date) -> dict[str, Any]:
        """Compute, draw and keep one report; announce it. Returns the report (with `files`)."""
        async with self._one_at_a_time:
            if self._process is None:
                report, charts, plots = await asyncio.to_thread(self.build_local, person, day)
            else:
                worker, db_path, open_store = self._process
                doses = None if self._doses is None else self._doses.path
                req = BuildRequest(db_path, doses, self.household, self.root.parent, person, day,
                                   self.clock.now(), open_store)  # fmt: skip
                report, charts, names = await worker.run(req)
                plots = [Path(n) for n in names]
        out = self.root / person / day.isoformat()
        narrative = None
        if self._narrator is not None:
            try:
                text = await self._narrator(report)
            except Exception:
                log.exception("report narrative failed")
                text = None
            if text and narrative_ok(text, report):
                narrative = text
            report["narrative_rejected"] = bool(text) and narrative is None
        report["narrative"] = narrative
        page = render_html(report, plots, narrative)
        # Every file durably (gateway/base/files.py), the PNGs too: after a power cut, a listed day
        # (its report.json on disk) never has an empty or torn page, chart or picture.
        await asyncio.to_thread(write_durable, out / "report.html", page)
        await asyncio.to_thread(_write_json, out / "charts.json", charts)
        # report.json last: `list` shows a day once its report.json exists.
        await asyncio.to_thread(_write_json, out / "report.json", report)
        report["files"] = {"html": str(out / "report.html"), "json": str(out / "report.json"),
                           "charts": str(out / "charts.json"),
                           "plots": [str(p) for p in plots]}  # fmt: skip
        if self._emit is not None:
            await self._emit(
                Event(EventType.REPORT_READY, person, self.clock.now(), {"day": day.isoformat()})
            )
        return report

    def build_local(
        self, person: str, day: date
    ) -> tuple[dict[str, Any], dict[str, Any], list[Path]]:
        """Read, compute and draw one day (the CPU-heavy part), here: on a worker thread, or
        in the report process (agents/reports/process.py)."""
        data = self.day_data(person, day)
        report = compute_report(data)
        out = self.root / person / day.isoformat()
        out.mkdir(parents=True, exist_ok=True)
        # One chart dict: the report's PNGs are drawn from it and the console draws the same
        # charts from the copy kept beside the report (`view`).
        charts = chart_data(data)
        return report, charts, draw_charts(charts, out)

    async def summary_pdf(self, person: str, since: date, until: date, *, by: str) -> bytes:
        """The clinician summary of `since`..`until` (agents/reports/clinician.py) as PDF
        bytes, made in the report child like the daily reports and never kept on disk. Every
        export, refused or not, is an audit row: who (`by`), which person and period, when."""
        args = {"person": person, "since": since.isoformat(), "until": until.isoformat()}
        started = time.monotonic()
        try:
            if self.household.person(person) is None:
                raise ValueError("unknown person")
            check_period(since, until)
            async with self._one_at_a_time:
                if self._process is None:
                    pdf = await asyncio.to_thread(self._summary_local, person, since, until)
                else:
                    worker, db_path, open_store = self._process
                    req = SummaryRequest(
                        db_path, None if self._doses is None else self._doses.path,
                        None if self._prompts is None else self._prompts.path,
                        self.household, person, since, until, self.clock.now(), open_store,
                    )  # fmt: skip
                    pdf = await worker.summary(req)
        except Exception as exc:
            self._audit_export(by, args, started, ok=False, error=type(exc).__name__)
            raise
        self._audit_export(by, args, started, ok=True, result={"bytes": len(pdf)})
        return pdf

    def _summary_local(self, person: str, since: date, until: date) -> bytes:
        data = gather(self.store, self.household, person, since, until, self.clock.now(),
                      meds=self._doses, prompts=self._prompts)  # fmt: skip
        return render_pdf(compute_summary(data))

    def _audit_export(
        self, by: str, args: dict[str, Any], started: float, *, ok: bool, **more: Any
    ) -> None:
        if self._audit is None:
            return
        self._audit({"id": uuid.uuid4().hex, "ts": self.clock.now(), "actor": by,
                     "tool": EXPORT_TOOL, "run_id": None, "args": args, "ok": ok,
                     "latency_ms": (time.monotonic() - started) * 1000.0, **more})  # fmt: skip

    def close(self) -> None:
        if self._process is not None:
            self._process[0].close()

    def list(self, person: str) -> list[str]:
        d = self.root / person
        return (
            sorted((p.name for p in d.iterdir() if (p / "report.json").exists()), reverse=True)
            if d.exists()
            else []
        )

    def html(self, person: str, day: date) -> str | None:
        f = self.root / person / day.isoformat() / "report.html"
        return f.read_text(encoding="utf-8") if f.exists() else None

    def view(self, person: str, day: date) -> dict[str, Any] | None:
        """The kept report of one day as data: {"report": the numbers, "charts": the chart
        dict its PNGs were drawn from}, for the console to show the same report in the page.
        A report kept before charts were (no charts.json) has its charts computed again."""
        out = self.root / person / day.isoformat()
        try:
            report = json.loads((out / "report.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        try:
            charts = json.loads((out / "charts.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            charts = chart_data(self.day_data(person, day))
        return {"report": report, "charts": charts}

    def today(self) -> date:
        return datetime.fromtimestamp(self.clock.now(), ZoneInfo(self.household.timezone)).date()


def _write_json(path: Path, value: Any) -> None:
    write_durable(path, json.dumps(value, indent=1))


def _ts(v: Any) -> float:
    if isinstance(v, int | float):
        return float(v)
    from gateway.contract.topics import parse_ts

    return float(parse_ts(v))


# Jobs are pickled by reference to a module-level function; it finds the reporter here.
_REPORTERS: dict[str, DailyReports] = {}


def register(key: str, reports: DailyReports) -> None:
    _REPORTERS[key] = reports


def unregister(key: str) -> None:
    _REPORTERS.pop(key, None)


async def scheduled_report(key: str, person: str) -> None:
    """The evening job: today's report for one person."""
    reports = _REPORTERS.get(key)
    if reports is None:
        log.warning("report job fired with no reporter running")
        return
    try:
        await reports.make(person, reports.today())
    except Exception:
        log.exception("daily report failed")


NARRATIVE_PROMPT = (
    "You write a short, kind daily health summary for a family, in two or three sentences. "
    "Use only the numbers given, exactly as given, and no other numbers. Never diagnose."
)


def narrative_facts(report: dict[str, Any]) -> dict[str, Any]:
    """Only computed numbers go to the model."""
    vitals = {
        k: {m: v.get(m) for m in ("min", "mean", "max", "out_of_range_minutes")}
        for k, v in (report.get("vitals") or {}).items()
        if v and v.get("n")
    }
    return {
        "vitals": vitals,
        "news2_max": (report.get("news2_max") or {}).get("value")
        if isinstance(report.get("news2_max"), dict)
        else report.get("news2_max"),
        "soft_sos": ((report.get("sos") or {}).get("soft") or {}).get("count"),
        "hard_sos": ((report.get("sos") or {}).get("hard") or {}).get("count"),
        "alerts_in_synced_data": ((report.get("sos") or {}).get("retrospective") or {}).get(
            "count"
        ),
        "device_gaps": {
            k: (report.get("device_gaps") or {}).get(k) for k in ("count", "total_minutes")
        },
    }
