"""Medication reminders as a running service.

prescription text -> parsed schedule shown to the user -> confirmed -> apscheduler jobs in the
gateway's SQLite (they survive restarts; a run missed while the hub was down still fires
within the grace period) -> at each dose: a reminder on the watch (notify, kind "reminder",
prompt_id = the dose id) -> the wearer answers taken / snooze / skip on
health/{person}/{device}/ack -> a dose unanswered after `missed_after_s` is missed, and the
emergency contacts are texted. Adherence per day comes from the ledger and the schedules.
Proposals, confirmations and intakes are checked against the person (`MedProfile`) and their
other active prescriptions (agents.medication.dose_limits; docs/clinical.md §8). The events and
texts to the family live in agents.medication.family_alerts; the person's own yes or no to a
proposal (chat or watch) in agents.medication.rx_confirm.
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

from agents.medication.dose_limits import MedProfile, review
from agents.medication.family_alerts import FamilyAlerts
from agents.medication.intakes import record
from agents.medication.prescription import ParseResult, Prescription, parse_prescription
from agents.medication.prescription_model import ModelLike, read_checked
from agents.medication.reminders import (
    DoseLedger,
    DoseRecord,
    reminder_detail,
    reminder_text,
    triggers,
    with_expected,
)
from agents.medication.rx_confirm import Outcome, RxConfirmations, is_confirm_prompt, watch_yes
from agents.scheduling.jobstore import SQLiteJobStore
from gateway.base.clock import Clock
from gateway.base.db import Database
from gateway.base.errors import HealthGWError, UnsafeRequestError
from gateway.base.loop_health import TickHealth, run_ticks
from gateway.base.ports import Publisher, TextQueue
from gateway.contract.topics import NotifyPayload, format_ts, notify_topic
from gateway.contract.values import Event
from gateway.household.model import Household

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


async def fire_dose(
    service_key: str, rx_id: str, person: str, medication: str, slot: int | None = None
) -> None:
    """`slot` is the time of day's index (its own dose); jobs made before it existed have none."""
    svc = _RUNNING.get(service_key)
    if svc is None:
        log.warning("reminder fired with no medication service running")
        return
    await svc.fire(rx_id, person, medication, slot)


class MedicationError(HealthGWError, ValueError):
    pass


