"""The escalation watcher's prompts as rows in safety.db: each "are you OK?" with its reason,
what no answer becomes, its alerts, its wall-clock deadline and its state. Written (fsync)
before the wearer sees the question, so a restart resumes the countdown."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from gateway.base.db import Database

OnNoAnswer = Literal["none", "contacts", "hard_sos"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS prompts (
    prompt_id    TEXT PRIMARY KEY,
    person       TEXT NOT NULL,
    reason       TEXT NOT NULL,
    on_no_answer TEXT NOT NULL CHECK (on_no_answer IN ('none', 'contacts', 'hard_sos')),
    alert_ids    TEXT NOT NULL,
    device       TEXT,
    summary      TEXT NOT NULL DEFAULT '',
    created_at   REAL NOT NULL,
    deadline     REAL NOT NULL,
    state        TEXT NOT NULL
        CHECK (state IN ('pending', 'escalating', 'answered', 'escalated', 'resolved', 'expired'))
);
CREATE INDEX IF NOT EXISTS prompts_pending ON prompts (state, deadline);
"""


@dataclass(slots=True)
class Prompt:
    prompt_id: str
    person: str
    # alert_unanswered | implausible_unanswered | unconfirmed_unanswered | fall_no_movement
    reason: str
    on_no_answer: OnNoAnswer
    alert_ids: list[str]
    device: str | None
    summary: str
    created_at: float
    deadline: float

    def as_dict(self) -> dict[str, object]:
        return {
            "prompt_id": self.prompt_id,
            "person": self.person,
            "reason": self.reason,
            "on_no_answer": self.on_no_answer,
            "armed": self.on_no_answer != "none",
            "deadline": self.deadline,
        }


class PromptStore:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)

    def unfinished(self) -> list[Prompt]:
        """Pending prompts, and escalations a crash interrupted (due again at once: the SOS
        start and the contacts' texts are idempotent per run; a lost escalation is worse)."""
        rows = (
            self._db.conn()
            .execute("SELECT * FROM prompts WHERE state IN ('pending', 'escalating')")
            .fetchall()
        )
        return [
            Prompt(
                r["prompt_id"], r["person"], r["reason"], r["on_no_answer"],
                list(json.loads(r["alert_ids"])), r["device"], r["summary"],
                float(r["created_at"]), float(r["deadline"]) if r["state"] == "pending" else 0.0,
            )
            for r in rows
        ]  # fmt: skip

    def asked_about(self, alert_id: str) -> bool:
        row = (
            self._db.conn()
            .execute("SELECT 1 FROM prompts WHERE alert_ids LIKE ? LIMIT 1", (f'%"{alert_id}"%',))
            .fetchone()
        )
        return row is not None

    def write(self, p: Prompt, state: str, *, durable: bool = True) -> None:
        with self._db.tx(durable=durable) as c:
            c.execute(
                "INSERT INTO prompts (prompt_id, person, reason, on_no_answer, alert_ids, device,"
                " summary, created_at, deadline, state) VALUES (?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT(prompt_id) DO UPDATE SET state = excluded.state,"
                " alert_ids = excluded.alert_ids, on_no_answer = excluded.on_no_answer,"
                " reason = excluded.reason, deadline = excluded.deadline",
                (p.prompt_id, p.person, p.reason, p.on_no_answer, json.dumps(p.alert_ids),
                 p.device, p.summary, p.created_at, p.deadline, state),
            )  # fmt: skip
