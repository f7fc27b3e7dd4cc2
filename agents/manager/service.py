"""Medication reminders as a running service.

prescription text -> parsed schedule shown to the user -> confirmed -> apscheduler jobs in the
gateway's SQLite (they survive restarts; a run missed while the hub was down still fires
within the grace period) -> at each dose: a reminder on the watch (notify, kind "reminder",
prompt_id = the dose id) -> the wearer answers taken / snooze / skip on
health/{person}/{device}/ack -> a dose unanswered after `missed_after_s` is missed, and the
emergency contacts are texted. Adherence per medication per day comes from the ledger.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from agents.manager.jobstore import SQLiteJobStore
from agents.manager.prescription import (
    ParseResult,
    Prescription,
    intake_warning,
    over_the_counter_warnings,
    parse_prescription,
)
from agents.manager.prescription_model import ModelLike, read_with_model
from agents.manager.reminders import DoseLedger, triggers
from gateway.clock import Clock
from gateway.contract import EventType, NotifyPayload, format_ts, notify_topic
from gateway.db import Database
from gateway.household import Household, Person
from gateway.model import Event
from gateway.ports import Publisher, TextQueue

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS intakes (
    id          TEXT PRIMARY KEY,
    person      TEXT NOT NULL,
    medication  TEXT NOT NULL,
    mg          REAL NOT NULL,
    local_day   TEXT NOT NULL,
    ts          REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS intakes_day ON intakes (person, local_day);
CREATE TABLE IF NOT EXISTS prescriptions (
    id          TEXT PRIMARY KEY,
    person      TEXT NOT NULL,
    text        TEXT NOT NULL,
    parsed      TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('proposed', 'active', 'stopped')),
    start_day   TEXT,
    created_at  REAL NOT NULL
);
"""

# Jobs are pickled by reference to a module-level function; it finds the running service here.
_RUNNING: dict[str, MedicationService] = {}


async def fire_dose(service_key: str, rx_id: str, person: str, medication: str) -> None:
    svc = _RUNNING.get(service_key)
    if svc is None:
        log.warning("reminder fired with no medication service running")
        return
    await svc.fire(rx_id, person, medication)


class MedicationError(ValueError):
    pass


