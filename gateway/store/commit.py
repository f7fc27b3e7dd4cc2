"""Rows into transactions: multi-row INSERTs in one transaction per batch, transient
failures (locked, busy, disk I/O, full) retried with backoff, a refused batch retried row by
row so only the bad rows are dead-lettered, and failing episodes reported once each way."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gateway.base.backoff import Backoff
from gateway.base.db import Database
from gateway.store.schema import _PERMANENT, _ROWS_PER_INSERT, Row, _errname, _multi_insert, _padded

log = logging.getLogger("gateway.store")


class BatchCommit:
    """Mixed into Store (gateway/store/writer.py), whose __init__ sets the state below."""

    RETRY_BASE_S: float
    RETRY_MAX_S: float
    STOP_GRACE_S: float
    _db: Database
    _stats: dict[str, int]
    _stopping: threading.Event
    _stop_at: float
    _failing_since: float | None
    on_state: Callable[[bool, str], None] | None

    if TYPE_CHECKING:

        def _settle(self, n: int) -> None: ...
        def _queue_rows_done(self, n: int) -> None: ...
        def _dead_letter(self, rows: list[Row], reason: str) -> None: ...

    def _write(self, rows: list[Row], *, own: bool, durable: bool = False) -> bool:
        """Commit `rows`, retrying transient failures with backoff. Rows the database
        refuses for good are dead-lettered. False only when stopping and the database
        kept failing past STOP_GRACE_S (the caller then keeps the rows on disk)."""
        retry = Backoff(base=self.RETRY_BASE_S, cap=self.RETRY_MAX_S).retry()
        pending = list(rows)
        one_by_one = False
        while True:
            try:
                if one_by_one:
                    self._commit_each(pending, durable=durable)
                else:
                    self._commit(pending, durable=durable)
                break
            except _PERMANENT as exc:
                # Find the bad row(s): commit row by row, dead-lettering those that fail.
                log.warning(
                    "store: batch of %d rows refused (%s); retrying row by row",
                    len(pending),
                    _errname(exc),
                )
                one_by_one = True
            except sqlite3.Error as exc:
                self._stats["errors"] += 1
                self._set_failing(_errname(exc))
                if self._stopping.is_set() and time.monotonic() - self._stop_at > self.STOP_GRACE_S:
                    log.error("store: giving up on a failing database at stop (%s)", _errname(exc))
                    return False
                delay = retry.next()
                log.warning(
                    "store: write of %d rows failed (%s); retry in %.2fs",
                    len(pending),
                    _errname(exc),
                    delay,
                )
                time.sleep(delay)
        if self._failing_since is not None:
            self._set_failing(None)
        if own:
            self._settle(len(rows))
            self._queue_rows_done(len(rows))
        return True

    def _set_failing(self, reason: str | None) -> None:
        """Writer thread: report the start (reason) or the end (None) of a failing episode."""
        if (reason is not None) == (self._failing_since is not None):
            return
        self._failing_since = time.monotonic() if reason is not None else None
        if reason is None:
            log.warning("store: writes succeed again")
        callback = self.on_state
        if callback is not None:
            try:
                callback(reason is None, reason or "")
            except Exception as exc:
                log.error("store: state listener failed (%s)", _errname(exc))

    def _commit(self, rows: list[Row], *, durable: bool = False) -> None:
        by_kind: dict[str, list[tuple[Any, ...]]] = {}
        for kind, params in rows:  # per-table order is kept; one tx makes them atomic
            by_kind.setdefault(kind, []).append(params)
        inserted = 0
        with self._db.tx(durable=durable) as c:
            for kind, params_list in by_kind.items():
                # Many rows per statement, not executemany: that re-takes the GIL for every
                # row (sqlite3 releases it around each step), and with the event loop busy
                # each re-take waits a switch interval: the writer crawled at 4.4k rows/s
                # during an ingest drain against 86k/s alone.
                step = _ROWS_PER_INSERT[kind]
                for i in range(0, len(params_list), step):
                    chunk = params_list[i : i + step]
                    flat = [v for params in chunk for v in params]
                    size = _padded(len(chunk))
                    flat.extend(chunk[-1] * (size - len(chunk)))
                    inserted += c.execute(_multi_insert(kind, size), flat).rowcount
        self._stats["batches"] += 1
        self._stats["written"] += inserted
        self._stats["duplicates"] += len(rows) - inserted

    def _commit_each(self, pending: list[Row], *, durable: bool = False) -> None:
        """Row by row; removes rows from `pending` as they are settled so a transient
        failure midway resumes where it stopped."""
        while pending:
            row = pending[0]
            try:
                self._commit([row], durable=durable)
            except _PERMANENT as exc:
                self._dead_letter([row], _errname(exc))
            pending.pop(0)
