"""The assistant's memory.

Short-term: one conversation's session (agents/assistant/conversations.py Session).
Long-term (`LongTermMemory`, in the gateway's SQLite database): past complaints, bookings and
the appointment history, plus the profile and a vitals summary read from the household and
the readings store. Past complaints are retrieved by symptom similarity (character n-gram
TF-IDF cosine, so "knee pain" finds "my knees hurt").
"""

from __future__ import annotations

import re
import sqlite3
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from typing import Any

from gateway.base.db import Database
from gateway.base.errors import HealthGWError
from gateway.household.model import Person

SCHEMA = """
CREATE TABLE IF NOT EXISTS complaints (
    id          TEXT PRIMARY KEY,
    person      TEXT NOT NULL,
    ts          TEXT NOT NULL,       -- ISO local timestamp the user gave / the session started
    symptoms    TEXT NOT NULL,
    session_id  TEXT,
    created_at  REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS complaints_person ON complaints (person, ts);
CREATE TABLE IF NOT EXISTS bookings (
    id             TEXT PRIMARY KEY,
    person         TEXT NOT NULL,
    specialist_id  TEXT NOT NULL,
    start          TEXT NOT NULL,    -- household-local ISO
    end            TEXT NOT NULL,
    slot           TEXT NOT NULL,    -- "HH:MM-HH:MM, DD/MM/YYYY"
    status         TEXT NOT NULL CHECK (status IN ('booked', 'cancelled')),
    created_at     REAL NOT NULL
);
-- One person per slot, whatever the code above does.
CREATE UNIQUE INDEX IF NOT EXISTS bookings_one_per_slot
    ON bookings (specialist_id, start) WHERE status = 'booked';
CREATE TABLE IF NOT EXISTS appointment_history (
    id             TEXT PRIMARY KEY,
    person         TEXT NOT NULL,
    specialist_id  TEXT NOT NULL,
    slot           TEXT NOT NULL,
    symptoms       TEXT NOT NULL,
    created_at     REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS appointment_history_person ON appointment_history (person);
CREATE TABLE IF NOT EXISTS follow_ups (
    id          TEXT PRIMARY KEY,
    person      TEXT NOT NULL,
    method      TEXT NOT NULL,
    next_steps  TEXT NOT NULL,
    symptoms    TEXT NOT NULL,
    due         TEXT NOT NULL,
    created_at  REAL NOT NULL
);
"""

SIMILARITY_THRESHOLD = 0.2


class SlotTaken(HealthGWError):
    """The slot was booked by someone else in the meantime."""


_STOP = frozenset(
    [
        "i",
        "my",
        "me",
        "a",
        "an",
        "the",
        "on",
        "in",
        "of",
        "and",
        "to",
        "is",
        "are",
        "it",
        "its",
        "when",
        "have",
        "has",
        "had",
        "been",
        "get",
        "got",
        "feel",
        "feels",
        "very",
        "really",
        "with",
        "at",
        "for",
        "so",
        "but",
        "also",
        "that",
        "this",
        "some",
        "lot",
        "lately",
    ]
)


def _content(text: str) -> str:
    return " ".join(w for w in re.findall(r"[a-z]+", text.lower()) if w not in _STOP)


def similarity(query: str, docs: Sequence[str]) -> list[float]:
    """Cosine similarity of `query` to each doc over character 3-4 grams of the content words
    (term frequency only: with a handful of complaints, IDF would punish the shared words)."""
    if not docs:
        return []
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 4), use_idf=False, sublinear_tf=True)
    try:
        m = vec.fit_transform([_content(query), *(_content(d) for d in docs)])
    except ValueError:  # nothing but stop words
        return [0.0] * len(docs)
    sims = (m[1:] @ m[0].T).toarray().ravel()
    return [float(x) for x in sims]


