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
import json
import logging
import math
import queue
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from gateway.contract import EventType
from gateway.errors import HealthGWError
from gateway.model import Event, Reading
from gateway.tsdb import schema
from gateway.tsdb.outbox import Outbox

log = logging.getLogger(__name__)

# Event type -> (category, severity, title). Titles name what happened, never a value.
_EVENT_META: dict[str, tuple[str, int, str]] = {
    "hard_sos": ("sos", 2, "SOS"),
    "sos_end": ("sos", 0, "SOS ended"),
    "sos_escalated": ("sos", 2, "SOS escalated"),
    "sos_acknowledged": ("sos", 0, "SOS acknowledged"),
    "sos_unacknowledged": ("sos", 2, "SOS not acknowledged"),
    "soft_sos": ("alert", 1, "Alert"),
    "alert_updated": ("alert", 1, "Alert worse"),
    "alert_cleared": ("alert", 0, "Alert cleared"),
    "alert_escalated": ("alert", 2, "No answer: family texted"),
    "retrospective_alert": ("alert", 0, "Alert in synced data"),
    "device_clock_skew": ("device", 1, "Device clock wrong"),
    "implausible_reading": ("anomaly", 0, "Implausible reading"),
    "fall_detected": ("sos", 2, "Fall detected"),
    "device_stale": ("device", 1, "Device silent"),
    "device_recovered": ("device", 0, "Device back"),
    "device_not_worn": ("device", 1, "Device not worn"),
    "device_offline": ("device", 1, "Device offline"),
    "device_online": ("device", 0, "Device online"),
    "battery_low": ("device", 1, "Battery low"),
    "medication_missed": ("medication", 1, "Dose missed"),
    "medication_warning": ("medication", 2, "Medication warning"),
    "prompt_answered": ("alert", 0, "Prompt answered"),
    "notification_sent": ("notification", 0, "Text sent"),
    "notification_pending": ("notification", 1, "Text retrying"),
    "notification_failed": ("notification", 2, "Text failed"),
    "appointment_booked": ("care", 0, "Appointment booked"),
    "report_ready": ("care", 0, "Daily report"),
    "monitoring_degraded": ("system", 1, "Monitoring degraded"),
    "monitoring_recovered": ("system", 0, "Monitoring recovered"),
    "outbox_high": ("system", 1, "Outbox filling"),
    "component_failed": ("system", 2, "Hub component failed"),
    "component_restarted": ("system", 0, "Hub component restarted"),
}


class SinkError(HealthGWError):
    """The time-series server did not take a batch (down, slow, or refused).

    `permanent`: the server refused the lines themselves (400 bad line protocol, 413 too
    large, 422 e.g. a field type conflict); sending them again can never work."""

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


_PERMANENT_STATUS = frozenset({400, 413, 422})


class Sink(Protocol):
    def write(self, lines: Sequence[str]) -> None: ...

    def close(self) -> None: ...


class InfluxSink:
    """influxdb-client's synchronous write API, gzip, no client-side retries (ours are)."""

    def __init__(self, url: str, org: str, bucket: str, token: str, timeout_s: float) -> None:
        from influxdb_client.client.influxdb_client import InfluxDBClient
        from influxdb_client.client.write_api import SYNCHRONOUS
        from influxdb_client.domain.write_precision import WritePrecision

        self._client = InfluxDBClient(
            url=url,
            token=token,
            org=org,
            enable_gzip=True,
            timeout=int(timeout_s * 1000),
            retries=False,
        )
        self._api = self._client.write_api(write_options=SYNCHRONOUS)
        self._org, self._bucket = org, bucket
        self._precision: Any = WritePrecision.NS  # a str constant; the stub says an enum

    def write(self, lines: Sequence[str]) -> None:
        try:
            self._api.write(
                bucket=self._bucket,
                org=self._org,
                record="\n".join(lines),
                write_precision=self._precision,
            )
        except Exception as exc:  # urllib3 / ApiException / timeouts: all mean "not taken"
            status = getattr(exc, "status", None)
            raise SinkError(
                f"{type(exc).__name__}{f' {status}' if status else ''}",
                permanent=status in _PERMANENT_STATUS,
            ) from None

    def close(self) -> None:
        self._client.close()  # type: ignore[no-untyped-call]


