"""The daily report's heavy part in a child process: read the day, compute it, draw it.

Why a process: a report reads up to 8 days of one person's readings (about 138,000 rows at
one every 5 s) into pandas and draws matplotlib charts. On a thread that is seconds of work
holding the GIL the event loop needs, and at the report time every person's report starts
together: a fault test saw an SOS press wait more than 5 s behind 200 of them. In a child
(nice 19, one report at a time) it shares only the CPU, which the OS gives the gateway first.
The child is started when a report is asked for and stopped when none is waiting, so the hub
does not keep pandas and matplotlib in memory all day."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

from gateway.base.db import Database
from gateway.household.model import Household

T = TypeVar("T")
Built = tuple[dict[str, Any], dict[str, Any], list[str]]  # report, charts, plot files


@dataclass(frozen=True, slots=True)
class BuildRequest:
    db_path: Path
    doses_path: Path | None
    household: Household
    data_dir: Path
    person: str
    day: date
    as_of: float  # the parent's clock: the report's "as of"
    # Opens the readings database (DailyReports' ReadingSource); module-level, picklable.
    open_store: Callable[[Path], Any]


class _FixedClock:
    def __init__(self, now: float) -> None:
        self._now = now

    def now(self) -> float:
        return self._now


def build(req: BuildRequest) -> Built:
    """In the child: the same code as in-process (DailyReports.build_local), on its own
    read-only view of the database."""
    from agents.reports.daily import DailyReports

    reports = DailyReports(
        req.open_store(req.db_path),
        req.household,
        req.data_dir,
        _FixedClock(req.as_of),  # type: ignore[arg-type]
        doses=None if req.doses_path is None else Database(req.doses_path),
    )
    report, charts, plots = reports.build_local(req.person, req.day)
    return report, charts, [str(p) for p in plots]


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """The clinician summary (agents/reports/clinician.py) of one person over a period."""

    db_path: Path
    meds_path: Path | None  # prescriptions and the dose ledger
    safety_path: Path | None  # the escalation prompts: what the hub asked
    household: Household
    person: str
    since: date
    until: date
    as_of: float
    open_store: Callable[[Path], Any]


def summarise(req: SummaryRequest) -> bytes:
    """In the child: gather the period, compute it, draw the PDF. NothingToReport and
    ValueError reach the parent as themselves."""
    from agents.reports.clinician import compute_summary
    from agents.reports.clinician_gather import gather
    from agents.reports.clinician_pdf import render_pdf

    meds = None if req.meds_path is None else Database(req.meds_path)
    data = gather(req.open_store(req.db_path), req.household, req.person, req.since, req.until,
                  req.as_of, meds=meds,
                  prompts=None if req.safety_path is None else Database(req.safety_path))  # fmt: skip
    return render_pdf(compute_summary(data))


def _lower_priority() -> None:
    os.nice(19)


class ReportProcess:
    """One child, one report at a time; started on demand, stopped when idle."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._pending = 0
        self.builds = 0

    async def run(self, req: BuildRequest) -> Built:
        return await self._call(build, req)

    async def summary(self, req: SummaryRequest) -> bytes:
        """The clinician summary's PDF, made in the same child."""
        return await self._call(summarise, req)

    async def _call(self, fn: Callable[[Any], T], req: Any) -> T:
        self._pending += 1
        try:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    1, mp_context=multiprocessing.get_context("spawn"), initializer=_lower_priority
                )
            loop = asyncio.get_running_loop()
            out = await loop.run_in_executor(self._pool, fn, req)
            self.builds += 1
            return out
        finally:
            self._pending -= 1
            if not self._pending:
                self.close()

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
