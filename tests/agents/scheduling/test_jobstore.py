"""The SQLite job store under a real apscheduler: jobs survive a restart with the same next
run time, misfires within the grace period still run, and a broken job is dropped."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger

from agents.scheduling.jobstore import SQLiteJobStore
from gateway.base.db import Database

LONDON = ZoneInfo("Europe/London")
FIRED: list[str] = []


def remind(tag: str) -> None:  # module level: jobs are pickled by reference
    FIRED.append(tag)


def scheduler(db: Database) -> AsyncIOScheduler:
    s = AsyncIOScheduler(timezone=LONDON)
    s.add_jobstore(SQLiteJobStore(db), "default")
    return s


async def test_jobs_survive_a_restart(tmp_path: Path) -> None:
    db = Database(tmp_path / "j.db")
    s = scheduler(db)
    s.start()
    s.add_job(remind, CronTrigger(hour=8, minute=0, timezone=LONDON), args=["metformin"],
              id="ann:metformin:0800", misfire_grace_time=1800)  # fmt: skip
    before = s.get_job("ann:metformin:0800").next_run_time
    s.shutdown(wait=False)
    # A new process: same database, the job is back with the same next run, in local time.
    s2 = scheduler(Database(tmp_path / "j.db"))
    s2.start(paused=True)
    job = s2.get_job("ann:metformin:0800")
    assert job is not None and job.next_run_time == before
    assert job.next_run_time.astimezone(LONDON).hour == 8
    assert job.args == ("metformin",)
    s2.remove_job("ann:metformin:0800")
    assert s2.get_jobs() == []
    s2.shutdown(wait=False)


async def test_a_missed_run_within_grace_still_fires(tmp_path: Path) -> None:
    FIRED.clear()
    db = Database(tmp_path / "j.db")
    s = scheduler(db)
    s.start(paused=True)
    # Due 20 s ago (the hub was restarting); the grace period is 60 s: it runs now.
    when = datetime.now(UTC) - timedelta(seconds=20)
    s.add_job(remind, DateTrigger(when), args=["late"], id="late", misfire_grace_time=60)
    s.add_job(remind, DateTrigger(when - timedelta(seconds=600)), args=["too-late"], id="old",
              misfire_grace_time=60)  # fmt: skip
    s.resume()
    for _ in range(50):
        if FIRED:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.2)
    assert FIRED == ["late"]
    s.shutdown(wait=False)


async def test_unrestorable_jobs_are_dropped(tmp_path: Path) -> None:
    db = Database(tmp_path / "j.db")
    store = SQLiteJobStore(db)
    with db.tx() as c:
        c.execute("INSERT INTO scheduler_jobs VALUES ('bad', 1.0, x'00')")
    assert store.get_all_jobs() == []
    assert db.conn().execute("SELECT COUNT(*) FROM scheduler_jobs").fetchone()[0] == 0
