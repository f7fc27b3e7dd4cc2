"""Open conversations, kept in the gateway's SQLite database so they survive a restart.

One row per open session: who, the opening message, the run's resumable state (its
trajectory so far, the step awaiting the user's answer, the counters its result needs) and
an answer received but not yet acted on. `last_activity` is wall-clock time, so the idle
timeout keeps counting while the gateway is down. A finished conversation's row is deleted
(its trajectory stays in `trajectories`); rows hold PHI, so nothing here logs their content.

Writes that come before something the user sees (the opener, a question, an answer) are
fsynced (`durable`); the state after each tool step is committed without an fsync, which a
killed process still keeps (WAL, synchronous=NORMAL), only a power cut may lose it.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import dataclass
from typing import Any

from gateway.base.db import Database
from gateway.base.errors import StorageError

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    session_id     TEXT PRIMARY KEY,
    person         TEXT NOT NULL,
    opener         TEXT NOT NULL,    -- the user's first message (PHI)
    turns          INTEGER NOT NULL,
    state          TEXT,             -- the run's resumable state (JSON, PHI); NULL: not started
    answer         TEXT,             -- the answer to the pending question, not yet acted on
    started_at     REAL NOT NULL,
    last_activity  REAL NOT NULL,    -- wall clock of the last message either way
    updated_at     REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS conversations_person ON conversations (person);
"""


@dataclass
class OpenConversation:
    session_id: str
    person: str
    opener: str
    turns: int
    started_at: float
    last_activity: float
    state: dict[str, Any] | None = None
    answer: str | None = None


class ConversationStore:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)

    def open(self, c: OpenConversation, now: float) -> None:
        """A new session, before anything is said back (durable)."""
        self._write(
            "INSERT OR REPLACE INTO conversations (session_id, person, opener, turns, state,"
            " answer, started_at, last_activity, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (c.session_id, c.person, c.opener, c.turns, _dumps(c.state), c.answer, c.started_at,
             c.last_activity, now),
            durable=True,
        )  # fmt: skip

    def save_state(
        self,
        session_id: str,
        state: dict[str, Any],
        *,
        turns: int,
        last_activity: float,
        now: float,
        durable: bool,
    ) -> None:
        """The run's state after a step; it clears any answer, which the state now holds."""
        self._write(
            "UPDATE conversations SET state = ?, answer = NULL, turns = ?, last_activity = ?,"
            " updated_at = ? WHERE session_id = ?",
            (_dumps(state), turns, last_activity, now, session_id),
            durable=durable,
        )

    def save_answer(self, session_id: str, answer: str, *, turns: int, now: float) -> None:
        """The user's answer to the pending question, before it is acted on (durable)."""
        self._write(
            "UPDATE conversations SET answer = ?, turns = ?, last_activity = ?, updated_at = ?"
            " WHERE session_id = ?",
            (answer, turns, now, now, session_id),
            durable=True,
        )

    def remove(self, session_id: str) -> None:
        self._write("DELETE FROM conversations WHERE session_id = ?", (session_id,))

    def load(self) -> tuple[list[OpenConversation], int]:
        """Every open conversation, oldest first, and how many rows were unreadable (those
        are deleted: a row that cannot be resumed must not hold PHI forever)."""
        rows = (
            self._db.conn()
            .execute("SELECT * FROM conversations ORDER BY started_at, session_id")
            .fetchall()
        )
        out: list[OpenConversation] = []
        bad: list[str] = []
        for r in rows:
            try:
                state = json.loads(r["state"]) if r["state"] is not None else None
                if state is not None and not isinstance(state, dict):
                    raise ValueError("state is not an object")
                out.append(
                    OpenConversation(
                        str(r["session_id"]), str(r["person"]), str(r["opener"]),
                        int(r["turns"]), float(r["started_at"]), float(r["last_activity"]),
                        state, None if r["answer"] is None else str(r["answer"]),
                    )
                )  # fmt: skip
            except (ValueError, TypeError):
                bad.append(str(r["session_id"]))
        for sid in bad:
            self.remove(sid)
        return out, len(bad)

    def _write(self, sql: str, args: tuple[Any, ...], *, durable: bool = False) -> None:
        try:
            with self._db.tx(durable=durable) as c:
                c.execute(sql, args)
        except sqlite3.Error as exc:
            # The error's type only: its text could quote a value.
            raise StorageError(f"conversation store: {type(exc).__name__}") from None


def _dumps(state: dict[str, Any] | None) -> str | None:
    return None if state is None else json.dumps(state, separators=(",", ":"))
