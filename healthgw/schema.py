"""The gateway's SQLite files and their versioned steps: the one place a schema change is
written (gateway/base/migrations.py runs them). Run at every start, before any part opens a file.

healthgw.db: readings, events, trajectories and audit (gateway/store), the assistant's memory
(agents/assistant/memory.py), open assistant conversations (agents/assistant/conversation_store.py),
prescriptions, doses and scheduled jobs (agents/manager).
safety.db: texts (gateway/notify), "are you OK?" prompts (gateway/escalation/prompt_store.py), inbound
webhook replays (gateway/notify/replay.py), the SOS journal and ladder (agents/playbooks)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agents.assistant import conversation_store, memory
from agents.medication import reminders, service
from agents.playbooks import journal, ladder
from agents.scheduling import jobstore
from gateway.base.db import Database
from gateway.base.migrations import Step, has_column, migrate
from gateway.escalation import prompt_store
from gateway.notify import replay, text_rows
from gateway.store import schema as store_schema


def _messages_delivery(c: sqlite3.Connection) -> None:
    # Delivery reports (Twilio status callbacks) came later than the messages table.
    if not has_column(c, "messages", "delivery"):
        c.execute("ALTER TABLE messages ADD COLUMN delivery TEXT")


HEALTHGW_DB: tuple[Step, ...] = (
    Step(
        1,
        "baseline (release of 2026-11-26): store, memory, medication, jobs",
        sql="\n".join(
            (store_schema.SCHEMA, memory.SCHEMA, service.SCHEMA, reminders.SCHEMA, jobstore.SCHEMA)
        ),
    ),
    Step(
        2,
        "conversations: open assistant conversations survive a restart",
        sql=conversation_store.SCHEMA,
    ),
)
SAFETY_DB: tuple[Step, ...] = (
    Step(
        1,
        "baseline (release of 2026-11-26): texts, prompts, webhook replays, SOS journal, ladder",
        sql="\n".join(
            (text_rows.SCHEMA, prompt_store.SCHEMA, replay.SCHEMA, journal.SCHEMA, ladder.SCHEMA)
        ),
    ),
    Step(2, "messages.delivery: Twilio delivery reports", apply=_messages_delivery),
)
FILES: dict[str, tuple[Step, ...]] = {"healthgw.db": HEALTHGW_DB, "safety.db": SAFETY_DB}


def migrate_data_dir(data_dir: Path) -> dict[str, list[str]]:
    """Every file of the data directory to this release's version; the steps applied per file.
    Raises SchemaTooNew (a ConfigError) for a file made by a newer release."""
    applied: dict[str, list[str]] = {}
    for name, steps in FILES.items():
        db = Database(Path(data_dir) / name)
        try:
            applied[name] = migrate(db, steps)
        finally:
            db.close()
    return applied
