"""What the daily report's child process reads the database with (agents/manager/
report_process.py): the store's queries on a connection of its own. Here, in the composition
root, because agents/ may not import the store; a module-level function, so the child can
unpickle it."""

from __future__ import annotations

from pathlib import Path

from gateway.base.db import Database
from gateway.store.queries import StoreQueries


class _Reader(StoreQueries):
    def __init__(self, db: Database) -> None:
        self._db = db


def open_readings(db_path: Path) -> StoreQueries:
    return _Reader(Database(db_path))
