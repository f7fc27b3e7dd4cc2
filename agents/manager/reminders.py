"""Medication reminders: when each dose is due (timezone- and DST-correct, through
apscheduler's CronTrigger, the same trigger the scheduler runs), and the dose ledger that
records what the wearer answered and keeps adherence per medication per day.

A dose is `pending` when due, then `taken`, `skipped` or `snoozed` (due again after the
snooze), or `missed` when nobody answered within `missed_after_s` (the family is told).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

from apscheduler.triggers.cron import CronTrigger

from agents.manager.prescription import Prescription
from gateway.db import Database

log = logging.getLogger(__name__)

Status = Literal["pending", "taken", "skipped", "snoozed", "missed"]
Answer = Literal["taken", "snooze", "skip"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS doses (
    id          TEXT PRIMARY KEY,
    person      TEXT NOT NULL,
    medication  TEXT NOT NULL,
    scheduled   REAL NOT NULL,   -- epoch seconds the dose was due
    local_day   TEXT NOT NULL,   -- the person's calendar day of `scheduled`
    status      TEXT NOT NULL CHECK (status IN ('pending','taken','skipped','snoozed','missed')),
    due         REAL NOT NULL,   -- when it is (next) due: scheduled, or after a snooze
    snoozes     INTEGER NOT NULL DEFAULT 0,
    answered_at REAL
);
-- One dose per medication and time: a scheduler firing twice (restart, misfire) is harmless.
CREATE UNIQUE INDEX IF NOT EXISTS doses_once ON doses (person, medication, scheduled);
CREATE INDEX IF NOT EXISTS doses_day ON doses (person, local_day);
"""


def triggers(rx: Prescription, tz: ZoneInfo, start: date) -> list[CronTrigger]:
    """One cron trigger per time of day, in the person's timezone, from `start` for the
    prescription's duration (open-ended when none). As-needed medicines have none."""
    end = start + timedelta(days=rx.duration_days - 1) if rx.duration_days else None
    out = []
    for t in rx.times:
        out.append(
            CronTrigger(
                hour=t.hour,
                minute=t.minute,
                timezone=tz,
                start_date=datetime.combine(start, time(0), tz),
                end_date=datetime.combine(end, time(23, 59, 59), tz) if end else None,
            )
        )
    return out


def fire_times(rx: Prescription, tz: ZoneInfo, start: date, until: datetime) -> list[datetime]:
    """Every due time from `start` to `until`, in order (what the scheduler will fire)."""
    out: list[datetime] = []
    for trig in triggers(rx, tz, start):
        prev: datetime | None = None
        now = datetime.combine(start, time(0), tz)
        while True:
            nxt = trig.get_next_fire_time(prev, now)
            if nxt is None or nxt > until:
                break
            out.append(nxt)
            prev, now = nxt, nxt + timedelta(seconds=1)
    return sorted(out)


@dataclass(frozen=True, slots=True)
class DoseRecord:
    id: str
    person: str
    medication: str
    scheduled: float
    status: Status
    due: float
    snoozes: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "person": self.person,
            "medication": self.medication,
            "scheduled": self.scheduled,
            "status": self.status,
            "due": self.due,
            "snoozes": self.snoozes,
        }


