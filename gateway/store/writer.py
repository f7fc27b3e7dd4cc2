"""The store's writer: readings, events and audit rows from the event loop to SQLite.

Hot path: `add_reading` / `add_event` / `add_audit` only put a tuple on a bounded queue; one
writer thread turns the queue into transactions of up to `batch_size` rows (multi-row
INSERTs of up to 512 rows each, see schema._padded). Nothing accepted is silently lost: a
full queue spills to disk (gateway/store/spill.py); a failing transaction (locked, disk I/O)
is retried with backoff, forever while running; on stop, after STOP_GRACE_S, what is still
in memory is written to a spill file for the next start; a row the database refuses for
good is dead-lettered. Limit: rows still in the in-memory queue when the process is killed
outright are lost; that is the price of an add_* that never blocks (normally under
flush_interval_s of rows), and why the broker link acknowledges a reading only once its
row is committed (`durable_ticket`, gateway/mqtt/acks.py).

Logs carry counts and SQLite error codes only, never values or names (PHI).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gateway.base.backoff import Backoff
from gateway.base.db import Database
from gateway.contract.values import Event, Reading
from gateway.store import retention
from gateway.store.commit import BatchCommit
from gateway.store.latest import LatestCache
from gateway.store.queries import StoreQueries
from gateway.store.schema import (
    _A,
    _E,
    _R,
    _WAKE,
    _WAKE_ITEM,
    SCHEMA,
    Row,
    _dumps,
    _errname,
    _to_row,
)
from gateway.store.spill import SpillFiles

log = logging.getLogger("gateway.store")


class Store(StoreQueries, SpillFiles, BatchCommit):
    # Backoff for failing transactions; class attributes so tests can shorten them.
    RETRY_BASE_S = 0.05
    RETRY_MAX_S = 2.0
    # How long stop() keeps retrying a failing database before spilling what is in memory.
    STOP_GRACE_S = 10.0
    # Rows per DELETE in prune, so the writer is never locked out for long.
    PRUNE_CHUNK = 5000
    # While a batch fills, how often the writer looks at the queue.
    POLL_S = 0.005

    def __init__(
        self,
        db: Database,
        *,
        spill_dir: Path,
        batch_size: int = 500,
        flush_interval_s: float = 0.5,
        queue_size: int = 50_000,
        retention_days: int = 365,
        on_state: Callable[[bool, str], None] | None = None,
    ) -> None:
        if batch_size < 1 or queue_size < 1 or flush_interval_s <= 0 or retention_days < 1:
            raise ValueError("batch_size, queue_size, flush_interval_s, retention_days > 0")
        self._db = db
        self._spill_dir = Path(spill_dir)
        self._spill_dir.mkdir(parents=True, exist_ok=True)
        self._batch_size = batch_size
        self._flush_interval = flush_interval_s
        self._retention_days = retention_days
        self._q: queue.Queue[tuple[Any, ...]] = queue.Queue(maxsize=queue_size)
        db.ensure_schema(SCHEMA)

        self._open_spill_state()  # gateway/store/spill.py

        # flush(): rows accepted by add_* vs rows of ours the writer has finished with.
        self._count_lock = threading.Lock()
        self._accepted = 0
        self._done = 0
        self._done_cv = threading.Condition()
        # Durability tickets (gateway/mqtt/acks.py): rows put on the queue vs queue rows the
        # writer has finished with. The queue is FIFO and written in order, so done >= a
        # ticket means every row queued before it is committed; spilled rows are on disk
        # before add_* returns and need no ticket.
        self._queued = 0
        self._queue_done = 0
        self._on_commit: Callable[[], None] | None = None
        # Health episodes (writer thread): on_state(False, reason) once when writes start to
        # fail (a full disk, an I/O error), on_state(True, "") once they succeed again.
        self.on_state = on_state
        self._failing_since: float | None = None

        self._latest = LatestCache()

        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._stop_at = 0.0
        self._stats = {
            "written": 0,
            "duplicates": 0,
            "spilled": 0,
            "replayed": 0,
            "rejected": 0,
            "batches": 0,
            "errors": 0,
            "lost": 0,  # rows neither queued nor spilled (memory bound hit, spill refused)
        }

    # --- lifecycle ------------------------------------------------------------------------

    def alive(self) -> bool:
        """The writer thread is running (readiness)."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self._thread is not None or self._stopping.is_set():
            raise RuntimeError("Store.start() may be called once")
        self._latest.seed(self._db)
        self._thread = threading.Thread(target=self._run, name="store-writer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Write everything queued or spilled, then join the writer. If the database keeps
        failing for STOP_GRACE_S, what is still in memory goes to a spill file instead."""
        if self._thread is not None:
            self._stop_at = time.monotonic()
            self._stopping.set()
            self._wake()
            self._thread.join()
        self._stopping.set()
        with self._spill_lock:
            # From now on add_* appends to spill files (replayed by the next Store).
            self._spilling = True
        # Rows still queued: never started, a give-up at stop, or a late add during stop.
        self._give_up([])
        with self._spill_lock:
            if self._spill_fh is not None:
                self._spill_fh.close()
                self._spill_fh = None

    # --- hot path -------------------------------------------------------------------------

    def add_reading(
        self,
        reading: Reading,
        *,
        news2_total: int | None = None,
        news2_level: str | None = None,
        anomaly: float | None = None,
        flags: Sequence[str] = (),
    ) -> None:
        if isinstance(flags, str):
            flags = (flags,)
        now = time.time()
        item = (_R, reading, news2_total, news2_level, anomaly, tuple(flags), now)
        self._submit(item)
        self._latest.note(reading, item, now)

    def add_event(self, event: Event) -> None:
        # Serialised here (events are rare) so a non-JSON payload fails at the caller.
        params = (event.id, str(event.type), event.person, event.ts, _dumps(event.to_payload()))
        self._submit((_E, params))

    def add_audit(self, record: Mapping[str, Any]) -> None:
        latency = record.get("latency_ms")
        params = (
            str(record.get("id") or uuid.uuid4().hex),  # an id makes spill replays idempotent
            float(record.get("ts") or time.time()),
            record.get("actor"),
            record.get("tool"),
            record.get("run_id"),
            _dumps(record.get("args")),
            1 if record.get("ok") else 0,
            _dumps(record.get("result")),
            None if record.get("error") is None else str(record.get("error")),
            None if latency is None else float(latency),
        )
        self._submit((_A, params))

    def _submit(self, item: tuple[Any, ...]) -> None:
        if not self._spilling:
            try:
                self._q.put_nowait(item)
            except queue.Full:
                pass
            else:
                with self._count_lock:
                    self._accepted += 1
                    self._queued += 1
                return
        self._spill(item)

    def flush(self, timeout: float = 10) -> bool:
        """Block until every row added before this call is committed (spilled rows
        included), and a previous run's spill files are replayed. False on timeout, e.g.
        while the database stays locked or before start()."""
        with self._count_lock:
            target = self._accepted
        self._wake()
        with self._done_cv:
            return self._done_cv.wait_for(
                lambda: self._done >= target and not self._leftover, timeout
            )

    # --- durability tickets (gateway.mqtt.acks.Durability) -------------------------------

    def durable_ticket(self) -> int:
        return self._queued

    def is_durable(self, ticket: int) -> bool:
        return self._queue_done >= ticket

    def commit_soon(self) -> None:
        self._wake()

    def on_commit(self, callback: Callable[[], None] | None) -> None:
        self._on_commit = callback

    def _queue_rows_done(self, n: int) -> None:
        """Writer thread: n rows taken from the queue are committed or dead-lettered."""
        with self._count_lock:
            self._queue_done += n
        callback = self._on_commit
        if callback is not None:
            try:
                callback()
            except Exception as exc:  # a listener must never stop the writer
                log.error("store: commit listener failed (%s)", _errname(exc))

    def latest(self) -> dict[tuple[str, str], dict[str, Any]]:
        """The newest reading per (person, device), with `last_seen`."""
        return self._latest.snapshot()

    def prune(self, now: float) -> int:
        """Delete rows older than retention_days (gateway/store/retention.py)."""
        return retention.prune(
            self._db, now, retention_days=self._retention_days, chunk=self.PRUNE_CHUNK
        )

    def stats(self) -> dict[str, int]:
        """queued, written (new rows), spilled, batches (transactions), errors, plus
        duplicates (idempotent no-ops), replayed (rows read back from spill files) and
        rejected (dead-lettered rows)."""
        return {"queued": self._q.qsize(), **self._stats}

    # --- writer thread --------------------------------------------------------------------

    def _wake(self) -> None:
        # The sentinel only ends the writer's wait for a fuller batch; its place in the
        # queue does not matter. A full queue means the writer is not waiting anyway.
        with contextlib.suppress(queue.Full):
            self._q.put_nowait(_WAKE_ITEM)

    def _run(self) -> None:
        try:
            self._loop()
        finally:
            self._db.close()  # this thread's connection

    def _loop(self) -> None:
        carry: list[Row] = []  # a batch that hit an unexpected error: retried, never dropped
        retry = Backoff(base=self.RETRY_BASE_S, cap=self.RETRY_MAX_S).retry()
        while True:
            try:
                while self._leftover:  # a previous run's rows are older than anything queued
                    if not self._replay(self._leftover[0], own=False):
                        self._give_up([])
                        return
                    self._leftover.pop(0)
                    if not self._leftover:
                        self._settle(0)  # wakes flush(), which also waits for these
                rows = carry or self._convert(self._collect())
                carry = rows
                if rows and not self._write(rows, own=True):
                    self._give_up(rows)
                    return
                carry = []
                if self._q.empty() and (self._spilling or self._taken) and not self._replay_spill():
                    self._give_up([])
                    return
                if (
                    self._stopping.is_set()
                    and self._q.empty()
                    and not self._spilling
                    and not self._taken
                ):
                    return
                retry.ok()
            except Exception as exc:  # a bug or an I/O error must not kill the writer
                self._stats["errors"] += 1
                delay = retry.next()
                log.error("store: writer error (%s); retry in %.2fs", _errname(exc), delay)
                if self._stopping.is_set() and time.monotonic() - self._stop_at > self.STOP_GRACE_S:
                    self._give_up(carry)
                    return
                time.sleep(delay)

    def _convert(self, items: list[tuple[Any, ...]]) -> list[Row]:
        rows: list[Row] = []
        bad: list[Row] = []
        for item in items:
            try:
                rows.append(_to_row(item))
            except Exception:  # e.g. a Reading built by hand with a non-mapping sleep
                bad.append(("raw", (repr(item[1:]),)))
        if bad:
            self._dead_letter(bad, "unconvertible row")
            self._settle(len(bad))
            self._queue_rows_done(len(bad))
        return rows

    def _settle(self, n: int) -> None:
        """n of our accepted rows are finished with (committed or dead-lettered)."""
        with self._done_cv:
            self._done += n
            self._done_cv.notify_all()

    def _collect(self) -> list[tuple[Any, ...]]:
        """Up to batch_size items: waits for the first, then for more until batch_size or
        flush_interval_s after the first (sooner when woken by flush/stop or spilling)."""
        stopping = self._stopping.is_set()
        try:
            first = self._q.get(timeout=0.05 if stopping else self._flush_interval)
        except queue.Empty:
            return []
        batch: list[tuple[Any, ...]] = []
        wait_more = not stopping
        if first[0] == _WAKE:
            wait_more = False
        else:
            batch.append(first)
        deadline = time.monotonic() + self._flush_interval
        while len(batch) < self._batch_size:
            try:
                item = self._q.get_nowait()
            except queue.Empty:
                # While spilling nothing new enters the queue: write now, then replay.
                if not wait_more or self._spilling:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                # Poll, not wait: a writer waiting on the queue is woken by every put, and
                # takes the GIL from the event loop once per reading (the ingest profile).
                time.sleep(min(remaining, self.POLL_S))
                continue
            if item[0] == _WAKE:
                wait_more = False
            else:
                batch.append(item)
        return batch