class LongTermMemory:
    def __init__(
        self,
        db: Database,
        *,
        clock_now: Callable[[], float],
        vitals_summary: Callable[[str], Mapping[str, Any]] | None = None,
    ) -> None:
        self._db = db
        self._now = clock_now
        self._vitals = vitals_summary
        self._lock = threading.Lock()
        db.ensure_schema(SCHEMA)

    # --- complaints ------------------------------------------------------------------------

    def store_complaint(self, person: str, symptoms: str, ts: str, session_id: str | None) -> str:
        cid = uuid.uuid4().hex
        with self._db.tx() as c:
            c.execute(
                "INSERT INTO complaints (id, person, ts, symptoms, session_id, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (cid, person, ts, symptoms, session_id, self._now()),
            )
        return cid

    def complaints(
        self, person: str, *, start: date | None = None, end: date | None = None
    ) -> list[dict[str, str]]:
        where, args = ["person = ?"], [person]
        if start is not None:
            where.append("substr(ts, 1, 10) >= ?")
            args.append(start.isoformat())
        if end is not None:
            where.append("substr(ts, 1, 10) <= ?")
            args.append(end.isoformat())
        rows = self._db.conn().execute(
            f"SELECT ts, symptoms FROM complaints WHERE {' AND '.join(where)} ORDER BY ts",
            args,
        )
        return [{"date": r["ts"][:10], "symptoms": r["symptoms"]} for r in rows]

    def similar_complaints(
        self,
        person: str,
        symptoms: str,
        *,
        start: date | None = None,
        end: date | None = None,
        limit: int = 5,
    ) -> list[dict[str, str]]:
        """Past complaints like `symptoms`, most similar first (the brief's [{date, symptoms}])."""
        past = self.complaints(person, start=start, end=end)
        sims = similarity(symptoms, [p["symptoms"] for p in past])
        ranked = sorted(
            ((s, p) for s, p in zip(sims, past, strict=True) if s >= SIMILARITY_THRESHOLD),
            key=lambda sp: (-sp[0], sp[1]["date"]),
        )
        return [p for _, p in ranked[:limit]]

    # --- bookings ---------------------------------------------------------------------------

    def taken(self, specialist_ids: Sequence[str] | None = None) -> set[tuple[str, datetime]]:
        rows = self._db.conn().execute(
            "SELECT specialist_id, start FROM bookings WHERE status = 'booked'"
        )
        wanted = set(specialist_ids) if specialist_ids is not None else None
        return {
            (r["specialist_id"], datetime.fromisoformat(r["start"]))
            for r in rows
            if wanted is None or r["specialist_id"] in wanted
        }

    def book(
        self, person: str, specialist_id: str, start: datetime, end: datetime, slot: str
    ) -> str:
        """Book; idempotent for the same person and slot. SlotTaken if someone else has it."""
        with self._lock:
            row = (
                self._db.conn()
                .execute(
                    "SELECT id, person FROM bookings WHERE specialist_id = ? AND start = ?"
                    " AND status = 'booked'",
                    (specialist_id, start.isoformat()),
                )
                .fetchone()
            )
            if row is not None:
                if row["person"] == person:
                    return str(row["id"])
                raise SlotTaken("that slot has just been booked")
            bid = uuid.uuid4().hex
            try:
                with self._db.tx(durable=True) as c:
                    c.execute(
                        "INSERT INTO bookings (id, person, specialist_id, start, end, slot,"
                        " status, created_at) VALUES (?, ?, ?, ?, ?, ?, 'booked', ?)",
                        (bid, person, specialist_id, start.isoformat(), end.isoformat(), slot,
                         self._now()),
                    )  # fmt: skip
            except sqlite3.IntegrityError:
                raise SlotTaken("that slot has just been booked") from None
            return bid

    def bookings(self, person: str) -> list[dict[str, Any]]:
        rows = self._db.conn().execute(
            "SELECT id, specialist_id, start, end, slot, status FROM bookings WHERE person = ?"
            " ORDER BY start",
            (person,),
        )
        return [dict(r) for r in rows]

    def cancel(self, person: str, booking_id: str) -> bool:
        with self._db.tx(durable=True) as c:
            cur = c.execute(
                "UPDATE bookings SET status = 'cancelled' WHERE id = ? AND person = ?"
                " AND status = 'booked'",
                (booking_id, person),
            )
        return cur.rowcount == 1

    # --- appointment history ----------------------------------------------------------------

    def save_history(self, person: str, specialist_id: str, slot: str, symptoms: str) -> str:
        hid = uuid.uuid4().hex
        with self._db.tx() as c:
            c.execute(
                "INSERT INTO appointment_history (id, person, specialist_id, slot, symptoms,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (hid, person, specialist_id, slot, symptoms, self._now()),
            )
        return hid

    def history(self, person: str) -> list[dict[str, Any]]:
        rows = self._db.conn().execute(
            "SELECT h.specialist_id, h.slot, h.symptoms, h.created_at,"
            " (SELECT b.status FROM bookings b WHERE b.person = h.person"
            "  AND b.specialist_id = h.specialist_id AND b.slot = h.slot"
            "  ORDER BY b.created_at DESC LIMIT 1) AS status"
            " FROM appointment_history h WHERE h.person = ? ORDER BY h.created_at",
            (person,),
        )
        return [
            {
                "specialist_id": r["specialist_id"],
                "appointment_time_date": r["slot"],
                "symptoms": r["symptoms"],
                "status": r["status"] or "recorded",
            }
            for r in rows
        ]

    # --- follow-ups -------------------------------------------------------------------------

    def add_follow_up(
        self, person: str, method: str, next_steps: str, symptoms: str, due: date
    ) -> str:
        fid = uuid.uuid4().hex
        with self._db.tx() as c:
            c.execute(
                "INSERT INTO follow_ups (id, person, method, next_steps, symptoms, due,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (fid, person, method, next_steps, symptoms, due.isoformat(), self._now()),
            )
        return fid

    def follow_ups(self, person: str) -> list[dict[str, Any]]:
        rows = self._db.conn().execute(
            "SELECT method, next_steps, symptoms, due FROM follow_ups WHERE person = ?"
            " ORDER BY due",
            (person,),
        )
        return [dict(r) for r in rows]

    # --- profile ----------------------------------------------------------------------------

    def profile(self, person: Person, today: date) -> dict[str, Any]:
        """What the planner may know about the person (fetched, not stuffed into prompts)."""
        out: dict[str, Any] = {
            "user_id": person.id,
            "name": person.name,
            "age": person.age_on(today),
            "sex": person.sex,
            "conditions": list(person.conditions),
            "medications": list(person.medications),
            "appointments": self.history(person.id)[-5:],
        }
        if self._vitals is not None:
            out["vitals"] = dict(self._vitals(person.id))
        return out

    def export(self, person: str) -> dict[str, Any]:
        """Everything remembered about a person (a subject-access request)."""
        return {
            "complaints": self.complaints(person),
            "bookings": self.bookings(person),
            "appointment_history": self.history(person),
            "follow_ups": self.follow_ups(person),
        }
