"""The clinician summary's reads (clinician.py says what and why): the period's readings one
local day at a time (read, reduced, dropped), its events, the escalation prompts (safety.db)
and the medication tables (healthgw.db). Run in the report child (process.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Protocol

from agents.reports.clinician import SummaryData, check_period, reduce_day
from agents.reports.gaps import device_interval, gap_threshold_s
from agents.reports.stats import day_bounds, event_time
from gateway.base.db import Database
from gateway.household.model import Household
from gateway.monitor.ranges import Profile, news2_applicable, ranges_for, spo2_scale_for

MAX_ROWS_PER_DAY = 200_000  # a 1 s device is 86,400 a day


class ReadingSource(Protocol):
    def readings(
        self, person: str, *, since: float | None = None, until: float | None = None,
        limit: int = 1000,
    ) -> list[dict[str, Any]]: ...  # fmt: skip

    def events(
        self, *, person: str | None, types: Any, since: float | None, until: float | None,
        limit: int,
    ) -> list[dict[str, Any]]: ...  # fmt: skip


@dataclass
class _Gaps:
    """Per device, silences longer than its threshold, across midnight."""

    intervals: Mapping[str, float]
    default_s: float
    start: float
    last: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    found: list[dict[str, Any]] = field(default_factory=list)

    def add(self, device: str, ts: float) -> None:
        prev = self.last.get(device, self.start)
        if ts - prev > gap_threshold_s(device_interval(device, self.intervals, self.default_s)):
            self.found.append({"device": device, "start": prev, "end": ts, "seconds": ts - prev})
        self.last[device] = max(prev, ts)
        self.counts[device] = self.counts.get(device, 0) + 1

    def close(self, stop: float) -> None:
        for device, prev in self.last.items():
            limit = gap_threshold_s(device_interval(device, self.intervals, self.default_s))
            if stop - prev > limit:
                self.found.append({"device": device, "start": prev, "end": stop,
                                   "seconds": stop - prev})  # fmt: skip


def gather(
    store: ReadingSource,
    household: Household,
    person: str,
    since: date,
    until: date,
    as_of: float,
    *,
    meds: Database | None = None,
    prompts: Database | None = None,
) -> SummaryData:
    """Read the period from the stores (in the report child: agents/reports/process.py)."""
    p = household.person(person)
    if p is None:
        raise LookupError("no such person")
    check_period(since, until)
    tz = household.timezone
    start, _ = day_bounds(since, tz)
    _, end = day_bounds(until, tz)
    profile = Profile.from_person(p, until)
    normal = {k: (float(v.normal[0]), float(v.normal[1])) for k, v in ranges_for(profile).items()}
    intervals = {d.id: float(d.interval_s) for d in p.devices}
    gaps = _Gaps(intervals, min(intervals.values(), default=60.0), start)
    days: dict[str, dict[str, Any]] = {}
    d = since
    while d <= until:
        a, b = day_bounds(d, tz)
        rows = store.readings(person, since=a, until=b, limit=MAX_ROWS_PER_DAY)
        for r in rows:
            gaps.add(str(r.get("device") or ""), float(r["ts"]))
        days[d.isoformat()] = reduce_day(rows, a, b, normal)
        d += timedelta(days=1)
    gaps.close(max(start, min(end, as_of)))
    # Events are stored when made (a watch syncing late: after its readings); keep those whose
    # reading falls in the period.
    raw = store.events(person=person, types=None, since=start - 300.0, until=None, limit=100_000)
    events = []
    for e in raw:
        t = event_time({**e, "ts": _epoch(e.get("ts"))})
        if t is not None and start <= t < end:
            events.append({**e, "ts": t})
    events.sort(key=lambda e: float(e["ts"]))
    return SummaryData(
        person=person, name=p.name, birth_date=p.birth_date, sex=p.sex,
        conditions=list(p.conditions), listed_medications=list(p.medications), tz=tz,
        since=since, until=until, as_of=as_of, normal_ranges=normal, days=days, events=events,
        prompts=_rows(prompts, "SELECT * FROM prompts WHERE person = ? AND created_at >= ?"
                      " AND created_at < ? ORDER BY created_at", (person, start, end)),
        doses=_rows(meds, "SELECT medication, scheduled, status FROM doses WHERE person = ?"
                    " AND local_day >= ? AND local_day <= ?",
                    (person, since.isoformat(), until.isoformat())),
        prescriptions=_rows(meds, "SELECT parsed, status, start_day FROM prescriptions"
                            " WHERE person = ? AND status = 'active' ORDER BY created_at",
                            (person,)),
        gaps=gaps.found, device_readings=dict(gaps.counts), spo2_scale=spo2_scale_for(profile),
        news2_applies=news2_applicable(profile),
    )  # fmt: skip


def _rows(db: Database | None, sql: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
    if db is None:
        return []
    try:
        return [dict(r) for r in db.conn().execute(sql, args).fetchall()]
    except Exception:  # that part has never run on this hub: its table does not exist
        return []


def _epoch(v: Any) -> float:
    if isinstance(v, int | float):
        return float(v)
    from gateway.contract.topics import parse_ts

    return float(parse_ts(v))