@dataclass(frozen=True, slots=True)
class _ReadingItem:
    reading: Reading
    news2_total: int | None
    news2_level: str | None
    anomaly: float | None
    flagged: bool
    open_alerts: int | None  # None: unknown (a backfill), so the field is left as it is


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
        backoff: Sequence[float] = (0.5, 1, 2, 5, 10, 15),
        stop_timeout_s: float = 15.0,
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
        self._backoff = tuple(backoff)
        self._thread: threading.Thread | None = None
        self._running = False
        # Sink health, touched by the writer thread only.
        self._trouble_since: float | None = None
        self._failures = 0
        self._retry_at = 0.0
        self.degraded = False
        self._alarm_on = False
        self.stop_timeout_s = stop_timeout_s
        # Readings refused while the outbox was full or the disk failing: their time window
        # (device time), kept on disk so a restart still backfills it from the store.
        self._overflow_path = outbox.dir / "overflow.json"
        self._overflow_window: tuple[float, float] | None = self._load_overflow()
        self._overflow_saved = self._overflow_window
        self._refused_lock = threading.Lock()
        self._refused_on_put: list[float] = []  # reading ts of points refused on the caller
        self._put_overflowing = False
        self.rejected_points = 0
        self.disk_errors = 0
        self.backfill: Callable[[float, float], Iterable[str]] | None = None
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
            with self._refused_lock:
                self.overflow_points += 1
                if isinstance(item, _ReadingItem):
                    self._refused_on_put.append(item.reading.ts)
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
                lines = [ln for ln in (self._format(i) for i in items) if ln is not None]
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
            self._retry_at = now + self._backoff[min(self._failures, len(self._backoff) - 1)]
            self._failures += 1
            return "failed"
        self._failures = 0
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
        window = self._overflow_window
        if window is None or self.backfill is None or self._q.qsize() > self._q.maxsize // 2:
            return  # (a queue still half full would refuse the backfill again)
        try:
            lines = list(self.backfill(*window))
        except Exception:
            log.exception("tsdb backfill failed")
            return
        self._overflow_window = None
        for line in lines:
            self._put(line)
        self._save_overflow()

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
            with self._refused_lock:
                self.overflow_points += len(refused)
            self._widen_window([_line_ts(ln) for ln in refused if ln.startswith("vitals,")])
            log.error("tsdb outbox full: %d points refused (kept in the local store)", len(refused))

    def _note_refused_on_put(self) -> None:
        with self._refused_lock:
            ts, self._refused_on_put = self._refused_on_put, []
        self._widen_window(ts)
        if self._overflow_window != self._overflow_saved:
            self._save_overflow()
        if self._overflow_window is not None and self._trouble_since is None:
            self._backfill()  # refused on a stuck queue, but the server is fine now

    def _widen_window(self, ts: list[float]) -> None:
        if not ts:
            return
        lo, hi = min(ts), max(ts)
        if self._overflow_window is not None:
            lo, hi = min(lo, self._overflow_window[0]), max(hi, self._overflow_window[1])
        self._overflow_window = (lo, hi)

    def _load_overflow(self) -> tuple[float, float] | None:
        try:
            lo, hi = json.loads(self._overflow_path.read_text())
            return (float(lo), float(hi))
        except (OSError, ValueError, TypeError):
            return None

    def _save_overflow(self) -> None:
        try:
            if self._overflow_window is None:
                self._overflow_path.unlink(missing_ok=True)
            else:
                self._overflow_path.write_text(json.dumps(list(self._overflow_window)))
            self._overflow_saved = self._overflow_window
        except OSError:
            self.disk_errors += 1

    def _emit(self, kind: EventType, data: dict[str, Any]) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(kind, data)
        except Exception:
            log.exception("tsdb on_event failed")

    # --- formatting (writer thread) --------------------------------------------------------
    @staticmethod
    def _format(item: object) -> str | None:
        if isinstance(item, str):
            return item
        if isinstance(item, _ReadingItem):
            return reading_line(item)
        if isinstance(item, Event):
            return event_line(item)
        return None


# Reading attributes by line-protocol type, in schema order (validated at the edge: finite).
_R_FLOATS = (
    "heart_rate",
    "spo2",
    "systolic_bp",
    "diastolic_bp",
    "temperature_c",
    "respiratory_rate",
    "battery",
)
_SLEEP = (
    ("deep", "sleep_deep"),
    ("light", "sleep_light"),
    ("rem", "sleep_rem"),
    ("awake", "sleep_awake"),
)


def _line_ts(line: str) -> float:
    return int(line.rsplit(" ", 1)[1]) / 1e9


