"""The text queue's submit side (TextDispatcher.submit): how a text becomes a row and a job.

Two paths, by purpose (text_rows.is_urgent):

- Every text but the SOS ones (medication, family alerts): the row is on disk (fsynced)
  before submit() returns, then the job is queued. Exactly once: a key already in the table
  returns its id and sends nothing; after a crash the row is found and sent, or reconciled
  by its marker if a request may have gone out.
- SOS texts (the hard, end and soft SOS playbooks and the ladder): the job goes to the
  workers first, and the submitting thread (the event loop) writes the row right after,
  while the text is on its way: a WAL commit without an fsync, which a killed process keeps.
  The fsync comes off the loop: the worker records the text's outcome durably (fsyncing the
  row with it), and the run's last journal write fsyncs the same WAL. An fsync on a disk busy
  with readings, spill files and the tsdb outbox can take hundreds of ms
  (bench/fsync_contention.py); no SOS text waits for one.
  The price: after a kill -9 between the send and the row's commit, or a power cut before
  the row reached the disk, the resumed run (or the press the broker redelivers: it is
  acknowledged only when the run ends) submits the text again and it goes out twice. A
  duplicate, never a loss (docs/security.md). Idempotency stays exact within a process: a
  key whose row is being written (an in-memory map) or already in the table (a read, no
  write lock) returns the first id and sends nothing.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import uuid
from collections.abc import Callable

from gateway.base.db import Database
from gateway.notify.text_rows import _Job, _sqlite_code, is_urgent, marker_for, text_with_marker

log = logging.getLogger("gateway.notify.dispatcher")

_INSERT = (
    "INSERT INTO messages (id, key, person, purpose, to_phone, body, marker, state, attempts,"
    " next_attempt_at, created_at, updated_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, 'sending', 0, ?, ?, ?)"
    " ON CONFLICT (key) DO NOTHING RETURNING id"
)


class TextSubmit:
    """TextDispatcher's submit(); the dispatcher provides the state and _enqueue."""

    _db: Database
    _clock: Callable[[], float]
    # Guards the three below (never held by a worker: submit() does one read under it).
    _submit_lock: threading.Lock
    # Urgent texts whose row this process is writing now: key -> id.
    _writing: dict[str, str]
    # Texts whose row the disk refused (full, I/O error): key -> id, so one key is still
    # sent once. They are sent from memory; a crash before they go out loses them.
    _volatile_keys: dict[str, str]
    unjournaled: int

    def _enqueue(self, job: _Job, delay: float) -> None:
        raise NotImplementedError

    def submit(self, *, to: str, body: str, key: str, person: str, purpose: str) -> str:
        if not to or not key:
            raise ValueError("a text needs a recipient and an idempotency key")
        now = self._clock()
        if is_urgent(purpose):
            return self._submit_urgent(to, body, key, person, purpose, now)
        with self._submit_lock:
            known = self._volatile_keys.get(key) or self._writing.get(key)
        if known is not None:
            return known
        journaled = True
        try:
            with self._db.tx() as c:
                msg_id, created = self._insert(c, to, body, key, person, purpose, now)
        except sqlite3.OperationalError as exc:
            # A full or failing disk must not silence a text: send it from memory.
            with self._submit_lock:
                known = self._volatile_keys.get(key)
                if known is not None:
                    return known
                msg_id, created, journaled = uuid.uuid4().hex, True, False
                self._volatile_keys[key] = msg_id
                self.unjournaled += 1
            log.error("text %s: not journaled (%s); sending it from memory", msg_id,
                      _sqlite_code(exc))  # fmt: skip
        if not created:
            return msg_id
        if journaled:
            try:
                self._db.sync()  # on disk before it can be sent: this text goes out once
            except sqlite3.OperationalError as exc:  # committed: a killed process keeps it
                log.error("text %s: row not fsynced (%s)", msg_id, _sqlite_code(exc))
        self._enqueue(self._job(msg_id, to, body, person, purpose, now, journaled), 0.0)
        return msg_id

    def _submit_urgent(
        self, to: str, body: str, key: str, person: str, purpose: str, now: float
    ) -> str:
        with self._submit_lock:
            known = self._volatile_keys.get(key) or self._writing.get(key)
            if known is not None:
                return known
            msg_id, old = self._new_id(key)
            if old is not None:
                return old
            self._writing[key] = msg_id
        job = self._job(msg_id, to, body, person, purpose, now, True)
        job.urgent, job.row_ready = True, threading.Event()
        self._enqueue(job, 0.0)  # a worker may send it while the row is written below
        journaled = False
        try:
            journaled = self._write_row(job, key, body, now)
        finally:
            with self._submit_lock:
                # The row is committed (or never will be) before the key leaves the map:
                # a later submit of the key finds one or the other.
                del self._writing[key]
                if not journaled:
                    self._volatile_keys[key] = msg_id
                    self.unjournaled += 1
            job.journaled = journaled
            job.row_ready.set()
        return msg_id

    def _new_id(self, key: str) -> tuple[str, str | None]:
        """(a new id whose marker is free, None), or (the key's existing id, that id) when
        the key already has a row. One read, no write lock. A disk that cannot be read
        must not stop an SOS text: a new id then (a duplicate is better than silence)."""
        while True:
            msg_id = uuid.uuid4().hex
            marker = marker_for(msg_id)
            if any(marker_for(i) == marker for i in self._writing.values()):
                continue
            try:
                r = (
                    self._db.conn()
                    .execute(
                        "SELECT (SELECT id FROM messages WHERE key = ?) AS old,"
                        " EXISTS (SELECT 1 FROM messages WHERE marker = ?) AS taken",
                        (key, marker),
                    )
                    .fetchone()
                )
            except sqlite3.Error as exc:
                log.error("text queue: key not checked (%s); sending", _sqlite_code(exc))
                return msg_id, None
            if r["old"] is not None:
                return str(r["old"]), str(r["old"])
            if not r["taken"]:
                return msg_id, None

    def _write_row(self, job: _Job, key: str, body: str, now: float) -> bool:
        """The urgent text's row, committed without an fsync (see the module docstring).
        False when the disk refused it: the text is then sent from memory, counted."""
        try:
            with self._db.tx() as c:
                rows = c.execute(
                    _INSERT,
                    (job.id, key, job.person, job.purpose, job.to, body, job.marker,
                     now, now, now),
                ).fetchall()  # fmt: skip
        except sqlite3.Error as exc:  # full or failing disk; a marker taken meanwhile
            log.error("text %s: not journaled (%s); sending it from memory", job.id,
                      _sqlite_code(exc))  # fmt: skip
            return False
        if not rows:  # the key was written meanwhile by a non-SOS submit (a caller's bug)
            log.error("text %s: its key was taken meanwhile; sent from memory", job.id)
            return False
        return True

    @staticmethod
    def _job(
        msg_id: str, to: str, body: str, person: str, purpose: str, now: float, journaled: bool
    ) -> _Job:
        marker = marker_for(msg_id)
        return _Job(msg_id, to, text_with_marker(body, marker), marker, person, purpose, now,
                    0, "sending", reconcile=False, journaled=journaled)  # fmt: skip

    @staticmethod
    def _insert(
        c: sqlite3.Connection, to: str, body: str, key: str, person: str, purpose: str, now: float
    ) -> tuple[str, bool]:
        """(id, True) for a new row; (existing id, False) when the key is already known.
        One statement on the usual path: every extra one is a chance to lose the GIL to a
        worker busy in the SDK, which is what makes submit slow under load."""
        while True:
            msg_id = uuid.uuid4().hex
            try:
                # Inserted as 'sending': the worker can fire the request without another write
                # first, and a crash from here on is reconciled through the marker.
                rows = c.execute(
                    _INSERT,
                    (msg_id, key, person, purpose, to, body, marker_for(msg_id), now, now, now),
                ).fetchall()
            except sqlite3.IntegrityError:
                continue  # the 6-digit marker is taken by an older message: draw another id
            if rows:
                return msg_id, True
            old = c.execute("SELECT id FROM messages WHERE key = ?", (key,)).fetchone()
            return str(old["id"]), False
