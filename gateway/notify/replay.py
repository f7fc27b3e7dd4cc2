"""Twilio webhook replay protection: each inbound MessageSid is acted on once.

Twilio's signature covers the URL and the form but no timestamp, so a captured signed "OK"
stays valid forever: replayed during a later SOS it would acknowledge it and stop the ladder.
Every accepted MessageSid is recorded (in safety.db, so a restart does not reopen the door)
and a repeat is refused. Rows older than `keep_s` are pruned on insert; a household receives
a few texts a month, so the window is long: it is also how long a capture stays useless.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from gateway.base.db import Database

KEEP_S = 365 * 86400.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS sms_seen (
    sid      TEXT PRIMARY KEY,
    seen_at  REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS sms_seen_at ON sms_seen (seen_at);
"""


class SeenMessages(Protocol):
    def first_time(self, sid: str) -> bool:
        """Record `sid`; True if it was not seen before (act on it), False for a repeat."""
        ...

    def forget(self, sid: str) -> None:
        """Un-record `sid`: acting on it failed, so Twilio's retry must be accepted."""
        ...


class StoredSeen:
    """The durable record (table `sms_seen` in safety.db)."""

    def __init__(
        self, db: Database, *, keep_s: float = KEEP_S, clock: Callable[[], float] = time.time
    ) -> None:
        self._db = db
        self._keep_s = keep_s
        self._clock = clock
        db.ensure_schema(SCHEMA)

    def first_time(self, sid: str) -> bool:
        now = self._clock()
        # Durable: an ack whose record a power cut lost could be replayed after the reboot.
        with self._db.tx(durable=True) as c:
            c.execute("DELETE FROM sms_seen WHERE seen_at < ?", (now - self._keep_s,))
            cur = c.execute(
                "INSERT OR IGNORE INTO sms_seen (sid, seen_at) VALUES (?, ?)", (sid, now)
            )
        return cur.rowcount == 1

    def forget(self, sid: str) -> None:
        with self._db.tx() as c:
            c.execute("DELETE FROM sms_seen WHERE sid = ?", (sid,))


class MemorySeen:
    """For an app built without safety.db (tests, tools): the same rule for the process's
    lifetime only. The gateway always passes a StoredSeen."""

    def __init__(self, *, keep_s: float = KEEP_S, clock: Callable[[], float] = time.time) -> None:
        self._seen: dict[str, float] = {}
        self._keep_s = keep_s
        self._clock = clock
        self._lock = threading.Lock()

    def first_time(self, sid: str) -> bool:
        now = self._clock()
        with self._lock:
            self._seen = {s: t for s, t in self._seen.items() if t >= now - self._keep_s}
            if sid in self._seen:
                return False
            self._seen[sid] = now
            return True

    def forget(self, sid: str) -> None:
        with self._lock:
            self._seen.pop(sid, None)
