"""Time series to InfluxDB, off the hot path, with store-and-forward.

Hot path (`add_*`): a tuple onto a bounded in-memory queue, nothing else. One writer thread
formats lines (gateway/tsdb/schema.py), batches up to `batch_size`, and flushes at least every
`flush_s`, gzip-compressed.

When the server is down or slow (error, timeout), the batch goes to the disk outbox and every
later batch follows it there, so order is kept; the thread retries the oldest outbox batch
with backoff and replays the outbox in order once the server answers. Timestamps are stable
(device time + seq), so a replay never makes a second point.

After `degraded_after_s` of trouble the writer reports `monitoring_degraded`; when the outbox
has drained it reports `monitoring_recovered`. Past `alarm_pct` of the outbox bound it reports
`outbox_high`. If the outbox is full, points are counted as refused; the readings and events
are still in the local SQLite store, and the gateway re-queues that window from there after
recovery (`backfill`). Nothing accepted is silently dropped.

Logs carry counts and error classes only (no PHI, no token).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from gateway.base.backoff import Backoff
from gateway.contract.topics import EventType
from gateway.contract.values import Event, Reading
from gateway.tsdb.lines import _line_ts, _ReadingItem, line_for
from gateway.tsdb.outbox import Outbox
from gateway.tsdb.refused import RefusedWindow
from gateway.tsdb.sink import Sink, SinkError

log = logging.getLogger(__name__)

EventSink = Callable[[EventType, dict[str, Any]], None]
_STOP = object()


class TimeSeriesWriter:
    def __init__(
        self,
        sink: Sink,
        outbox: Outbox,
        *,
        batch_size: int = 5000,
        flush_s: float = 1.0,
        degraded_after_s: float = 30.0,
        alarm_pct: float = 80.0,
        queue_size: int = 200_000,
        on_event: EventSink | None = None,
        clock: Callable[[], float] = time.time,
        backoff: Backoff | Sequence[float] = (0.5, 1, 2, 5, 10, 15),
        stop_timeout_s: float = 15.0,
        backfill: Callable[[float, float], Iterable[str]] | None = None,
    ) -> None:
        self.sink = sink
        self.outbox = outbox
        self.batch_size = batch_size
        self.flush_s = flush_s
        self.degraded_after_s = degraded_after_s
        self.alarm_ratio = alarm_pct / 100.0
        self._q: queue.Queue[object] = queue.Queue(queue_size)
        self._on_event = on_event
        self._clock = clock
        self._thread: threading.Thread | None = None
        self._running = False
        # Sink health, touched by the writer thread only.
        self._trouble_since: float | None = None
        self._retry = Backoff.of(backoff).retry()  # failed writes in a row
        self._retry_at = 0.0
        self.degraded = False
        self._alarm_on = False
        self.stop_timeout_s = stop_timeout_s
        # Refused readings' time window (outbox full, disk failing), on disk: a restart backfills.
        self._refused = RefusedWindow(outbox.dir / "overflow.json")
        self._put_overflowing = False
        self.rejected_points = 0
        self.disk_errors = 0
        self.backfill = backfill
        self.written = 0
        self.failed_batches = 0
        self.overflow_points = 0
        self.last_error: str | None = None

    # --- hot path ------------------------------------------------------------------------
    def add_reading(
        self,
        reading: Reading,
        *,
        news2_total: int | None,
        news2_level: str | None,
        anomaly: float | None,
        flagged: bool,
        open_alerts: int,
    ) -> None:
        self._put(_ReadingItem(reading, news2_total, news2_level, anomaly, flagged, open_alerts))

    def add_event(self, event: Event) -> None:
        self._put(event)

    def add_line(self, line: str) -> None:
        """A pre-formatted line (gateway health, ranges, doses)."""
        self._put(line)

    def _put(self, item: object) -> None:
        """Never blocks, never raises, never touches the disk (it runs on the event loop and
        on the SMS threads). A full queue means the writer thread is stuck: the point is
        counted, and a reading's time is noted so it is backfilled from the SQLite store."""
        try:
            self._q.put_nowait(item)
            self._put_overflowing = False
        except queue.Full:
            with self._refused.lock:
                self.overflow_points += 1
                if isinstance(item, _ReadingItem):
                    self._refused.note_put(item.reading.ts)
            if not self._put_overflowing:
                self._put_overflowing = True
                log.error("tsdb queue full: points refused (readings kept in the local store)")

    # --- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        self._running = True
        self._thread = threading.Thread(target=self._run, name="tsdb-writer", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Flush what is queued: one try at the server when it is healthy, else the outbox.
        Never blocks on a full queue; waits longer than one write's timeout."""
        if self._thread is None:
            return
        self._running = False
        with contextlib.suppress(queue.Full):
            self._q.put_nowait(_STOP)  # a full queue: the thread sees _running instead
        wait = self.stop_timeout_s if timeout is None else timeout
        self._thread.join(wait)
        if self._thread.is_alive():
            log.error("tsdb writer did not stop in %.0fs", wait)
        else:
            self.sink.close()
        self._thread = None

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def revive(self) -> bool:
        """A new writer thread if the running one died (the supervisor calls this). Points
        still queued are kept; a batch the dead thread held is lost (the store has them)."""
        if not self._running or self.alive():
            return False
        self._thread = threading.Thread(target=self._run, name="tsdb-writer", daemon=True)
        self._thread.start()
        return True

    def queue_depth(self) -> int:
        return self._q.qsize()

    def stats(self) -> dict[str, Any]:
        return {
            "written": self.written,
            "queue": self._q.qsize(),
            "outbox_points": self.outbox.points,
            "outbox_bytes": self.outbox.size_bytes,
            "outbox_max_bytes": self.outbox.max_bytes,
            "outbox_refused": self.overflow_points,
            "rejected_by_server": self.rejected_points,
            "disk_errors": self.disk_errors,
            "replayed": self.outbox.replayed,
            "failed_batches": self.failed_batches,
            "degraded": self.degraded,
            "last_error": self.last_error,
        }

    # --- writer thread -------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            lines: list[str] = []
            final = False
            try:
                items, got_stop = self._collect()
                final = got_stop or not self._running
                lines = [ln for ln in (line_for(i) for i in items) if ln is not None]
                self._flush(lines, final=final)
            except Exception:
                # The thread must outlive any bug: park the batch, keep running.
                log.exception("tsdb flush failed")
                self._to_outbox(lines)
                if not final:
                    time.sleep(0.1)
            if final and self._q.empty():
                return

    def _collect(self) -> tuple[list[object], bool]:
        items: list[object] = []
        deadline = time.monotonic() + self.flush_s
        while len(items) < self.batch_size:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                break
            try:
                item = self._q.get(timeout=timeout)
            except queue.Empty:
                break
            if item is _STOP:
                # Take whatever else is queued, then stop.
                while True:
                    try:
                        rest = self._q.get_nowait()
                    except queue.Empty:
                        return items, True
                    if rest is not _STOP:
                        items.append(rest)
            items.append(item)
        return items, False

    def _flush(self, lines: list[str], *, final: bool) -> None:
        now = self._clock()
        if lines:
            if not self.outbox.empty() or now < self._retry_at:
                self._to_outbox(lines)  # keep order behind what is waiting
            else:
                sent = self._send(lines)
                if sent == "ok":
                    self.written += len(lines)
                elif sent == "failed":
                    self._to_outbox(lines)
        # At stop: no replay (it could take minutes); the outbox waits for the next start.
        if not final:
            self._drain(deadline=time.monotonic() + self.flush_s)
        self._note_refused_on_put()
        self._check_health(self._clock())

    def _send(self, lines: Sequence[str]) -> Literal["ok", "failed", "rejected"]:
        try:
            self.sink.write(lines)
        except SinkError as exc:
            if exc.permanent:
                # Retrying can never work and would block the outbox for good: set the
                # lines aside on disk (for a person to look at) and carry on.
                self._dead_letter(lines, str(exc))
                return "rejected"
            self.failed_batches += 1
            self.last_error = str(exc)
            now = self._clock()
            if self._trouble_since is None:
                self._trouble_since = now
                hint = (
                    " (check HEALTHGW_INFLUX_TOKEN, _ORG and _BUCKET)"
                    if any(c in str(exc) for c in (" 401", " 403", " 404"))
                    else ""
                )
                log.warning("time-series server not taking writes (%s)%s", exc, hint)
            self._retry_at = now + self._retry.next()
            return "failed"
        self._retry.ok()
        self._retry_at = 0.0
        return "ok"

    def _dead_letter(self, lines: Sequence[str], why: str) -> None:
        self.rejected_points += len(lines)
        log.error("time-series server refused %d points for good (%s)", len(lines), why)
        try:
            path = self.outbox.dir / f"rejected-{time.strftime('%Y%m%d')}.lp"
            with open(path, "a", encoding="utf-8") as fh:
                fh.write("\n".join(lines) + "\n")
        except OSError:
            self.disk_errors += 1

    def _drain(self, deadline: float) -> None:
        """Replay the outbox oldest first while the server answers, within the time slot."""
        while not self.outbox.empty() and self._clock() >= self._retry_at:
            batch = self.outbox.head(self.batch_size)
            if batch is None:
                break
            lines, end = batch
            sent = self._send(lines)
            if sent == "failed":
                return
            self.outbox.commit(end, len(lines))
            if sent == "ok":
                self.written += len(lines)
            if time.monotonic() >= deadline:
                return  # let fresh points join the outbox's tail; the next cycle goes on
        if self.outbox.empty() and self._retry_at == 0.0:
            self._recovered()

    def _recovered(self) -> None:
        if self._trouble_since is None:
            return
        down_s = self._clock() - self._trouble_since
        self._trouble_since = None
        log.info(
            "time-series server back; outbox replayed (%d points so far)", self.outbox.replayed
        )
        if self.degraded:
            self.degraded = False
            self._emit(
                EventType.MONITORING_RECOVERED,
                {
                    "sink": "influxdb",
                    "degraded_s": round(down_s, 1),
                    "replayed_points": self.outbox.replayed,
                    "active": False,
                },
            )
        self._backfill()

    def _backfill(self) -> None:
        """Readings refused while the outbox was full: re-queue their window from the store
        (the same keys, so InfluxDB overwrites rather than duplicates)."""
        window = self._refused.window
        if window is None or self.backfill is None or self._q.qsize() > self._q.maxsize // 2:
            return  # (a queue still half full would refuse the backfill again)
        try:
            lines = list(self.backfill(*window))
        except Exception:
            log.exception("tsdb backfill failed")
            return
        self._refused.window = None
        for line in lines:
            self._put(line)
        self._save_refused()

    def _check_health(self, now: float) -> None:
        if (
            not self.degraded
            and self._trouble_since is not None
            and now - self._trouble_since >= self.degraded_after_s
        ):
            self.degraded = True
            log.error("monitoring degraded: time-series writes failing; outbox in use")
            self._emit(
                EventType.MONITORING_DEGRADED,
                {
                    "sink": "influxdb",
                    "since": self._trouble_since,
                    "reason": self.last_error or "unknown",
                    "outbox_points": self.outbox.points,
                    "active": True,
                },
            )
        ratio = self.outbox.fill_ratio()
        if not self._alarm_on and ratio >= self.alarm_ratio:
            self._alarm_on = True
            log.error("tsdb outbox at %.0f%% of its bound", ratio * 100)
            self._emit(
                EventType.OUTBOX_HIGH,
                {
                    "sink": "influxdb",
                    "outbox_bytes": self.outbox.size_bytes,
                    "max_bytes": self.outbox.max_bytes,
                    "fill_pct": round(ratio * 100, 1),
                },
            )
        elif self._alarm_on and ratio < self.alarm_ratio * 0.8:
            self._alarm_on = False  # re-arm once it has clearly fallen back

    def _to_outbox(self, lines: list[str]) -> None:
        """Never raises: a full outbox or a failing disk refuses lines, which are counted and
        whose readings' window is noted for the backfill."""
        if not lines:
            return
        try:
            taken = self.outbox.append(lines)
        except OSError as exc:
            self.disk_errors += 1
            log.error("tsdb outbox write failed (%s)", type(exc).__name__)
            taken = 0
        refused = lines[taken:]
        if refused:
            with self._refused.lock:
                self.overflow_points += len(refused)
            self._refused.widen([_line_ts(ln) for ln in refused if ln.startswith("vitals,")])
            log.error("tsdb outbox full: %d points refused (kept in the local store)", len(refused))

    def _note_refused_on_put(self) -> None:
        self._refused.take_put()
        if self._refused.unsaved():
            self._save_refused()
        if self._refused.window is not None and self._trouble_since is None:
            self._backfill()  # refused on a stuck queue, but the server is fine now

    def _save_refused(self) -> None:
        if not self._refused.save():
            self.disk_errors += 1

    def _emit(self, kind: EventType, data: dict[str, Any]) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(kind, data)
        except Exception:
            log.exception("tsdb on_event failed")
