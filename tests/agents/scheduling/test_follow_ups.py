"""Follow-ups stored by the `follow_up_with_user` tool become scheduler jobs in the gateway's
SQLite job store: the job survives a restart, fires on its day (a real apscheduler), asks the
person on the reply topic once, and a follow-up stored without a scheduler gets its job at
the next start."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from agents.assistant.memory import LongTermMemory
from agents.scheduling.follow_ups import FollowUps, reads_better, session_for
from agents.scheduling.jobstore import SQLiteJobStore
from agents.tools.appointment_tools import AppointmentToolDeps, register_appointment_tools
from agents.tools.registry import ToolContext, ToolRegistry
from gateway.base.clock import ManualClock
from gateway.base.db import Database
from gateway.household.model import load_household

ROOT = Path(__file__).resolve().parents[3]
LONDON = ZoneInfo("Europe/London")


class Pub:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    async def publish(
        self, topic: str, payload: Any, *, qos: int = 1, retain: bool = False
    ) -> None:
        self.sent.append((topic, json.loads(payload) if isinstance(payload, str) else payload))


def scheduler(db: Database) -> AsyncIOScheduler:
    s = AsyncIOScheduler(timezone=LONDON)
    s.add_jobstore(SQLiteJobStore(db), "default")
    return s


def parts(path: Path, clock: ManualClock, **kw: Any) -> tuple[Any, ...]:
    """The tool and the follow-up service on one database, as the gateway wires them."""
    hh = load_household(ROOT / "examples" / "household.yaml")
    db = Database(path)
    mem = LongTermMemory(db, clock_now=clock.now)
    pub = Pub()
    fus = FollowUps(db, pub, clock, LONDON, key=f"test-{path.stem}", **kw)
    reg = ToolRegistry(audit=lambda _: None, clock=clock)
    register_appointment_tools(
        reg, AppointmentToolDeps(hh, mem, clock, schedule_follow_up=fus.schedule)
    )
    return db, mem, pub, fus, reg


async def follow_up(reg: ToolRegistry, past: Any = None) -> dict[str, str]:
    out: dict[str, str] = await reg.call(
        "follow_up_with_user",
        {"user_id": "dad", "current_symptoms": "knee pain when climbing stairs",
         "past_complaints": past},
        ctx=ToolContext(actor="assistant", person="dad"),
    )  # fmt: skip
    return out


async def test_a_stored_follow_up_is_a_job_that_survives_a_restart(tmp_path: Path) -> None:
    clock = ManualClock(time.time())
    db, mem, _pub, fus, reg = parts(tmp_path / "f.db", clock)
    s = scheduler(db)
    fus.use(s)
    s.start(paused=True)
    out = await follow_up(reg)
    assert "check in" in out["next_steps"]
    fid = db.conn().execute("SELECT id FROM follow_ups").fetchone()[0]
    due = date.fromisoformat(mem.follow_ups("dad")[0]["due"])
    job = s.get_job(f"followup:dad:{fid}")
    assert job is not None
    assert job.next_run_time == datetime.combine(due, fus.at, LONDON)
    s.shutdown(wait=False)
    # A new process on the same database: the job is back, with the same time.
    db2 = Database(tmp_path / "f.db")
    s2 = scheduler(db2)
    s2.start(paused=True)
    again = s2.get_job(f"followup:dad:{fid}")
    assert again is not None and again.next_run_time == job.next_run_time
    assert again.args == (fus.key, fid)
    s2.shutdown(wait=False)


async def test_the_job_fires_and_asks_once(tmp_path: Path) -> None:
    clock = ManualClock(time.time())
    # Sent 2 s from now: the due day is today, at a time the test can wait for.
    soon = datetime.now(LONDON) + timedelta(seconds=2)
    db, mem, pub, fus, _reg = parts(tmp_path / "f.db", clock, at=soon.time())
    s = scheduler(db)
    fus.use(s)
    s.start()
    fus.start()
    try:
        fid = mem.add_follow_up("dad", "app", "I will check in", "a sore knee", soon.date())
        fus.schedule(fid, "dad", soon.date())
        for _ in range(100):
            if pub.sent:
                break
            await asyncio.sleep(0.05)
        topic, msg = pub.sent[0]
        assert topic == "health/dad/reply"
        assert msg["session_id"] == session_for(fid) and msg["expects_answer"] is True
        assert msg["answer_type"] == "free_text" and "a sore knee" in msg["text"]
        assert s.get_job(f"followup:dad:{fid}") is None  # a one-off: gone once run
        assert not await fus.fire(fid)  # a second firing (restart, misfire) asks nobody
        assert len(pub.sent) == 1
        assert fus.open_for("dad") == (session_for(fid), "a sore knee")
        fus.answered("dad", session_for(fid))
        assert fus.open_for("dad") is None
    finally:
        fus.stop()
        s.shutdown(wait=False)


async def test_stored_without_a_scheduler_is_scheduled_at_start(tmp_path: Path) -> None:
    clock = ManualClock(time.time())
    db, _mem, _pub, fus, reg = parts(tmp_path / "f.db", clock)
    await follow_up(reg, past=[{"date": "2026-01-01", "symptoms": "knee"}])  # no scheduler yet
    fid = db.conn().execute("SELECT id FROM follow_ups").fetchone()[0]
    s = scheduler(db)
    fus.use(s)
    s.start(paused=True)
    fus.start()
    try:
        assert s.get_job(f"followup:dad:{fid}") is not None
        # Once sent, a restart does not schedule it again.
        assert await fus.fire(fid)
        s.remove_job(f"followup:dad:{fid}")
        fus.start()
        assert s.get_job(f"followup:dad:{fid}") is None
    finally:
        fus.stop()
        s.shutdown(wait=False)


def test_reading_a_better_answer() -> None:
    for t in ("much better thanks", "all good now", "it's gone", "fine"):
        assert reads_better(t), t
    for t in ("not better", "still bad", "worse", "it hurts again", "no change"):
        assert not reads_better(t), t
