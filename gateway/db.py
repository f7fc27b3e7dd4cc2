"""The embedded SQLite database (WAL). Each component owns its tables and declares their
schema here through `ensure_schema`; connections are per thread."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class Database:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._schema_lock = threading.Lock()

    def conn(self) -> sqlite3.Connection:
        """This thread's connection (created on first use)."""
        c: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if c is None:
            c = sqlite3.connect(
                self.path, timeout=30, isolation_level=None, check_same_thread=False
            )
            c.row_factory = sqlite3.Row
            c.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode survives a process crash; only power loss may drop the
            # last transactions. The SOS journal asks for FULL on its own writes.
            c.execute("PRAGMA synchronous=NORMAL")
            c.execute("PRAGMA foreign_keys=ON")
            # Pruned PHI is overwritten, not left in free pages for a disk image to find.
            c.execute("PRAGMA secure_delete=ON")
            # Owner-only (SQLite gives the -wal and -shm files the database's mode).
            with contextlib.suppress(OSError):
                if self.path.stat().st_mode & 0o077:
                    os.chmod(self.path, 0o600)
            self._local.conn = c
        return c

    @contextmanager
    def tx(self, *, durable: bool = False) -> Iterator[sqlite3.Connection]:
        """One transaction. `durable` fsyncs the commit (SOS journal, outbox)."""
        c = self.conn()
        if durable:
            c.execute("PRAGMA synchronous=FULL")
        c.execute("BEGIN IMMEDIATE")
        try:
            yield c
        except BaseException:
            c.execute("ROLLBACK")
            raise
        else:
            c.execute("COMMIT")
        finally:
            if durable:
                c.execute("PRAGMA synchronous=NORMAL")

    def ensure_schema(self, sql: str) -> None:
        with self._schema_lock:
            self.conn().executescript(sql)

    def close(self) -> None:
        c: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if c is not None:
            c.close()
            self._local.conn = None
