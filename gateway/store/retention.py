"""Retention: the store's old rows deleted in short chunks, so the writer thread is never
locked out for long (the daily job in gateway/base/retention.py calls Store.prune)."""

from __future__ import annotations

import logging
from typing import Any

from gateway.base.db import Database
from gateway.store.queries import distinct
from gateway.store.schema import _DAY_S

log = logging.getLogger("gateway.store")


def prune(db: Database, now: float, *, retention_days: int, chunk: int) -> int:
    """Delete readings, events and audit rows older than retention_days, `chunk` rows per
    DELETE, each its own short transaction."""
    cutoff = now - retention_days * _DAY_S
    deleted = 0
    for person in distinct(db, "person"):
        deleted += _delete_chunks(
            db,
            "DELETE FROM readings WHERE id IN"
            " (SELECT id FROM readings WHERE person = ? AND ts < ? LIMIT ?)",
            (person, cutoff),
            chunk,
        )
    for table in ("events", "audit"):
        deleted += _delete_chunks(
            db,
            f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} WHERE ts < ? LIMIT ?)",
            (cutoff,),
            chunk,
        )
    if deleted:
        log.info("store: pruned %d rows older than %d days", deleted, retention_days)
    return deleted


def _delete_chunks(db: Database, sql: str, args: tuple[Any, ...], chunk: int) -> int:
    total = 0
    while True:
        with db.tx() as c:
            n = c.execute(sql, (*args, chunk)).rowcount
        total += n
        if n < chunk:
            return total
