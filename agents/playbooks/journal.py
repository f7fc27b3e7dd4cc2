"""The SOS journal: every run and every step in `sos_runs` (safety.db), committed before the
next step starts, so a crash resumes a run where it stopped (agents/playbooks/sos.py).

Durability. A run's writes while it runs (create, each step) are WAL commits without an
fsync: a killed process keeps them, and only a power cut can drop them. They are made on the
event loop, before the first SOS text, so they must not wait for a disk that is busy with the
readings store, spill files and the tsdb outbox (an fsync there can take hundreds of ms:
bench/fsync_contention.py). The run's last write (completed or failed, an end run's close) is
fsynced, on a worker thread, before the run ends. What a power cut can lose is covered: the
SOS press is acknowledged to the broker only when its run ends, so the broker delivers it
again and the run starts over, or resumes from what survived; a text whose row was lost then
goes out a second time (never zero times). The texts' rows live in this file too, so WAL
order keeps a surviving step's texts: a step is only committed after its text rows are.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from gateway.base.db import Database
from gateway.base.errors import HealthGWError
from gateway.contract.values import Event

log = logging.getLogger("agents.playbooks.sos")

ACTOR = "sos_playbook"
Kind = Literal["hard", "end", "soft"]
Status = Literal["running", "completed", "failed"]
# The trajectory category of each kind of run (the API and the evaluation read it).
CATEGORY: dict[str, str] = {"hard": "hard_sos", "end": "end_sos", "soft": "soft_sos"}

SCHEMA = """
CREATE TABLE IF NOT EXISTS sos_runs (
    run_id          TEXT PRIMARY KEY,
    person          TEXT NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('hard', 'end', 'soft')),
    trigger         TEXT NOT NULL,
    device          TEXT,
    state           TEXT NOT NULL CHECK (state IN ('open', 'closed')),
    status          TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
    step            INTEGER NOT NULL DEFAULT 0,
    location        TEXT,
    ambulance_id    TEXT,
    ambulance_phone TEXT,
    ends_run        TEXT,
    params          TEXT NOT NULL DEFAULT '{}',
    trajectory      TEXT NOT NULL,
    started_at      REAL NOT NULL,
    updated_at      REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS sos_runs_status ON sos_runs (status);
-- At most one open hard SOS per person, whatever the code above does.
CREATE UNIQUE INDEX IF NOT EXISTS sos_runs_one_open
    ON sos_runs (person) WHERE kind = 'hard' AND state = 'open';
