"""The durable outgoing-text queue (TextQueue). submit() (gateway/notify/text_submit.py) makes
a text a SQLite row (fsynced before it returns; for an SOS text, written beside the send and
fsynced by the worker when it records the outcome) or, when the disk refuses it, a text sent
from memory, counted; worker threads hand it to the SmsSender, retry transient failures
forever, and after a crash ask the provider (by a marker in the body) whether a half-sent
text went out. Row states: pending, sending (a request may be in flight), sent, failed
(permanent). At-least-once: a text the provider cannot account for is sent again — a
duplicate emergency text is better than a missing one."""

from __future__ import annotations

import heapq
import itertools
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gateway.base.backoff import Backoff
from gateway.base.db import Database
from gateway.base.errors import NotificationError
from gateway.base.ports import SmsSender
from gateway.notify.sms import OutboxSender, mask_phone
from gateway.notify.text_rows import (
    SCHEMA,
    TextRows,
    _Job,
    _sqlite_code,
    is_urgent,
    marker_for,
    text_with_marker,
)
from gateway.notify.text_submit import TextSubmit

log = logging.getLogger(__name__)

__all__ = ["SCHEMA", "TextDispatcher", "marker_for", "text_with_marker"]

EventSink = Callable[[str, Mapping[str, Any]], None]

FAILED_EVENT_AFTER = 3  # attempts before "notification_failed" (permanent=False) is raised
DEFAULT_BACKOFF = Backoff((0.5, 1, 2, 4, 8, 15, 30, 60))
# How long a worker waits for the row of an SOS text it sent before the row was written
# (submit() writes it right after queueing the job; SQLite's busy timeout is 30 s).
ROW_WAIT_S = 30.0