class DoseLedger:
    def __init__(
        self,
        db: Database,
        *,
        now: Callable[[], float],
        tz: ZoneInfo,
        snooze_s: float = 600.0,
        max_snoozes: int = 3,
    ) -> None:
        self._db = db
        self._now = now
        self._tz = tz
        self.snooze_s = snooze_s
        self.max_snoozes = max_snoozes
        self._lock = threading.Lock()
        # Told of every dose that ended (taken, skipped, missed): the time series' adherence.
        self.on_final: Callable[[DoseRecord], None] | None = None
        db.ensure_schema(SCHEMA)

    def due(self, person: str, medication: str, scheduled: float) -> DoseRecord:
        """The scheduler fired: record the dose (idempotent for the same person, medication
        and time) and return it."""
        day = datetime.fromtimestamp(scheduled, self._tz).date().isoformat()
        with self._lock, self._db.tx() as c:
            c.execute(
                "INSERT OR IGNORE INTO doses (id, person, medication, scheduled, local_day,"
                " status, due) VALUES (?, ?, ?, ?, ?, 'pending', ?)",
                (uuid.uuid4().hex, person, medication, scheduled, day, scheduled),
            )
            row = c.execute(
                "SELECT * FROM doses WHERE person = ? AND medication = ? AND scheduled = ?",
                (person, medication, scheduled),
            ).fetchone()
        return _record(row)

    def answer(self, dose_id: str, answer: Answer) -> DoseRecord | None:
        """taken / skip end the dose; snooze makes it due again later (bounded). Answers to a
        dose that already ended change nothing. None for an unknown dose."""
        now = self._now()
        with self._lock, self._db.tx() as c:
            row = c.execute("SELECT * FROM doses WHERE id = ?", (dose_id,)).fetchone()
            if row is None:
                return None
            if row["status"] in ("pending", "snoozed"):
                if answer == "snooze" and row["snoozes"] < self.max_snoozes:
                    c.execute(
                        "UPDATE doses SET status = 'snoozed', due = ?, snoozes = snoozes + 1"
                        " WHERE id = ?",
                        (now + self.snooze_s, dose_id),
                    )
                elif answer in ("taken", "skip"):
                    status = "taken" if answer == "taken" else "skipped"
                    c.execute(
                        "UPDATE doses SET status = ?, answered_at = ? WHERE id = ?",
                        (status, now, dose_id),
                    )
            ended = row["status"] in ("pending", "snoozed") and answer in ("taken", "skip")
            row = c.execute("SELECT * FROM doses WHERE id = ?", (dose_id,)).fetchone()
        rec = _record(row)
        if ended:
            self._final(rec)
        return rec

    def _final(self, rec: DoseRecord) -> None:
        if self.on_final is not None:
            try:
                self.on_final(rec)
            except Exception:
                log.exception("dose observer failed")

    def snoozed_due(self) -> list[DoseRecord]:
        """Snoozed doses whose snooze has run out: remind again."""
        rows = self._db.conn().execute(
            "SELECT * FROM doses WHERE status = 'snoozed' AND due <= ?", (self._now(),)
        )
        return [_record(r) for r in rows]

    def mark_missed(self, missed_after_s: float) -> list[DoseRecord]:
        """Doses nobody answered within `missed_after_s` of being due become missed (returned
        once, so the family is told once)."""
        cutoff = self._now() - missed_after_s
        with self._lock, self._db.tx() as c:
            rows = c.execute(
                "SELECT * FROM doses WHERE status IN ('pending', 'snoozed') AND due <= ?",
                (cutoff,),
            ).fetchall()
            c.executemany(
                "UPDATE doses SET status = 'missed' WHERE id = ?", [(r["id"],) for r in rows]
            )
        out = [_record(r, status="missed") for r in rows]
        for rec in out:
            self._final(rec)
        return out

    def adherence(self, person: str, day: date) -> dict[str, dict[str, Any]]:
        """Per medication for one local day: counts by status and the taken rate of the doses
        that have ended (pending ones are not counted against it)."""
        rows = self._db.conn().execute(
            "SELECT medication, status, COUNT(*) AS n FROM doses WHERE person = ?"
            " AND local_day = ? GROUP BY medication, status",
            (person, day.isoformat()),
        )
        out: dict[str, dict[str, Any]] = {}
        for r in rows:
            m = out.setdefault(
                r["medication"],
                {"scheduled": 0, "taken": 0, "skipped": 0, "missed": 0, "pending": 0},
            )
            key = "pending" if r["status"] in ("pending", "snoozed") else r["status"]
            m[key] += r["n"]
            m["scheduled"] += r["n"]
        for m in out.values():
            ended = m["taken"] + m["skipped"] + m["missed"]
            m["rate"] = round(m["taken"] / ended, 3) if ended else None
        return out


def _record(row: Any, *, status: Status | None = None) -> DoseRecord:
    return DoseRecord(
        row["id"],
        row["person"],
        row["medication"],
        row["scheduled"],
        status or row["status"],
        row["due"],
        row["snoozes"],
    )