"""


class SosError(HealthGWError):
    """An SOS request that cannot be acted on (unknown person, journal out of step)."""


class TrajectorySink(Protocol):
    """Store.save_trajectory fits (an awaitable return is awaited)."""

    def __call__(
        self,
        run_id: str,
        *,
        person: str,
        category: str,
        trajectory: dict[str, Any],
        status: str,
        started_at: float,
        updated_at: float,
    ) -> object: ...


EmitEvent = Callable[[Event], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class SosRun:
    run_id: str
    person: str
    kind: Kind
    trigger: str
    device: str | None
    state: Literal["open", "closed"]
    status: Status
    step: int  # index of the next playbook step
    location: tuple[float, float] | None  # the press's fix, then the resolved one
    ambulance_id: str | None
    ambulance_phone: str | None
    ends_run: str | None  # an end run: the hard run it closes
    params: Mapping[str, Any]  # playbook inputs (soft: abnormal, advice, severity, alert_id)
    trajectory: Mapping[str, Any]
    started_at: float
    updated_at: float

    def as_dict(self) -> dict[str, Any]:
        loc = self.location
        return {
            "run_id": self.run_id,
            "person": self.person,
            "kind": self.kind,
            "trigger": self.trigger,
            "device": self.device,
            "state": self.state,
            "status": self.status,
            "step": self.step,
            "location": {"latitude": loc[0], "longitude": loc[1]} if loc else None,
            "ambulance_id": self.ambulance_id,
            "ambulance_phone": self.ambulance_phone,
            "ends_run": self.ends_run,
            "trajectory": json.loads(json.dumps(self.trajectory)),
            "started_at": self.started_at,
            "updated_at": self.updated_at,
        }


# --- journal ---------------------------------------------------------------------------------


class SosJournal:
    """The `sos_runs` table. Every write is committed (the last of a run also fsynced, see
    the module docstring) and followed by the trajectory sink, so the Store's copy is never
    behind a step the texts already acted on."""

    _COLS = (
        "run_id, person, kind, trigger, device, state, status, step, location, ambulance_id,"
        " ambulance_phone, ends_run, params, trajectory, started_at, updated_at"
    )

    def __init__(self, db: Database, *, save_trajectory: TrajectorySink | None = None) -> None:
        self._db = db
        self._sink = save_trajectory
        db.ensure_schema(SCHEMA)

    async def create(self, run: SosRun) -> None:
        # No fsync: on the event loop before the first text (module docstring).
        with self._db.tx() as c:
            c.execute(
                f"INSERT INTO sos_runs ({self._COLS}) VALUES ({','.join('?' * 16)})", _row(run)
            )
        await self._publish(run)

    async def save(self, run: SosRun, *, final: bool = False) -> None:
        """One step (no fsync: the next text must not wait for the disk), or with `final`
        the run's last write, fsynced off the loop before this returns."""
        with self._db.tx() as c:
            self._update(c, run)
        if final:
            await self._sync()
        await self._publish(run)

    async def finish_end(self, end_run: SosRun) -> None:
        """Complete an end run and close the hard run it ends, in one transaction (a run's
        last write: fsynced)."""
        with self._db.tx() as c:
            self._update(c, end_run)
            c.execute(
                "UPDATE sos_runs SET state = 'closed', updated_at = ? WHERE run_id = ?",
                (end_run.updated_at, end_run.ends_run),
            )
        await self._sync()
        await self._publish(end_run)

    async def _sync(self) -> None:
        # The commit is made; its fsync (and that of every text row before it) runs on a
        # worker thread and holds no SQLite lock, so the loop and other runs go on meanwhile.
        await asyncio.to_thread(self._db.sync)

    def get(self, run_id: str) -> SosRun | None:
        return self._one("SELECT * FROM sos_runs WHERE run_id = ?", (run_id,))

    def open_hard(self, person: str) -> SosRun | None:
        return self._one(
            "SELECT * FROM sos_runs WHERE person = ? AND kind = 'hard' AND state = 'open'",
            (person,),
        )

    def running_end(self, hard_run_id: str) -> SosRun | None:
        return self._one(
            "SELECT * FROM sos_runs WHERE kind = 'end' AND ends_run = ? AND status = 'running'",
            (hard_run_id,),
        )

    def unfinished(self) -> list[SosRun]:
        rows = self._db.conn().execute(
            "SELECT * FROM sos_runs WHERE status = 'running' ORDER BY started_at, rowid"
        )
        return [_from_row(r) for r in rows]

    def assigned_ambulance(self, person: str) -> tuple[str, str] | None:
        run = self.open_hard(person)
        if run is None or run.ambulance_id is None or run.ambulance_phone is None:
            return None
        return run.ambulance_id, run.ambulance_phone

    def _one(self, sql: str, args: tuple[Any, ...]) -> SosRun | None:
        row = self._db.conn().execute(sql, args).fetchone()
        return _from_row(row) if row is not None else None

    @staticmethod
    def _update(c: Any, run: SosRun) -> None:
        row = _row(run)
        sets = ", ".join(f"{col.strip()} = ?" for col in SosJournal._COLS.split(",")[1:])
        c.execute(f"UPDATE sos_runs SET {sets} WHERE run_id = ?", (*row[1:], run.run_id))

    async def _publish(self, run: SosRun) -> None:
        if self._sink is None:
            return
        try:
            out = self._sink(
                run.run_id,
                person=run.person,
                category=CATEGORY[run.kind],
                trajectory=dict(run.trajectory),
                status=run.status,
                started_at=run.started_at,
                updated_at=run.updated_at,
            )
            if inspect.isawaitable(out):
                await out
        except Exception:
            # The journal row is the source of truth; the Store copy catches up next step.
            log.exception("saving trajectory of sos run %s failed", run.run_id)


def _row(run: SosRun) -> tuple[Any, ...]:
    loc = json.dumps(list(run.location)) if run.location else None
    return (
        run.run_id, run.person, run.kind, run.trigger, run.device, run.state, run.status,
        run.step, loc, run.ambulance_id, run.ambulance_phone, run.ends_run,
        json.dumps(run.params), json.dumps(run.trajectory), run.started_at, run.updated_at,
    )  # fmt: skip


def _from_row(r: Any) -> SosRun:
    loc = json.loads(r["location"]) if r["location"] else None
    return SosRun(
        run_id=r["run_id"],
        person=r["person"],
        kind=r["kind"],
        trigger=r["trigger"],
        device=r["device"],
        state=r["state"],
        status=r["status"],
        step=r["step"],
        location=(float(loc[0]), float(loc[1])) if loc else None,
        ambulance_id=r["ambulance_id"],
        ambulance_phone=r["ambulance_phone"],
        ends_run=r["ends_run"],
        params=json.loads(r["params"]),
        trajectory=json.loads(r["trajectory"]),
        started_at=r["started_at"],
        updated_at=r["updated_at"],
    )