class TextDispatcher(TextSubmit, TextRows):
    def __init__(
        self,
        db: Database,
        sender: SmsSender,
        *,
        workers: int = 4,
        on_event: EventSink | None = None,
        clock: Callable[[], float] = time.time,
        backoff: Backoff | Sequence[float] = DEFAULT_BACKOFF,
    ) -> None:
        if workers < 1 or (not isinstance(backoff, Backoff) and not backoff):
            raise ValueError("need at least one worker and one backoff delay")
        self._db = db
        self._sender = sender
        self._workers = workers
        self._on_event = on_event
        self._clock = clock
        self._backoff = Backoff.of(backoff)  # a text's failures are counted on its row
        # One lock, two conditions: a new text must wake a worker, never a wait_idle() caller.
        self._lock = threading.Lock()
        self._work_ready = threading.Condition(self._lock)
        self._idle = threading.Condition(self._lock)
        self._heap: list[tuple[float, int, _Job]] = []  # (monotonic due time, seq, job)
        self._seq = itertools.count()
        self._known: set[str] = set()  # ids queued or in flight in this process
        self._in_flight = 0
        self._generation = 0  # bumped by stop(): workers of an older generation exit
        self._threads: list[threading.Thread] = []
        # submit()'s own state (gateway/notify/text_submit.py).
        self._submit_lock = threading.Lock()
        self._writing: dict[str, str] = {}
        self._volatile_keys: dict[str, str] = {}
        self.unjournaled = 0
        self.unrecorded = 0  # outcomes (sent, retry) the disk refused to record
        # (A file made before delivery reports gets its column from healthgw/schema.py.)
        db.ensure_schema(SCHEMA)

    @property
    def mode(self) -> str:
        """Where texts go: "twilio", or "offline outbox" when none (SOS ones too) leaves home."""
        return "offline outbox" if self._sender.name == OutboxSender.name else self._sender.name

    # -- lifecycle -------------------------------------------------------------------------
    def alive(self) -> bool:
        """Every worker thread is running (readiness)."""
        with self._lock:
            return bool(self._threads) and all(t.is_alive() for t in self._threads)

    def revive(self) -> int:
        """Replace worker threads that died (the supervisor calls this); a text a dead worker
        held is already back in the queue. Returns how many were replaced."""
        with self._lock:
            if not self._threads:
                return 0  # stopped, or never started: nothing to revive
            gen = self._generation
            dead = [i for i, t in enumerate(self._threads) if not t.is_alive()]
            for i in dead:
                t = threading.Thread(target=self._work, args=(gen,), name=f"sms-{i}", daemon=True)
                self._threads[i] = t
                t.start()
        return len(dead)

    def start(self) -> None:
        """Start the workers and queue every unfinished row (the restart path). Rows left in
        'sending' by a crash are reconciled with sender.was_sent before any resend."""
        with self._lock:
            if self._threads:
                return
            gen = self._generation
        rows = (
            self._db.conn()
            .execute("SELECT * FROM messages WHERE state IN ('pending', 'sending')")
            .fetchall()
        )
        now = self._clock()
        for r in rows:
            job = _Job(
                r["id"],
                r["to_phone"],
                text_with_marker(r["body"], r["marker"]),
                r["marker"],
                r["person"],
                r["purpose"],
                r["created_at"],
                r["attempts"],
                r["state"],
                reconcile=r["state"] == "sending" or bool(r["maybe_sent"]),
                failures=r["attempts"],
                urgent=is_urgent(r["purpose"]),
            )
            self._enqueue(job, max(0.0, r["next_attempt_at"] - now))
        if rows:
            log.info("text queue: %d unfinished text(s) reloaded", len(rows))
        with self._lock:
            self._threads = [
                threading.Thread(target=self._work, args=(gen,), name=f"sms-{i}", daemon=True)
                for i in range(self._workers)
            ]
            for t in self._threads:
                t.start()

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop taking work; in-flight requests finish and record their outcome. Unsent rows
        stay in the DB for the next start(). False if a request outlived `timeout`."""
        with self._lock:
            self._generation += 1
            threads, self._threads = self._threads, []
            self._work_ready.notify_all()
        deadline = time.monotonic() + timeout
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in threads)

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """True once nothing is queued or in flight (a text waiting for a retry is not idle)."""
        with self._lock:
            return self._idle.wait_for(lambda: not self._heap and not self._in_flight, timeout)

    # -- workers ---------------------------------------------------------------------------
    def _enqueue(self, job: _Job, delay: float) -> None:
        with self._lock:
            if job.id in self._known:  # start() and submit() may both see a fresh row
                return
            self._known.add(job.id)
            heapq.heappush(self._heap, (time.monotonic() + delay, next(self._seq), job))
            self._work_ready.notify()

    def _next_job(self, gen: int) -> _Job | None:
        with self._lock:
            while self._generation == gen:
                if self._heap:
                    wait = self._heap[0][0] - time.monotonic()
                    if wait <= 0:
                        job = heapq.heappop(self._heap)[2]
                        self._in_flight += 1
                        if self._heap:
                            self._work_ready.notify()  # more may be due: wake another worker
                        return job
                    self._work_ready.wait(wait)
                else:
                    self._work_ready.wait()
            return None

    def _work(self, gen: int) -> None:
        job: _Job | None = None
        try:
            while (job := self._next_job(gen)) is not None:
                requeue: float | None = None
                try:
                    requeue = self._run(job)
                except Exception as exc:  # e.g. the DB is locked: keep the text, retry
                    log.error("text %s: worker error %s; will retry", job.id, type(exc).__name__)
                    job.reconcile = True  # the send may have happened before the error
                    job.failures += 1
                    requeue = self._delay(job.failures)
                with self._lock:
                    self._in_flight -= 1
                    if requeue is None:
                        self._known.discard(job.id)
                    else:
                        heapq.heappush(
                            self._heap, (time.monotonic() + requeue, next(self._seq), job)
                        )
                    # This worker loops back for the requeued job itself; only idle-waiters care.
                    self._idle.notify_all()
                job = None
        finally:
            if job is not None:  # dying mid-text (a BaseException): hand the text back
                self._orphaned(job)
            self._db.close()  # this thread's connection

    def _orphaned(self, job: _Job) -> None:
        with self._lock:
            self._in_flight -= 1
            job.reconcile = True  # the send may have gone out before the worker died
            heapq.heappush(self._heap, (time.monotonic(), next(self._seq), job))
            self._work_ready.notify()
            self._idle.notify_all()
        log.error("text %s: its worker died; the text is queued again", job.id)

    def _delay(self, failures: int) -> float:
        """The wait after a text's `failures`-th failure (the first one waits the first step)."""
        return self._backoff.delay(failures - 1)

    def _run(self, job: _Job) -> float | None:
        """One attempt. Returns the delay before the next one, or None when the text is done."""
        if job.reconcile:
            try:
                went_out = self._sender.was_sent(job.to, job.marker, job.created_at)
            except NotificationError as exc:
                if exc.transient:  # ask again later rather than risk a blind duplicate
                    # Counted as an attempt: while the provider is down every retry is a
                    # lookup, and notification_failed must still be raised.
                    code = str(getattr(exc, "code", None) or "error")
                    return self._transient(job, code, maybe_sent=True)
                went_out = None
            if went_out:
                self._finish_sent(job, None, reconciled=True)
                return None
            # None (provider cannot tell) resends too: at-least-once for emergency texts.
            log.info("text %s: not found at the provider (%s); sending", job.id, went_out)
        if job.state != "sending":
            self._update(job, state="sending")
            job.state = "sending"
        try:
            provider_id = self._sender.send(job.to, job.text)
        except NotificationError as exc:
            code = str(getattr(exc, "code", None) or "error")
            if not exc.transient:
                self._finish_failed(job, code)
                return None
            return self._transient(job, code, maybe_sent=bool(getattr(exc, "maybe_sent", True)))
        self._finish_sent(job, provider_id, reconciled=False)
        return None

    def _transient(self, job: _Job, code: str, *, maybe_sent: bool) -> float:
        job.attempts += 1
        job.failures += 1
        job.reconcile = maybe_sent
        delay = self._delay(job.failures)
        self._update(
            job,
            durable=job.urgent,
            state="pending",
            attempts=job.attempts,
            next_attempt_at=self._clock() + delay,
            last_error_code=code,
            maybe_sent=int(maybe_sent),
        )
        job.state = "pending"
        log.warning(
            "text %s to %s: attempt %d failed (%s); retry in %.1fs",
            job.id,
            mask_phone(job.to),
            job.attempts,
            code,
            delay,
        )
        if job.attempts == 1:
            self._emit("notification_pending", job, error_code=code)
        if job.attempts == FAILED_EVENT_AFTER:
            self._emit("notification_failed", job, error_code=code, permanent=False)
        return delay

    def _finish_failed(self, job: _Job, code: str) -> None:
        job.attempts += 1
        self._update(job, durable=job.urgent, state="failed", attempts=job.attempts,
                     last_error_code=code, maybe_sent=0)  # fmt: skip
        log.error("text %s to %s: rejected (%s), not retried", job.id, mask_phone(job.to), code)
        self._emit("notification_failed", job, error_code=code, permanent=True)

    def _finish_sent(self, job: _Job, provider_id: str | None, *, reconciled: bool) -> None:
        job.attempts += 1  # a reconciled text counts the attempt that evidently went out
        self._update(job, durable=job.urgent, state="sent", attempts=job.attempts,
                     provider_id=provider_id, maybe_sent=0)  # fmt: skip
        log.info("text %s to %s: sent (attempt %d)", job.id, mask_phone(job.to), job.attempts)
        self._emit(
            "notification_sent",
            job,
            provider_id=provider_id,
            reconciled=reconciled,
            error_code=None,
        )

    def _update(self, job: _Job, *, durable: bool = False, **cols: Any) -> None:
        """Record a text's state. `durable` (an SOS text's outcome): fsynced, on this worker
        thread, which also puts the row submit() committed without an fsync on disk."""
        if job.row_ready is not None and not job.row_ready.wait(ROW_WAIT_S):
            # Not recorded: the row is written later as 'sending' and, after a restart,
            # reconciled by its marker rather than sent again.
            self.unrecorded += 1
            log.error("text %s: its row is not written yet; outcome not recorded", job.id)
            return
        if not job.journaled:
            return
        cols["updated_at"] = self._clock()
        sets = ", ".join(f"{k} = ?" for k in cols)
        try:
            with self._db.tx(durable=durable) as c:
                c.execute(f"UPDATE messages SET {sets} WHERE id = ?", [*cols.values(), job.id])
        except sqlite3.OperationalError as exc:
            # The text's fate is decided: a disk that cannot record it must not make a worker
            # resend a text that went out (after a restart the row is reconciled, not resent).
            self.unrecorded += 1
            log.error("text %s: outcome not recorded (%s)", job.id, _sqlite_code(exc))

    def _emit(self, kind: str, job: _Job, **extra: Any) -> None:
        if self._on_event is None:
            return
        event = {
            "message_id": job.id,
            "person": job.person,
            "purpose": job.purpose,
            "to_masked": mask_phone(job.to),
            "attempts": job.attempts,
            **extra,
        }
        try:
            self._on_event(kind, event)
        except Exception:
            log.exception("on_event handler failed for %s", kind)
