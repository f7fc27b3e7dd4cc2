"""The time window of readings whose points the time series refused (the writer's queue or
its disk outbox was full). Kept in a small file, so a restart still backfills the window from
the local SQLite store once the server takes points again (gateway/tsdb/writer.py)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from gateway.base.files import fsync_dir, write_durable


class RefusedWindow:
    def __init__(self, path: Path) -> None:
        self._path = path
        self.window: tuple[float, float] | None = self._load()
        self._saved = self.window
        # Points refused on the caller's thread (the event loop, the SMS threads): counted
        # and their reading times noted under the lock, folded in by the writer thread.
        self.lock = threading.Lock()
        self._on_put: list[float] = []

    def note_put(self, ts: float) -> None:
        """Caller holds `lock`."""
        self._on_put.append(ts)

    def take_put(self) -> None:
        """Writer thread: fold the times refused on put into the window."""
        with self.lock:
            ts, self._on_put = self._on_put, []
        self.widen(ts)

    def widen(self, ts: list[float]) -> None:
        if not ts:
            return
        lo, hi = min(ts), max(ts)
        if self.window is not None:
            lo, hi = min(lo, self.window[0]), max(hi, self.window[1])
        self.window = (lo, hi)

    def unsaved(self) -> bool:
        return self.window != self._saved

    def save(self) -> bool:
        """False when the disk refused (the caller counts it)."""
        try:
            if self.window is None:
                self._path.unlink(missing_ok=True)
                fsync_dir(self._path.parent)  # else a power cut brings the old window back
            else:
                # Durable: a file torn by a crash would forget the window to backfill.
                write_durable(self._path, json.dumps(list(self.window)))
        except OSError:
            return False
        self._saved = self.window
        return True

    def _load(self) -> tuple[float, float] | None:
        try:
            lo, hi = json.loads(self._path.read_text())
            return (float(lo), float(hi))
        except (OSError, ValueError, TypeError):
            return None
