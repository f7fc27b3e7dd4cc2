"""The embedded SQLite database (WAL). Each component owns its tables and declares their
schema here through `ensure_schema`; connections are per thread.

Every commit is synchronous=NORMAL: in WAL mode it survives a killed process, and only a
power cut may drop the last transactions. A `durable` transaction is also on disk when it
returns: its commit is followed by `sync()`, an fsync of the WAL made after SQLite's write
lock is released. (synchronous=FULL fsyncs inside the commit, holding the file's write lock,
so every other writer of the file, the event loop's SOS journal among them, would wait for
an fsync that bulk I/O on the same disk can stretch to hundreds of ms: bench/fsync_contention.py.)

SQLite's automatic checkpoint runs inside the commit that fills the WAL, on whichever thread
made it, and fsyncs twice. A file whose commits are made on the event loop (safety.db: the
SOS journal, SOS text rows) asks for `background_checkpoint`: its connections never
checkpoint, and a thread of its own does, every CHECKPOINT_EVERY commits.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gateway.base.files import fsync_dir

log = logging.getLogger(__name__)

# Commits between background checkpoints: SOS runs write ~10 commits and ~50 pages each, so
# the WAL stays near SQLite's own 1,000-page checkpoint size.
CHECKPOINT_EVERY = 200
_CHECKPOINTER_IDLE_S = 60.0  # the checkpoint thread ends after this long without commits


class Database:
    def __init__(self, path: Path | str, *, background_checkpoint: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._schema_lock = threading.Lock()
        # The WAL file (st_dev, st_ino) whose directory entry sync() made durable.
        self._synced_wal: tuple[int, int] | None = None
        self._bg_checkpoint = background_checkpoint
        self._commits = 0
        self._ckpt_lock = threading.Lock()
        self._ckpt_due = threading.Event()
        self._ckpt_thread: threading.Thread | None = None

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
            # last transactions. A durable transaction adds sync() after its commit.
            c.execute("PRAGMA synchronous=NORMAL")
            c.execute("PRAGMA foreign_keys=ON")
            if self._bg_checkpoint:  # never inside a commit here: checkpoint() does it
                c.execute("PRAGMA wal_autocheckpoint=0")
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
        """One transaction. `durable`: also on disk (power cut) when the block exits, by
        `sync()` after the commit. Blocks for an fsync then: never on the event loop's SOS
        path."""
        c = self.conn()
        c.execute("BEGIN IMMEDIATE")
        try:
            yield c
        except BaseException:
            c.execute("ROLLBACK")
            raise
        else:
            c.execute("COMMIT")
        if self._bg_checkpoint:
            self._commits += 1  # (a lost increment under a race only delays a checkpoint)
            if self._commits % CHECKPOINT_EVERY == 0:
                self._kick_checkpoint()
        if durable:
            self.sync()

    def sync(self) -> None:
        """Put every transaction committed to this file so far on disk: fsync the WAL (and,
        the first time a WAL file is seen, its directory entry). Holds no SQLite lock, so
        the file's other writers go on meanwhile. Frames a checkpoint already moved into the
        database file are on disk too: with synchronous=NORMAL SQLite fsyncs the WAL before
        a checkpoint and the database after it, before the WAL is reused. A failing disk
        raises sqlite3.OperationalError, as a failed commit would."""
        flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
        try:
            try:
                fd = os.open(self.path.with_name(self.path.name + "-wal"), flags)
            except FileNotFoundError:  # checkpointed and removed: the frames are in the file
                fd = os.open(self.path, flags)
            try:
                os.fsync(fd)
                st = os.fstat(fd)
            finally:
                os.close(fd)
            ident = (st.st_dev, st.st_ino)
            if ident != self._synced_wal:  # a new WAL file: its name must survive a power cut
                fsync_dir(self.path.parent)
                self._synced_wal = ident
        except OSError as exc:
            raise sqlite3.OperationalError(f"fsync failed ({type(exc).__name__})") from exc

    def checkpoint(self) -> None:
        """Copy the WAL into the database file (PASSIVE: never waits for, nor blocks, a
        reader or a writer), then begin the next WAL here. SQLite fsyncs the WAL before a
        checkpoint, the file after it, and the WAL's header when the WAL restarts, which is
        the next commit after a complete checkpoint: a one-page write here makes it this
        thread's (user_version written back unchanged)."""
        c = self.conn()
        busy, frames, done = c.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        if busy or frames <= 0 or done < frames:
            return
        c.execute("BEGIN IMMEDIATE")
        try:
            version = int(c.execute("PRAGMA user_version").fetchone()[0])
            c.execute(f"PRAGMA user_version = {version}")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        c.execute("COMMIT")

    def _kick_checkpoint(self) -> None:
        with self._ckpt_lock:
            if self._ckpt_thread is None or not self._ckpt_thread.is_alive():
                self._ckpt_thread = threading.Thread(
                    target=self._checkpointer, name=f"checkpoint-{self.path.name}", daemon=True
                )
                self._ckpt_thread.start()
        self._ckpt_due.set()

    def _checkpointer(self) -> None:
        try:
            while self._ckpt_due.wait(_CHECKPOINTER_IDLE_S):
                self._ckpt_due.clear()
                try:
                    self.checkpoint()
                except sqlite3.Error as exc:  # the next kick tries again; the WAL only grows
                    log.error("checkpoint of %s failed (%s)", self.path.name, type(exc).__name__)
        finally:
            with self._ckpt_lock:
                self._ckpt_thread = None
            self.close()

    def ensure_schema(self, sql: str) -> None:
        with self._schema_lock:
            self.conn().executescript(sql)

    def close(self) -> None:
        c: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if c is not None:
            c.close()
            self._local.conn = None