class MedicationService:
    def __init__(
        self,
        db: Database,
        publisher: Publisher,
        texts: TextQueue,
        household: Household,
        clock: Clock,
        emit: Callable[[Event], Awaitable[None]],
        *,
        missed_after_s: float = 1800.0,
        snooze_s: float = 600.0,
        grace_s: float = 3600.0,
        key: str = "default",
        model: ModelLike | None = None,
    ) -> None:
        self._model = model
        self._db = db
        self._pub = publisher
        self._texts = texts
        self._household = household
        self._clock = clock
        self._emit = emit
        self.tz = ZoneInfo(household.timezone)
        self.missed_after_s = missed_after_s
        self.grace_s = grace_s
        self.key = key
        db.ensure_schema(SCHEMA)
        self.ledger = DoseLedger(db, now=clock.now, tz=self.tz, snooze_s=snooze_s)
        self.scheduler = AsyncIOScheduler(timezone=self.tz)
        self.scheduler.add_jobstore(SQLiteJobStore(db), "default")
        self._ticker: asyncio.Task[None] | None = None

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        _RUNNING[self.key] = self
        self.scheduler.start()
        self._ticker = asyncio.create_task(self._tick_loop(), name="reminders-tick")

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        _RUNNING.pop(self.key, None)

    # --- prescriptions ------------------------------------------------------------------------

    async def propose(self, person: str, text: str) -> tuple[str | None, ParseResult]:
        """Parse; keep it as proposed (nothing scheduled) when it is clear. The local model
        reads what the parser could not, and its reading must check out against the text.
        Returns (id, result)."""
        if self._household.person(person) is None:
            raise MedicationError("unknown person")
        result = parse_prescription(text)
        if result.prescription is None and self._model is not None and len(text) <= 500:
            rx = await read_with_model(self._model, text)
            if rx is not None:
                result = ParseResult(rx, (), tuple(over_the_counter_warnings(rx)))
        if result.prescription is None:
            return None, result
        rx_id = uuid.uuid4().hex[:12]
        with self._db.tx() as c:
            c.execute(
                "INSERT INTO prescriptions (id, person, text, parsed, status, created_at)"
                " VALUES (?, ?, ?, ?, 'proposed', ?)",
                (rx_id, person, text, json.dumps(result.prescription.as_dict()),
                 self._clock.now()),
            )  # fmt: skip
        return rx_id, result

    async def confirm(self, person: str, rx_id: str) -> dict[str, Any]:
        """The user confirmed the shown schedule: create its jobs (idempotent). A schedule
        above a known over-the-counter maximum is still the user's call, but the family is
        told."""
        out = self._schedule(person, rx_id)
        warnings = over_the_counter_warnings(out.pop("_rx"))
        if warnings:
            await self._warn_family(person, warnings, key=f"rx:{rx_id}")
        out["warnings"] = warnings
        return out

    def _schedule(self, person: str, rx_id: str) -> dict[str, Any]:
        row = (
            self._db.conn()
            .execute("SELECT * FROM prescriptions WHERE id = ? AND person = ?", (rx_id, person))
            .fetchone()
        )
        if row is None:
            raise MedicationError("no such prescription")
        rx = Prescription.from_dict(json.loads(row["parsed"]))
        today = datetime.fromtimestamp(self._clock.now(), self.tz).date()
        start = date.fromisoformat(row["start_day"]) if row["start_day"] else today
        for i, trig in enumerate(triggers(rx, self.tz, start)):
            self.scheduler.add_job(
                fire_dose,
                trig,
                args=[self.key, rx_id, person, rx.medicine],
                id=f"{person}:{rx_id}:{i}",
                replace_existing=True,
                misfire_grace_time=int(self.grace_s),
                coalesce=True,
            )
        with self._db.tx() as c:
            c.execute(
                "UPDATE prescriptions SET status = 'active', start_day = ? WHERE id = ?",
                (start.isoformat(), rx_id),
            )
        return {
            "id": rx_id,
            "status": "active",
            "schedule": self.next_doses(person, rx_id),
            "_rx": rx,
        }

    def next_doses(self, person: str, rx_id: str) -> list[str]:
        out = []
        for job in self.scheduler.get_jobs():
            if job.id.startswith(f"{person}:{rx_id}:") and job.next_run_time is not None:
                out.append(job.next_run_time.astimezone(self.tz).isoformat(timespec="minutes"))
        return sorted(out)

    def stop_prescription(self, person: str, rx_id: str) -> bool:
        for job in self.scheduler.get_jobs():
            if job.id.startswith(f"{person}:{rx_id}:"):
                job.remove()
        with self._db.tx() as c:
            cur = c.execute(
                "UPDATE prescriptions SET status = 'stopped' WHERE id = ? AND person = ?",
                (rx_id, person),
            )
        return cur.rowcount == 1

    def prescriptions(self, person: str) -> list[dict[str, Any]]:
        rows = self._db.conn().execute(
            "SELECT id, text, parsed, status, start_day FROM prescriptions WHERE person = ?"
            " ORDER BY created_at",
            (person,),
        )
        return [
            {
                "id": r["id"],
                "text": r["text"],
                "parsed": json.loads(r["parsed"]),
                "status": r["status"],
                "start_day": r["start_day"],
                "next": self.next_doses(person, r["id"]) if r["status"] == "active" else [],
            }
            for r in rows
        ]

    # --- doses --------------------------------------------------------------------------------

    async def fire(self, rx_id: str, person: str, medication: str) -> str:
        """A dose is due now: record it and remind the wearer. Returns the dose id."""
        now = self._clock.now()
        # The scheduled minute identifies the dose, so a repeated firing is the same dose.
        scheduled = float(int(now // 60) * 60)
        dose = self.ledger.due(person, medication, scheduled)
        await self._remind(person, dose.id, medication, rx_id)
        return dose.id

    async def _remind(self, person: str, dose_id: str, medication: str, rx_id: str | None) -> None:
        detail = medication.title()
        if rx_id is not None:
            row = (
                self._db.conn()
                .execute("SELECT parsed FROM prescriptions WHERE id = ?", (rx_id,))
                .fetchone()
            )
            rx = Prescription.from_dict(json.loads(row["parsed"])) if row else None
            if rx is not None:
                detail = f"{rx.medicine.title()} {rx.dose.text()}" + (
                    f" ({'; '.join(rx.instructions)})" if rx.instructions else ""
                )
        payload = NotifyPayload(
            text=f"Time for your {detail}. Answer taken, snooze or skip.",
            kind="reminder",
            prompt_id=dose_id,
            ts=format_ts(self._clock.now()),
        )
        await self._pub.publish(
            notify_topic(person), payload.model_dump_json(exclude_none=True), qos=1
        )

    async def on_answer(self, person: str, prompt_id: str | None, answer: str) -> bool:
        """taken / snooze / skip from the watch. False when it is not a dose of this person."""
        a = answer.strip().lower()
        norm = {"taken": "taken", "take": "taken", "yes": "taken", "snooze": "snooze",
                "later": "snooze", "skip": "skip", "skipped": "skip", "no": "skip"}.get(a)  # fmt: skip
        if prompt_id is None or norm is None:
            return False
        row = (
            self._db.conn()
            .execute("SELECT person FROM doses WHERE id = ?", (prompt_id,))
            .fetchone()
        )
        if row is None or row["person"] != person:
            return False
        self.ledger.answer(prompt_id, norm)  # type: ignore[arg-type]
        return True

    async def tick(self) -> None:
        """Re-remind snoozed doses whose snooze ran out; mark unanswered doses missed and tell
        the family once."""
        for d in self.ledger.snoozed_due():
            await self._remind(d.person, d.id, d.medication, None)
            # The reminder went out again: the dose waits for an answer from now.
            with self._db.tx() as c:
                c.execute(
                    "UPDATE doses SET status = 'pending', due = ? WHERE id = ?",
                    (self._clock.now(), d.id),
                )
        for d in self.ledger.mark_missed(self.missed_after_s):
            await self._missed(d.person, d.id, d.medication, d.scheduled)

    async def _missed(self, person: str, dose_id: str, medication: str, scheduled: float) -> None:
        p = self._household.person(person)
        when = datetime.fromtimestamp(scheduled, self.tz).strftime("%H:%M")
        await self._emit(
            Event(
                EventType.MEDICATION_MISSED,
                person,
                self._clock.now(),
                {"dose_id": dose_id, "medication": medication, "scheduled": format_ts(scheduled)},
            )
        )
        if p is not None:
            self._text_family(
                p,
                f"{p.name} has not confirmed their {when} dose of {medication.title()}.",
                key=f"missed:{dose_id}",
                purpose="medication_missed:contact",
            )

    async def _tick_loop(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception:
                log.exception("reminders: tick failed")
            await asyncio.sleep(30)

    async def record_intake(self, person: str, medication: str, mg: float) -> dict[str, Any]:
        """A reported intake (e.g. an as-needed painkiller). Today's total is checked against
        the known over-the-counter maximum; above it the user is warned and the family told."""
        if self._household.person(person) is None:
            raise MedicationError("unknown person")
        now = self._clock.now()
        day = datetime.fromtimestamp(now, self.tz).date().isoformat()
        med = medication.strip().lower()
        with self._db.tx() as c:
            c.execute(
                "INSERT INTO intakes (id, person, medication, mg, local_day, ts) VALUES"
                " (?, ?, ?, ?, ?, ?)",
                (uuid.uuid4().hex, person, med, mg, day, now),
            )
            total = c.execute(
                "SELECT SUM(mg) FROM intakes WHERE person = ? AND local_day = ? AND medication = ?",
                (person, day, med),
            ).fetchone()[0]
        warning = intake_warning(med, float(total))
        if warning is not None:
            payload = NotifyPayload(text=f"Careful: {warning}", kind="info",
                                    ts=format_ts(now))  # fmt: skip
            await self._pub.publish(
                notify_topic(person), payload.model_dump_json(exclude_none=True), qos=1
            )
            await self._warn_family(person, [warning], key=f"intake:{day}:{med}")
        return {"medication": med, "today_mg": float(total), "warning": warning}

    async def _warn_family(self, person: str, warnings: list[str], *, key: str) -> None:
        p = self._household.person(person)
        await self._emit(
            Event(EventType.MEDICATION_WARNING, person, self._clock.now(), {"warnings": warnings})
        )
        if p is not None:
            self._text_family(
                p,
                f"Medication warning for {p.name}: {' '.join(warnings)}",
                key=f"medwarn:{key}",  # once per cause and contact
                purpose="medication_warning:contact",
            )

    def _text_family(self, p: Person, body: str, *, key: str, purpose: str) -> None:
        """One text to each emergency contact; the key makes a repeat of the same cause a
        no-op. A contact that cannot be queued does not stop the others."""
        for c in p.emergency_contacts:
            try:
                self._texts.submit(
                    to=c.phone, body=body, key=f"{key}:{c.phone[-4:]}", person=p.id,
                    purpose=purpose,
                )  # fmt: skip
            except Exception:
                log.exception("reminders: could not queue a text to a contact")

    def adherence(self, person: str, day: date) -> dict[str, Any]:
        return self.ledger.adherence(person, day)
