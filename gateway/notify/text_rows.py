"""The text queue's table (`messages` in safety.db), its markers, and the read side: what
the API, the ladder and the stats show. The write side is gateway.notify.dispatcher."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gateway.base.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    person TEXT NOT NULL,
    purpose TEXT NOT NULL,
    to_phone TEXT NOT NULL,
    body TEXT NOT NULL,               -- as submitted; the text sent is body + marker
    marker TEXT NOT NULL UNIQUE,      -- 'ref 7F3A2C'
    state TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'sent', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL,
    provider_id TEXT,
    last_error_code TEXT,
    maybe_sent INTEGER NOT NULL DEFAULT 0,  -- a failed attempt may still have gone out
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    delivery TEXT                     -- the provider's delivery report (Twilio status callback)
);
CREATE INDEX IF NOT EXISTS messages_open ON messages (state) WHERE state IN ('pending', 'sending');
CREATE INDEX IF NOT EXISTS messages_person ON messages (person, created_at);
"""


# The notify kinds of the SOS playbooks and the ladder (a purpose is "<kind>:<role>"): their
# texts go to a worker before their row is written (gateway/notify/text_submit.py).
URGENT_KINDS = frozenset({"sos", "sos_end", "soft_sos"})


def is_urgent(purpose: str) -> bool:
    return purpose.split(":", 1)[0] in URGENT_KINDS


def marker_for(message_id: str) -> str:
    return f"ref {message_id[:6].upper()}"


def text_with_marker(body: str, marker: str) -> str:
    return f"{body} [{marker}]"


class TextRows:
    """Queries over the messages table (TextDispatcher's read side)."""

    _db: Database
    _clock: Callable[[], float]

    def pending(self) -> list[dict[str, Any]]:
        """Texts not yet delivered to the provider (pending or sending), oldest first."""
        rows = (
            self._db.conn()
            .execute(
                "SELECT * FROM messages WHERE state IN ('pending', 'sending') ORDER BY created_at"
            )
            .fetchall()
        )
        return [dict(r) for r in rows]

    def messages(
        self, person: str | None = None, purpose: str | None = None
    ) -> list[dict[str, Any]]:
        """Every text (optionally one person's / one purpose's), oldest first."""
        where: list[str] = []
        args: list[str] = []
        for col, val in (("person", person), ("purpose", purpose)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        sql = "SELECT * FROM messages" + (" WHERE " + " AND ".join(where) if where else "")
        rows = self._db.conn().execute(sql + " ORDER BY created_at", args).fetchall()
        return [dict(r) for r in rows]

    def record_delivery(self, provider_id: str, status: str) -> bool:
        """A provider's delivery report (queued, sent, delivered, undelivered, failed, ...)
        for one text. False when the id is not one of ours."""
        status = status.strip().lower()[:32]
        with self._db.tx() as c:
            cur = c.execute(
                "UPDATE messages SET delivery = ?, updated_at = ? WHERE provider_id = ?",
                (status, self._clock(), provider_id),
            )
        return cur.rowcount == 1

    def deliveries(self, key_prefix: str) -> list[dict[str, Any]]:
        """Per recipient of the texts whose key starts with `key_prefix` (e.g. an SOS run):
        masked number, queue state and the provider's last delivery report."""
        rows = self._db.conn().execute(
            "SELECT to_phone, purpose, state, delivery FROM messages WHERE key LIKE ? || '%'"
            " ORDER BY created_at",
            (key_prefix,),
        )
        return [
            {"to": "…" + r["to_phone"][-4:], "purpose": r["purpose"], "state": r["state"],
             "delivery": r["delivery"]}
            for r in rows
        ]  # fmt: skip

    def stats(self) -> dict[str, int]:
        """sent / failed / pending (pending + sending) texts; retried = texts that needed
        more than one attempt."""
        out = {"sent": 0, "failed": 0, "pending": 0, "retried": 0}
        rows = (
            self._db.conn()
            .execute(
                "SELECT state, COUNT(*) AS n, SUM(attempts > 1) AS r FROM messages GROUP BY state"
            )
            .fetchall()
        )
        for r in rows:
            out["pending" if r["state"] == "sending" else r["state"]] += r["n"]
            out["retried"] += r["r"] or 0
        return out


@dataclass
class _Job:
    id: str
    to: str
    text: str
    marker: str
    person: str
    purpose: str
    created_at: float
    attempts: int
    state: str  # as last written to the DB
    reconcile: bool  # ask sender.was_sent before sending again
    failures: int = 0  # consecutive failures, for the backoff index
    journaled: bool = True  # False: the disk refused the row; the text lives in memory only
    urgent: bool = False  # an SOS text: its outcome is recorded durably (it fsyncs its row)
    # Set once submit() has written (or failed to write) the row of a job queued before its
    # row: the worker waits for it before recording an outcome. None: the row was first.
    row_ready: threading.Event | None = None


def _sqlite_code(exc: BaseException) -> str:
    return str(getattr(exc, "sqlite_errorname", None) or type(exc).__name__)
