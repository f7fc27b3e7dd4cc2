"""Dead letters: the raw bytes of rejected inbound messages, kept on the hub for debugging.

Written by one worker thread, never on the event loop (a slow SD card must not delay an SOS
behind a flood of malformed vitals). Everything is capped so a single device account cannot
fill the disk:

- one record keeps at most `max_record_bytes` of the payload (the rest is counted, not kept);
- each source (the `health/{person}/{device}` part of the topic) may write at most
  `source_daily_bytes` a day; beyond that its rejects are counted only (`quota`);
- day files roll over at `max_file_bytes`; the directory is pruned oldest-first to
  `max_total_bytes` and `max_files`, and of anything older than `retention_days`;
- the hand-over queue is bounded; a full queue is counted (`queue_full`).

A reject is always counted and announced by the gateway whether or not its bytes are kept:
a dead letter is a debugging aid, the counters are the record.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

_DAY_S = 86400.0


@dataclass(frozen=True, slots=True)
class DeadLetter:
    ts: float
    topic: str
    reason: str
    detail: str
    payload: bytes
    size: int = -1  # the payload's size before put() cut it (-1: not cut)


@dataclass(frozen=True, slots=True)
class DeadLetterLimits:
    max_record_bytes: int = 4096
    source_daily_bytes: int = 1 << 20
    max_file_bytes: int = 8 << 20
    max_total_bytes: int = 64 << 20
    max_files: int = 60
    retention_days: int = 365
    queue_size: int = 1000


def source_of(topic: str) -> str:
    """Whose quota a message counts against: the person (`health/p`). Per person, not per
    device: an account free to invent device ids (the simulator) must not get a fresh quota
    for each one."""
    return "/".join(topic.split("/", 2)[:2])[:200]


class DeadLetterBox:
    """start()/stop() component. `put` never blocks and never raises."""

    def __init__(self, directory: Path, limits: DeadLetterLimits | None = None) -> None:
        self.dir = Path(directory)
        self.limits = limits or DeadLetterLimits()
        self._q: queue.Queue[DeadLetter | None] = queue.Queue(self.limits.queue_size)
        self._thread: threading.Thread | None = None
        self.stats: Counter[str] = Counter()
        # Bytes written per (day, source); reset when the day changes.
        self._day = ""
        self._used: Counter[str] = Counter()
        self._total = 0  # bytes in the directory (writer thread)

    # --- producer (event loop) -------------------------------------------------------------
    def put(self, letter: DeadLetter) -> bool:
        # Cut at once: a slow disk must not let the queue hold 1000 payloads of 1 MiB each.
        cap = self.limits.max_record_bytes
        if len(letter.payload) > cap:
            letter = DeadLetter(
                letter.ts, letter.topic, letter.reason, letter.detail, letter.payload[:cap],
                size=len(letter.payload),
            )  # fmt: skip
        try:
            self._q.put_nowait(letter)
        except queue.Full:
            self.stats["queue_full"] += 1
            return False
        self.stats["queued"] += 1
        return True

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            os.chmod(self.dir, 0o700)  # raw payloads may hold PHI
        self._day = ""  # the writer thread scans today's files (never on the event loop)
        self._thread = threading.Thread(target=self._run, name="deadletter", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        if self._thread is None:
            return
        with contextlib.suppress(queue.Full):
            self._q.put(None, timeout=timeout)
        self._thread.join(timeout)
        self._thread = None

    def revive(self) -> None:
        """The supervisor's restart hook: a new writer thread over the same queue."""
        if self.is_alive():
            return
        self._thread = None
        self.start()

    def is_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything queued so far is written (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        while self._q.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self._q.unfinished_tasks

    # --- writer thread ---------------------------------------------------------------------
    def _run(self) -> None:
        last_prune = 0.0
        try:
            self._total = sum(_size(p) for p in self.files())
            self.prune(time.time())
        except Exception:
            self.stats["errors"] += 1
            log.exception("dead letter scan failed")
        while True:
            item = self._q.get()
            try:
                if item is None:
                    return
                self._write(item)
                now = time.monotonic()
                if now - last_prune > 60:
                    last_prune = now
                    self.prune(time.time())
            except Exception:
                # The thread must outlive any bug: count it, keep going.
                self.stats["errors"] += 1
                log.exception("dead letter write failed")
            finally:
                self._q.task_done()

    def _write(self, d: DeadLetter) -> None:
        lim = self.limits
        day = time.strftime("%Y-%m-%d", time.gmtime(d.ts))
        if day != self._day:
            self._day, self._used = day, self._scan_today(d.ts)
        kept = d.payload[: lim.max_record_bytes]
        size = d.size if d.size >= 0 else len(d.payload)
        record = (
            json.dumps(
                {
                    "ts": d.ts,
                    "topic": d.topic[:300],
                    "reason": d.reason,
                    "detail": d.detail[:300],
                    "bytes": size,
                    "truncated": len(kept) < size,
                    "payload_hex": kept.hex(),
                }
            )
            + "\n"
        ).encode()
        src = source_of(d.topic)
        if self._used[src] + len(record) > lim.source_daily_bytes:
            self.stats["quota"] += 1
            return
        path = self._file_for(day, len(record))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "ab") as fh:
                fh.write(record)
        except OSError as exc:
            self.stats["io_errors"] += 1
            log.error("dead letter not kept (%s)", type(exc).__name__)
            return
        self._used[src] += len(record)
        self.stats["written"] += 1
        self.stats["bytes"] += len(record)
        if size > len(kept):
            self.stats["truncated"] += 1
        # The total cap holds between the minute's prunes too.
        self._total += len(record)
        if self._total > lim.max_total_bytes:
            self.prune(time.time())

    def _file_for(self, day: str, size: int) -> Path:
        """Today's newest part, or the next one once it would pass max_file_bytes. Never an
        earlier part: after a prune the newest records must stay in the newest file."""
        parts = [_part(p) for p in self.dir.glob(f"{day}*.jsonl")]
        part = max(parts, default=0)
        path = self._part_path(day, part)
        if _size(path) and _size(path) + size > self.limits.max_file_bytes:
            path = self._part_path(day, part + 1)
        return path

    def _part_path(self, day: str, part: int) -> Path:
        return self.dir / (f"{day}.jsonl" if part == 0 else f"{day}.{part}.jsonl")

    def _scan_today(self, ts: float) -> Counter[str]:
        """Per-source bytes already written today (a restart must not reset the quota)."""
        used: Counter[str] = Counter()
        day = time.strftime("%Y-%m-%d", time.gmtime(ts))
        for path in self.dir.glob(f"{day}*.jsonl"):
            with contextlib.suppress(OSError), path.open("rb") as fh:
                for line in fh:
                    try:
                        used[source_of(str(json.loads(line).get("topic", "")))] += len(line)
                    except (ValueError, AttributeError):
                        continue
        return used

    def files(self) -> list[Path]:
        """Oldest first (names sort by day, then part)."""

        def key(p: Path) -> tuple[str, int]:
            day, _, rest = p.name.partition(".")
            part = rest.split(".")[0] if rest.count(".") else "0"
            return day, int(part) if part.isdigit() else 0

        return sorted(self.dir.glob("*.jsonl"), key=key)

    def prune(self, now: float) -> int:
        """Delete files past retention, then the oldest until within the count and size caps.
        Today's file is kept last: it may be the only evidence of an ongoing problem."""
        lim = self.limits
        files = self.files()
        cutoff = now - lim.retention_days * _DAY_S
        sizes = {p: _size(p) for p in files}
        removed = 0
        for p in list(files):
            too_old = _mtime(p) < cutoff
            too_many = len(files) > lim.max_files
            too_big = sum(sizes[f] for f in files) > lim.max_total_bytes
            if not (too_old or too_many or too_big) or (len(files) == 1 and not too_old):
                continue
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
            files.remove(p)
            removed += 1
        if removed:
            self.stats["pruned_files"] += removed
        self._total = sum(sizes[f] for f in files)
        return removed


def _part(p: Path) -> int:
    """`2026-01-02.3.jsonl` -> 3; `2026-01-02.jsonl` -> 0."""
    middle = p.name.split(".")[1:-1]
    return int(middle[0]) if middle and middle[0].isdigit() else 0


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except FileNotFoundError:
        return 0


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except FileNotFoundError:
        return 0.0