class PrescriptionRefused(MedicationError, UnsafeRequestError):
    """The checks refuse the schedule (docs/clinical.md §8)."""


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
        on_dose_final: Callable[[DoseRecord], None] | None = None,
    ) -> None:
        self._model = model
        self._db = db
        self._pub = publisher
        self._texts = texts
        self._household = household
        self._clock = clock
        self.tz = ZoneInfo(household.timezone)
        self.missed_after_s = missed_after_s
        self.grace_s = grace_s
        self.key = key
        db.ensure_schema(SCHEMA)
        self.ledger = DoseLedger(
            db, now=clock.now, tz=self.tz, snooze_s=snooze_s, on_final=on_dose_final
        )
        self.scheduler = AsyncIOScheduler(timezone=self.tz)
        self.scheduler.add_jobstore(SQLiteJobStore(db), "default")
        self._ticker: asyncio.Task[None] | None = None
        self.tick_s = 30.0
        self.health = TickHealth("reminders")  # 3 failed ticks in a row: not alive()
        self._family = FamilyAlerts(household, texts, clock, emit, self.tz)
        self.confirmations = RxConfirmations(db, publisher, clock)

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        _RUNNING[self.key] = self
        self.scheduler.start()
        self._ticker = asyncio.create_task(self._tick_loop(), name="reminders-tick")

    def alive(self) -> bool:  # the tick loop runs and its ticks succeed (`reminders` watch)
        return self._ticker is not None and not self._ticker.done() and self.health.healthy()

    async def revive(self) -> None:  # the watch's restart hook: only the tick loop, if it ended
        if self._ticker is not None and self._ticker.done():
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
        profile, others = self.profile(person), self.active(person)
        result = parse_prescription(text, profile, others)
        if result.prescription is None and not result.refused:
            result = await read_checked(self._model, text, profile, others) or result
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
        # The person is asked too (watch and chat); the API can confirm all the same.
        await self.confirmations.ask(
            person, rx_id, result.prescription.summary(), list(result.warnings)
        )
        return rx_id, result

    def profile(self, person: str) -> MedProfile:
        p = self._household.person(person)
        if p is None:
            raise MedicationError("unknown person")
        return MedProfile.from_person(p, datetime.fromtimestamp(self._clock.now(), self.tz).date())

    def active(self, person: str, *, exclude: str | None = None) -> list[Prescription]:
        return [rx for i, rx, _ in self._active(person) if i != exclude]

    def _active(self, person: str) -> list[tuple[str, Prescription, date]]:
        rows = self._db.conn().execute(
            "SELECT id, parsed, start_day FROM prescriptions WHERE person = ? AND status = 'active'",
            (person,),
        )
        return [(r["id"], Prescription.from_dict(json.loads(r["parsed"])),
                 date.fromisoformat(r["start_day"])) for r in rows]  # fmt: skip

    async def confirm(self, person: str, rx_id: str, *, by: str = "api") -> dict[str, Any]:
        """The user confirmed the shown schedule: create its jobs (idempotent). A schedule
        above a maximum dose is still the user's call, but the family is told. The checks run
        again (the household or the other prescriptions may have changed since): a schedule
        that must not exist is not made."""
        row = (
            self._db.conn()
            .execute("SELECT * FROM prescriptions WHERE id = ? AND person = ?", (rx_id, person))
            .fetchone()
        )
        if row is None:
            raise MedicationError("no such prescription")
        rx = Prescription.from_dict(json.loads(row["parsed"]))
        rv = review(rx, self.profile(person), self.active(person, exclude=rx_id))
        if rv.refused:
            raise PrescriptionRefused(
                "this prescription cannot be scheduled safely; propose it again"
            )
        out = self._schedule(person, rx_id, rx, row["start_day"])
        self.confirmations.settle_rx(rx_id, "confirmed", by)
        if rv.warnings:
            await self._family.warn(person, rv.warnings, key=f"rx:{rx_id}")
        out["warnings"] = rv.warnings
        return out

    def _schedule(
        self, person: str, rx_id: str, rx: Prescription, start_day: str | None
    ) -> dict[str, Any]:
        today = datetime.fromtimestamp(self._clock.now(), self.tz).date()
        start = date.fromisoformat(start_day) if start_day else today
        for i, trig in enumerate(triggers(rx, self.tz, start)):
            self.scheduler.add_job(
                fire_dose,
                trig,
                args=[self.key, rx_id, person, rx.medicine, i],
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
        return {"id": rx_id, "status": "active", "schedule": self.next_doses(person, rx_id)}

    def next_doses(self, person: str, rx_id: str) -> list[str]:
        out = []
        for job in self.scheduler.get_jobs():
            if job.id.startswith(f"{person}:{rx_id}:") and job.next_run_time is not None:
                out.append(job.next_run_time.astimezone(self.tz).isoformat(timespec="minutes"))
        return sorted(out)

    def stop_prescription(
        self, person: str, rx_id: str, *, by: str = "api", outcome: Outcome = "closed"
    ) -> bool:
        for job in self.scheduler.get_jobs():
            if job.id.startswith(f"{person}:{rx_id}:"):
                job.remove()
        with self._db.tx() as c:
            cur = c.execute(
                "UPDATE prescriptions SET status = 'stopped' WHERE id = ? AND person = ?",
                (rx_id, person),
            )
        if cur.rowcount == 1:
            self.confirmations.settle_rx(rx_id, outcome, by)
        return cur.rowcount == 1

    async def answer_prompt(self, person: str, prompt_id: str, yes: bool, *, by: str) -> str | None:
        """The person's yes / no to a proposal; what they were told (None: not theirs)."""
        return await self.confirmations.answer(
            person, prompt_id, yes, by=by,
            confirm=lambda p, r: self.confirm(p, r, by=by),
            decline=lambda p, r: self.stop_prescription(p, r, by=by, outcome="declined"),
        )  # fmt: skip

    def prescriptions(self, person: str) -> list[dict[str, Any]]:
        rows = self._db.conn().execute(
            "SELECT id, text, parsed, status, start_day FROM prescriptions WHERE person = ?"
            " ORDER BY created_at",
            (person,),
        )
        return [{"id": r["id"], "text": r["text"], "parsed": json.loads(r["parsed"]),
                 "status": r["status"], "start_day": r["start_day"],
                 "next": self.next_doses(person, r["id"]) if r["status"] == "active" else []}
                for r in rows]  # fmt: skip

    # --- doses --------------------------------------------------------------------------------

    async def fire(self, rx_id: str, person: str, medication: str, slot: int | None = None) -> str:
        """A dose is due now: record it and remind the wearer. Returns the dose id."""
        now = self._clock.now()
        # The scheduled minute identifies the dose, so a repeated firing is the same dose.
        scheduled = float(int(now // 60) * 60)
        dose = self.ledger.due(person, medication, scheduled)
        await self._remind(person, dose.id, medication, rx_id, slot)
        return dose.id

    async def _remind(
        self, person: str, dose_id: str, medication: str, rx_id: str | None,
        slot: int | None = None,
    ) -> None:  # fmt: skip
        detail = medication.title()
        if rx_id is not None:
            row = (
                self._db.conn()
                .execute("SELECT parsed FROM prescriptions WHERE id = ?", (rx_id,))
                .fetchone()
            )
            rx = Prescription.from_dict(json.loads(row["parsed"])) if row else None
            if rx is not None:
                detail = reminder_detail(rx, slot, self._clock.now(), self.tz)
        payload = NotifyPayload(
            text=reminder_text(detail),
            kind="reminder",
            prompt_id=dose_id,
            ts=format_ts(self._clock.now()),
        )
        await self._pub.publish(
            notify_topic(person), payload.model_dump_json(exclude_none=True), qos=1
        )

    async def on_answer(
        self, person: str, prompt_id: str | None, answer: str | None, *, ok: bool | None = None
    ) -> bool:
        """taken / snooze / skip from the watch, or yes / no (else `ok`) to a confirm prompt.
        False when it is neither a dose of this person nor a confirm prompt."""
        if is_confirm_prompt(prompt_id):
            if (yes := watch_yes(answer, ok)) is not None:
                await self.answer_prompt(person, str(prompt_id), yes, by="watch")
            return True  # consumed either way: never an "are you OK?" answer
        a = (answer or "").strip().lower()
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
            await self._family.missed(d.person, d.id, d.medication, d.scheduled)

    async def _tick_loop(self) -> None:
        # Missed doses and snoozes: a failing tick is counted (self.health) and retried,
        # logged as its class and code location only (a message may name a medicine).
        await run_ticks(lambda: self.tick(), self.health, lambda: self.tick_s)

    async def record_intake(self, person: str, medication: str, mg: float) -> dict[str, Any]:
        """A reported intake ("2 x co-codamol 30/500"). Each ingredient's total over the last 24
        hours, across products, reported or scheduled, is checked against the person's limit;
        over it (or an NSAID caution) the user is warned and the family told."""
        if self._household.person(person) is None:
            raise MedicationError("unknown person")
        now = self._clock.now()
        day = datetime.fromtimestamp(now, self.tz).date().isoformat()
        med = medication.strip().lower()
        got = record(self._db, person, med, mg, now, self.tz, self.active(person),
                     self.profile(person))  # fmt: skip
        warnings = got.warnings
        warning = " ".join(warnings) if warnings else None
        if warning is not None:
            payload = NotifyPayload(text=f"Careful: {warning}", kind="info",
                                    ts=format_ts(now))  # fmt: skip
            await self._pub.publish(
                notify_topic(person), payload.model_dump_json(exclude_none=True), qos=1
            )
            await self._family.warn(person, warnings, key=f"intake:{day}:{med}")
        # today_mg (the old name) is over the same rolling 24 hours as last_24h_mg.
        return {"medication": med, "today_mg": got.own_mg, "last_24h_mg": got.mg,
                "warning": warning, "warnings": warnings, "note": got.note}  # fmt: skip

    def adherence(self, person: str, day: date) -> dict[str, Any]:
        """The ledger's counts per medication, with `expected`: the doses the active schedules
        have on that local day (a weekly medicine on its day off is not listed)."""
        schedules = [(rx, start) for _, rx, start in self._active(person)]
        return with_expected(self.ledger.adherence(person, day), schedules, self.tz, day)
