"""Medication reminders: when each dose is due (timezone- and DST-correct, through
apscheduler's CronTrigger, the same trigger the scheduler runs; weekly and monthly medicines
only on their day), and the dose ledger that
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

from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger

from agents.medication.rx_types import CRON_DAYS, Prescription
from gateway.base.db import Database
from gateway.contract.vital_words import user_text

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


class EveryNDays(BaseTrigger):  # type: ignore[misc]
    """A dose time every `n` days from `anchor` (alternate days, every 2 weeks): the real
    CronTrigger for the time of day (so local times hold across DST), skipping the days off
    the cycle. Picklable with the job (plain attributes)."""

    def __init__(self, n: int, anchor: date, cron: CronTrigger) -> None:
        self.n, self.anchor, self.cron = n, anchor, cron

    def get_next_fire_time(self, previous: datetime | None, now: datetime) -> datetime | None:
        nxt: datetime | None = self.cron.get_next_fire_time(previous, now)
        for _ in range(self.n + 1):  # at most n days to the next day on the cycle
            if nxt is None:
                return None
            off = (nxt.astimezone(self.cron.timezone).date() - self.anchor).days % self.n
            if off == 0:
                return nxt
            day = nxt.astimezone(self.cron.timezone).date() + timedelta(days=self.n - off)
            nxt = self.cron.get_next_fire_time(
                None, datetime.combine(day, time(0), self.cron.timezone)
            )
        return nxt

    def __str__(self) -> str:
        return f"every {self.n} days from {self.anchor.isoformat()} ({self.cron})"


def first_dose_day(rx: Prescription, start: date) -> date:
    """The start day, or for an every-N-days schedule anchored on a weekday, the first such
    weekday on or after it."""
    if rx.every_n_days and rx.days_of_week:
        return start + timedelta(days=(rx.days_of_week[0] - start.weekday()) % 7)
    return start


def triggers(rx: Prescription, tz: ZoneInfo, start: date) -> list[CronTrigger | EveryNDays]:
    """One trigger per time of day, in the person's timezone, from `start` for the
    prescription's duration (open-ended when none), on its days only: some weekdays, one day
    of the month, or every N days. As-needed medicines have none."""
    end = start + timedelta(days=rx.duration_days - 1) if rx.duration_days else None
    days: dict[str, str | int] = {}
    if rx.day_of_month is not None:
        days["day"] = rx.day_of_month
    elif rx.days_of_week and not rx.every_n_days:
        days["day_of_week"] = ",".join(CRON_DAYS[d] for d in rx.days_of_week)
    out: list[CronTrigger | EveryNDays] = []
    for t in rx.times:
        cron = CronTrigger(
            hour=t.hour,
            minute=t.minute,
            timezone=tz,
            start_date=datetime.combine(start, time(0), tz),
            end_date=datetime.combine(end, time(23, 59, 59), tz) if end else None,
            **days,
        )
        out.append(EveryNDays(rx.every_n_days, first_dose_day(rx, start), cron)
                   if rx.every_n_days else cron)  # fmt: skip
    return out


def fire_times(rx: Prescription, tz: ZoneInfo, start: date, until: datetime) -> list[datetime]:
    """Every due time from `start` to `until`, in order (what the scheduler will fire)."""
    return fire_times_between(rx, tz, start, datetime.combine(start, time(0), tz), until)


def fire_times_between(
    rx: Prescription, tz: ZoneInfo, start: date, since: datetime, until: datetime
) -> list[datetime]:
    out: list[datetime] = []
    for trig in triggers(rx, tz, start):
        prev: datetime | None = None
        now = since
        while True:
            nxt = trig.get_next_fire_time(prev, now)
            if nxt is None or nxt > until:
                break
            out.append(nxt)
            prev, now = nxt, nxt + timedelta(seconds=1)
    return sorted(out)


def expected_on(rx: Prescription, tz: ZoneInfo, start: date, day: date) -> list[datetime]:
    """The doses due on one local day (none on a weekly medicine's days off)."""
    since = datetime.combine(day, time(0), tz)
    until = datetime.combine(day + timedelta(days=1), time(0), tz) - timedelta(microseconds=1)
    return fire_times_between(rx, tz, start, since, until)


def slot_of(rx: Prescription, ts: float, tz: ZoneInfo) -> int | None:
    """Which of the times of day a dose due at `ts` is (its own dose when they differ)."""
    local = datetime.fromtimestamp(ts, tz)
    return next(
        (i for i, t in enumerate(rx.times) if (t.hour, t.minute) == (local.hour, local.minute)),
        None,
    )


@user_text
def reminder_detail(rx: Prescription, slot: int | None, ts: float, tz: ZoneInfo) -> str:
    """'Prednisolone 20 mg (after meals)': the dose of that time of day (jobs made before the
    slot was passed are matched by the local time)."""
    i = slot if slot is not None else slot_of(rx, ts, tz)
    dose = rx.dose_at(i) if i is not None and i < len(rx.times) else rx.dose
    instr = f" ({'; '.join(rx.instructions)})" if rx.instructions else ""
    return f"{rx.medicine.title()} {dose.text()}{instr}"


@user_text
def reminder_text(detail: str) -> str:
    """The reminder on the watch: "Time for your Metformin 500 mg (with food). ..."."""
    return f"Time for your {detail}. Answer taken, snooze or skip."


def with_expected(
    adherence: dict[str, dict[str, Any]], schedules: list[tuple[Prescription, date]],
    tz: ZoneInfo, day: date,
) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Adds `expected` (doses the active schedules have that day) to the ledger's adherence. A
    medicine with nothing expected and nothing recorded (a weekly one on its day off) is not
    listed; a recorded one no longer scheduled has `expected` None."""
    for rx, start in schedules:
        n = len(expected_on(rx, tz, start, day))
        if n or rx.medicine in adherence:
            m = adherence.setdefault(rx.medicine, {"scheduled": 0, "taken": 0, "skipped": 0,
                                                   "missed": 0, "pending": 0, "rate": None})  # fmt: skip
            m["expected"] = m.get("expected", 0) + n
    for m in adherence.values():
        m.setdefault("expected", None)
    return adherence


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
        on_final: Callable[[DoseRecord], None] | None = None,
    ) -> None:
        self._db = db
        self._now = now
        self._tz = tz
        self.snooze_s = snooze_s
        self.max_snoozes = max_snoozes
        self._lock = threading.Lock()
        # Told of every dose that ended (taken, skipped, missed): the time series' adherence.
        self.on_final = on_final
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