def reading_line(item: _ReadingItem) -> str | None:
    """The hot formatter (one per reading): specialised rather than schema.line's generic
    loop, a third of the cost; tests/tsdb/test_schema.py checks the two agree."""
    r = item.reading
    parts = [f"{n}={float(v)!r}" for n in _R_FLOATS if (v := getattr(r, n)) is not None]
    if r.steps is not None:
        parts.append(f"steps={int(r.steps)}i")
    if r.on_supplemental_o2 is not None:
        parts.append(f"on_supplemental_o2={'true' if r.on_supplemental_o2 else 'false'}")
    if r.consciousness is not None:
        parts.append(f'consciousness="{r.consciousness}"')  # one of A C V P U
    if r.fall_detected is not None:
        parts.append(f"fall_detected={'true' if r.fall_detected else 'false'}")
    if r.sleep:
        for stage, name in _SLEEP:
            v = r.sleep.get(stage)
            if v is not None:
                parts.append(f"{name}={float(v)!r}")
    if item.news2_total is not None:
        parts.append(f"news2_total={int(item.news2_total)}i")
    if item.news2_level is not None:
        lvl = item.news2_level
        parts.append(f'news2_level="{lvl}"')
        num = schema.NEWS2_LEVEL_NUM.get(lvl)
        if num is not None:
            parts.append(f"news2_level_num={num}i")
    if item.anomaly is not None and math.isfinite(item.anomaly):
        parts.append(f"anomaly_score={float(item.anomaly)!r}")
    parts.append(f"flagged={1 if item.flagged else 0}i")
    if item.open_alerts is not None:
        parts.append(f"open_alerts={int(item.open_alerts)}i")
    # person/device match the contract's id pattern: nothing to escape.
    return (
        f"vitals,person={r.person},device={r.device} {','.join(parts)} {schema.ts_ns(r.ts, r.seq)}"
    )


def reading_line_generic(item: _ReadingItem) -> str | None:
    """The same line through schema.line (the reference the fast path is tested against)."""
    r = item.reading
    fields: dict[str, object] = {
        "heart_rate": r.heart_rate,
        "spo2": r.spo2,
        "systolic_bp": r.systolic_bp,
        "diastolic_bp": r.diastolic_bp,
        "temperature_c": r.temperature_c,
        "respiratory_rate": r.respiratory_rate,
        "battery": r.battery,
        "steps": r.steps,
        "on_supplemental_o2": r.on_supplemental_o2,
        "consciousness": r.consciousness,
        "fall_detected": r.fall_detected,
    }
    if r.sleep:
        for stage, name in _SLEEP:
            fields[name] = r.sleep.get(stage)
    fields |= {
        "news2_total": item.news2_total,
        "news2_level": item.news2_level,
        "news2_level_num": schema.NEWS2_LEVEL_NUM.get(item.news2_level or ""),
        "anomaly_score": item.anomaly,
        "flagged": 1 if item.flagged else 0,
        "open_alerts": item.open_alerts,
    }
    return schema.line(
        schema.VITALS,
        {"person": r.person, "device": r.device},
        fields,
        schema.ts_ns(r.ts, r.seq),
    )


def make_reading_line(
    reading: Reading,
    *,
    news2_total: int | None,
    news2_level: str | None,
    anomaly: float | None,
    flagged: bool,
    open_alerts: int | None,
) -> str | None:
    return reading_line(
        _ReadingItem(reading, news2_total, news2_level, anomaly, flagged, open_alerts)
    )


def event_line(event: Event) -> str:
    category, severity, title = _EVENT_META.get(str(event.type), ("other", 0, str(event.type)))
    if str(event.type) in ("soft_sos", "alert_updated") and event.data.get("high"):
        severity = 2
    return schema.line(
        schema.EVENTS,
        {"person": event.person or "_hub", "type": str(event.type), "category": category},
        {"title": title, "severity": severity, "count": 1, "event_id": event.id},
        # Sub-millisecond offset from the event's id: two events of one type for one person in
        # the same ms (two devices going stale on one tick) stay two points; a replay of the
        # same event keeps its key.
        schema.ts_ns(event.ts) + zlib.crc32(event.id.encode()) % 1_000_000,
    )


def gateway_line(gateway_id: str, fields: Mapping[str, object], ts: float) -> str:
    return schema.line(schema.GATEWAY, {"gateway": gateway_id}, fields, schema.ts_ns(ts))


def ranges_lines(person: str, ranges: Mapping[str, tuple[float, float]], ts: float) -> list[str]:
    ns = schema.ts_ns(ts)
    return [
        schema.line(schema.RANGES, {"person": person, "vital": v}, {"low": lo, "high": hi}, ns)
        for v, (lo, hi) in ranges.items()
    ]


def dose_line(person: str, medication: str, status: str, dose_id: str, ts: float) -> str:
    return schema.line(
        schema.DOSES,
        {"person": person, "medication": medication},
        {"status": status, "taken": 1 if status == "taken" else 0, "dose_id": dose_id},
        schema.ts_ns(ts),
    )
