"""What a person took over the last 24 hours, per ingredient: every reported intake (the
intakes table) and every scheduled dose answered "taken" (the dose ledger), across products.
A rolling window, not the calendar day: 4 g at 23:00 and 4 g at 01:00 is 8 g in 2 hours."""

from __future__ import annotations

import sqlite3
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo

from agents.medication.dose_limits import MedProfile, intake_review
from agents.medication.ingredients import ingredients, intake_ingredients
from agents.medication.reminders import slot_of
from agents.medication.rx_types import Prescription
from gateway.base.db import Database

WINDOW_S = 24 * 3600.0


@dataclass
class Totals:
    own_mg: float = 0.0  # mg of the medication just reported, under the same name
    mg: dict[str, float] = field(default_factory=dict)  # per ingredient
    sources: dict[str, list[str]] = field(default_factory=dict)  # ingredient -> medicines
    warnings: list[str] = field(default_factory=list)
    note: str | None = None  # e.g. which of several products was not said

    def add(self, name: str, amounts: dict[str, float]) -> None:
        for ing, v in amounts.items():
            self.mg[ing] = self.mg.get(ing, 0.0) + v
            self.sources.setdefault(ing, []).append(name)


def totals_24h(
    conn: sqlite3.Connection, person: str, med: str, now: float, active: list[Prescription],
    tz: ZoneInfo,
) -> Totals:  # fmt: skip
    """The window is (now - 24 h, now]. A taken dose counts from when it was answered (its due
    time when that is unknown); its amount is its own time's dose."""
    since = now - WINDOW_S
    out = Totals()
    for r in conn.execute(
        "SELECT medication, mg FROM intakes WHERE person = ? AND ts > ? AND ts <= ?",
        (person, since, now),
    ):
        if r["medication"] == med:
            out.own_mg += r["mg"]
        out.add(r["medication"], intake_ingredients(r["medication"], r["mg"])[0])
    by_name = {rx.medicine: rx for rx in active}
    for r in conn.execute(
        "SELECT medication, scheduled FROM doses WHERE person = ? AND status = 'taken'"
        " AND COALESCE(answered_at, scheduled) > ?",
        (person, since),
    ):
        rx = by_name.get(r["medication"])
        if rx is not None:
            i = slot_of(rx, r["scheduled"], tz)
            out.add(
                rx.medicine,
                ingredients(rx.medicine, rx.dose_at(i) if i is not None else rx.dose)[0],
            )
    return out


def record(
    db: Database, person: str, med: str, mg: float, now: float, tz: ZoneInfo,
    active: list[Prescription], profile: MedProfile,
) -> Totals:  # fmt: skip
    """Store one reported intake; return the 24-hour totals including it, and the warnings."""
    day = datetime.fromtimestamp(now, tz).date().isoformat()
    with db.tx() as c:
        c.execute(
            "INSERT INTO intakes (id, person, medication, mg, local_day, ts) VALUES"
            " (?, ?, ?, ?, ?, ?)",
            (uuid.uuid4().hex, person, med, mg, day, now),
        )
    out = totals_24h(db.conn(), person, med, now, active, tz)
    this, out.note = intake_ingredients(med, mg)
    out.warnings = intake_review(med, this, out.mg, out.sources, profile,
                                 [rx.medicine for rx in active])  # fmt: skip
    return out
