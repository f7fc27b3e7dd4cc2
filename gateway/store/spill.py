"""The store's spill files: nothing accepted is lost when the queue is full or the
database fails.

- Queue full (slow disk, locked database): the row is appended to a JSON-lines spill file
  instead. While spilling, new rows keep going to the file, so order is kept; once the queue
  is empty the writer replays the files in order and deletes them.
- Stopping with a database that keeps failing: what is still in memory goes to a rescue file
  for the next start.
- A row the database refuses for good (bad type, constraint) goes to a `rejected-*.jsonl`
  dead-letter file next to the spill files and is counted, never dropped quietly.
- A previous run's files (a crash) are replayed when the writer starts. Replay is
  idempotent (readings are unique on person, device, ts, seq; events and audit rows on their
  id), and the last batch of each file commits with fsync before the file is deleted.

Names are `spill-<gen>.jsonl`; replay order is gen order. Files the producers write get even
gens; a rescue file written at stop takes the odd gen just before the file producers are
spilling to, because its rows are older than that file's and newer than any earlier one.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from gateway.base.errors import StorageError
from gateway.store.latest import LatestCache
from gateway.store.schema import _COLS, _R, _WAKE, Row, _dumps, _errname, _to_row

log = logging.getLogger("gateway.store")

_SPILL_RE = re.compile(r"^spill-(\d{12})\.jsonl$")


def _spill_gen(path: Path) -> int:
    m = _SPILL_RE.match(path.name)
    return int(m.group(1)) if m else 0


class SpillFiles:
    """Mixed into Store (gateway/store/writer.py), whose __init__ sets the state below."""

    _spill_dir: Path
    _batch_size: int
    _q: queue.Queue[tuple[Any, ...]]
    _stats: dict[str, int]
    _latest: LatestCache
    _count_lock: threading.Lock
    _accepted: int
    _queued: int
    # Guarded by _spill_lock. While _spilling, producers append to the current file instead
    # of the queue; the writer clears it when it takes the file.
    _spill_lock: threading.Lock
    _spilling: bool
    _spill_logged_at: float
    _spill_fh: IO[str] | None
    _spill_gen: int  # gen of the open spill file
    _next_gen: int
    _taken: list[Path]  # own files closed for replay (writer thread only)
    _leftover: list[Path]  # a previous run's files, replayed first
    _replay_progress: dict[Path, tuple[int, int]]  # resume points, see _replay

    if TYPE_CHECKING:

        def _write(self, rows: list[Row], *, own: bool, durable: bool = False) -> bool: ...
        def _settle(self, n: int) -> None: ...
        def _convert(self, items: list[tuple[Any, ...]]) -> list[Row]: ...

    def _open_spill_state(self) -> None:
        self._spill_lock = threading.Lock()
        self._spilling = False
        self._spill_logged_at = -1e9
        self._spill_fh = None
        self._spill_gen = 0
        self._taken = []
        self._leftover = self._scan_spill_files()
        last = max((_spill_gen(p) for p in self._leftover), default=0)
        self._next_gen = last + 2 + (last % 2)  # even, and leaves an odd gen free above `last`
        self._replay_progress = {}

    def _spill(self, item: tuple[Any, ...]) -> None:
        kind, params = _to_row(item)
        line = _dumps([kind, dict(zip(_COLS[kind], params, strict=True))]) + "\n"
        with self._spill_lock:
            # Re-check under the lock: the writer may have drained the spill meanwhile.
            if not self._spilling:
                try:
                    self._q.put_nowait(item)
                except queue.Full:
                    self._spilling = True
                    now = time.monotonic()
                    if now - self._spill_logged_at > 60:  # one line a minute under overload
                        self._spill_logged_at = now
                        log.warning(
                            "store: queue full (%d rows), spilling to disk (%d spilled so far)",
                            self._q.maxsize,
                            self._stats["spilled"],
                        )
                else:
                    with self._count_lock:
                        self._accepted += 1
                        self._queued += 1
                    return
            try:
                if self._spill_fh is None:
                    self._spill_gen = self._next_gen
                    self._next_gen += 2
                    path = self._spill_path(self._spill_gen)
                    self._spill_fh = open(path, "a", encoding="utf-8")  # noqa: SIM115
                self._spill_fh.write(line)
                # Flushed (not fsynced): survives a process crash, which is the common case.
                self._spill_fh.flush()
            except OSError as exc:
                self._stats["errors"] += 1
                self._stats["lost"] += 1
                n = self._stats["lost"]
                if not n & (n - 1):  # 1, 2, 4...: a full disk must not flood the log
                    log.error("store: cannot write spill file (%s); %d rows lost so far",
                              _errname(exc), n)  # fmt: skip
                raise StorageError("queue full and spill file not writable") from exc
            self._stats["spilled"] += 1
        with self._count_lock:
            self._accepted += 1

    def _dead_letter(self, rows: list[Row], reason: str) -> None:
        """Keep rows the database will never take in a rejected-*.jsonl file."""
        path = self._spill_dir / f"rejected-{time.time_ns()}.jsonl"
        self._stats["rejected"] += len(rows)
        self._stats["errors"] += len(rows)
        try:
            with open(path, "a", encoding="utf-8") as fh:
                for kind, params in rows:
                    cols = _COLS.get(kind)
                    row = dict(zip(cols, params, strict=True)) if cols else list(params)
                    fh.write(_dumps([kind, row, reason]) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            log.critical(
                "store: %d refused rows (%s) could not be kept (%s) and are lost",
                len(rows),
                reason,
                _errname(exc),
            )
            return
        log.error("store: %d rows refused (%s), kept in %s", len(rows), reason, path.name)

    def _replay_spill(self) -> bool:
        """Take the current spill file (producers go back to the queue, whose new rows are
        newer than everything spilled) and replay all taken files in order."""
        with self._spill_lock:
            if self._spill_fh is not None:
                self._spill_fh.close()
                self._spill_fh = None
                self._taken.append(self._spill_path(self._spill_gen))
            self._spilling = False
        while self._taken:
            if not self._replay(self._taken[0], own=True):
                return False
            self._taken.pop(0)
        return True

    def _replay(self, path: Path, *, own: bool) -> bool:
        """Write one spill file's rows in batches, then delete it. The last batch commits
        durably (fsync), so the rows cannot vanish from both the file and the database on
        power loss. Progress is remembered, so a retry after an error resumes; a crash midway
        replays the file again next start, which the unique keys make harmless."""
        # (lines already written, rows of ours written but not yet reported to flush())
        start, unsettled = self._replay_progress.get(path, (0, 0))
        n = 0
        with open(path, encoding="utf-8") as fh:
            batches = self._read_spill(fh, start, own=own)
            current = next(batches, None)
            while current is not None:
                end, batch = current
                following = next(batches, None)  # look ahead: is this the last batch?
                if not self._write(batch, own=False, durable=following is None):
                    return False
                # Each batch is reported once the next one is in, the last after the
                # unlink, so flush() never returns while a replayed file is still on disk.
                if own:
                    self._settle(unsettled)
                    unsettled = len(batch)
                self._replay_progress[path] = (end, unsettled)
                self._stats["replayed"] += len(batch)
                n += len(batch)
                current = following
        path.unlink()
        self._replay_progress.pop(path, None)
        if own:
            self._settle(unsettled)
        log.info("store: replayed %d spilled rows", n)
        return True

    def _read_spill(self, fh: IO[str], start: int, *, own: bool) -> Iterator[tuple[int, list[Row]]]:
        """(lines consumed, rows) per batch of up to batch_size rows, from line `start`."""
        batch: list[Row] = []
        lineno = start
        for lineno, line in enumerate(fh, 1):
            if lineno <= start:
                continue
            try:
                kind, row = json.loads(line)
                params = tuple(row[c] for c in _COLS[kind])
            except (ValueError, TypeError, KeyError):
                # A torn last line after a crash: keep the raw text, do not guess.
                self._dead_letter([("raw", (line.rstrip("\n"),))], "unreadable spill line")
                if own:  # it was counted as accepted; settle it so flush() returns
                    self._settle(1)
                continue
            if not own and kind == _R:
                self._latest.note_row(params)
            batch.append((kind, params))
            if len(batch) >= self._batch_size:
                yield lineno, batch
                batch = []
        if batch:
            yield lineno, batch

    def _give_up(self, rows: list[Row]) -> None:
        """Stopping with a failing database: keep in-memory rows on disk for next start."""
        with self._spill_lock:
            rows = rows + self._convert(self._drain_queue())
            if not rows:
                return
            try:
                self._write_rescue_locked(rows)
            except OSError as exc:
                self._stats["errors"] += len(rows)
                log.critical(
                    "store: %d rows could not be written anywhere (%s) and are lost",
                    len(rows),
                    _errname(exc),
                )

    def _drain_queue(self) -> list[tuple[Any, ...]]:
        items: list[tuple[Any, ...]] = []
        while True:
            try:
                item = self._q.get_nowait()
            except queue.Empty:
                return items
            if item[0] != _WAKE:
                items.append(item)

    def _write_rescue_locked(self, rows: list[Row]) -> None:
        """Write rows from memory to a spill file that replays after every file older than
        them and before the file producers are spilling to now (caller holds _spill_lock)."""
        gen = self._spill_gen - 1 if self._spill_fh is not None else self._next_gen - 1
        path = self._spill_path(gen)
        with open(path, "a", encoding="utf-8") as fh:
            for kind, params in rows:
                fh.write(_dumps([kind, dict(zip(_COLS[kind], params, strict=True))]) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self._next_gen += 2  # never reuse `gen` for a later rescue
        self._stats["spilled"] += len(rows)
        log.warning("store: %d in-memory rows kept in %s for the next start", len(rows), path.name)

    def _spill_path(self, gen: int) -> Path:
        return self._spill_dir / f"spill-{gen:012d}.jsonl"

    def _scan_spill_files(self) -> list[Path]:
        return sorted(p for p in self._spill_dir.iterdir() if _SPILL_RE.match(p.name))
