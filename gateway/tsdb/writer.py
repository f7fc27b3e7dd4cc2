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

import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.contract import EventType
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
}


class SinkError(Exception):
    """The time-series server did not take a batch (down, slow, or refused)."""


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
            raise SinkError(f"{type(exc).__name__}{f' {status}' if status else ''}") from None

    def close(self) -> None:
        self._client.close()  # type: ignore[no-untyped-call]


@dataclass(frozen=True, slots=True)
class _ReadingItem:
    reading: Reading
    news2_total: int | None
    news2_level: str | None
    anomaly: float | None
    flagged: bool
    open_alerts: int


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
        self._overflow_window: tuple[float, float] | None = None
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
        try:
            self._q.put_nowait(item)
        except queue.Full:
            # The thread is stuck on a slow server: take the disk instead of dropping.
            line = self._format(item)
            if line is not None:
                self._to_outbox([line], self._item_ts(item))

    # --- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        self._running = True
        self._thread = threading.Thread(target=self._run, name="tsdb-writer", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Flush what is queued (to the server, or to the outbox if it does not answer)."""
        if self._thread is None:
            return
        self._running = False
        self._q.put(_STOP)
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.error("tsdb writer did not stop in %.0fs", timeout)
        self._thread = None
        self.sink.close()

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

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
            "replayed": self.outbox.replayed,
            "failed_batches": self.failed_batches,
            "degraded": self.degraded,
            "last_error": self.last_error,
        }

    # --- writer thread -------------------------------------------------------------------
    def _run(self) -> None:
        stopping = False
        while not stopping:
            items, stopping = self._collect()
            lines = [ln for ln in (self._format(i) for i in items) if ln is not None]
            try:
                self._flush(lines, final=stopping)
            except Exception:
                # Never lose the batch to a bug: park it, keep running.
                log.exception("tsdb flush failed")
                self._to_outbox(lines, self._clock())

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
                self._to_outbox(lines, now)  # keep order behind what is waiting
            elif self._send(lines):
                self.written += len(lines)
            else:
                self._to_outbox(lines, now)
        if not final or self._trouble_since is None:
            self._drain(deadline=time.monotonic() + (self.flush_s if not final else 2.0))
        self._check_health(self._clock())

    def _send(self, lines: Sequence[str]) -> bool:
        try:
            self.sink.write(lines)
        except SinkError as exc:
            self.failed_batches += 1
            self.last_error = str(exc)
            now = self._clock()
            if self._trouble_since is None:
                self._trouble_since = now
                log.warning("time-series server not taking writes (%s); using the outbox", exc)
            self._retry_at = now + self._backoff[min(self._failures, len(self._backoff) - 1)]
            self._failures += 1
            return False
        self._failures = 0
        self._retry_at = 0.0
        return True

    def _drain(self, deadline: float) -> None:
        """Replay the outbox oldest first while the server answers, within the time slot."""
        while not self.outbox.empty() and self._clock() >= self._retry_at:
            batch = self.outbox.head(self.batch_size)
            if batch is None:
                break
            lines, end = batch
            if not self._send(lines):
                return
            self.outbox.commit(end, len(lines))
            self.written += len(lines)
            if time.monotonic() >= deadline and self._q.qsize() > self.batch_size:
                return  # fresh points are piling up: let them join the outbox's tail first
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
        window, self._overflow_window = self._overflow_window, None
        if window is not None and self.backfill is not None:
            # The outbox was full for a while: re-queue that window from the local store.
            try:
                for line in self.backfill(*window):
                    self._put(line)
            except Exception:
                log.exception("tsdb backfill failed")

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

    def _to_outbox(self, lines: list[str], ts: float) -> None:
        if not lines:
            return
        taken = self.outbox.append(lines)
        refused = len(lines) - taken
        if refused:
            self.overflow_points += refused
            lo, hi = self._overflow_window or (ts, ts)
            self._overflow_window = (min(lo, ts - self.flush_s), max(hi, ts))
            log.error("tsdb outbox full: %d points refused (kept in the local store)", refused)

    def _emit(self, kind: EventType, data: dict[str, Any]) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(kind, data)
        except Exception:
            log.exception("tsdb on_event failed")

    # --- formatting (writer thread) --------------------------------------------------------
    @staticmethod
    def _item_ts(item: object) -> float:
        if isinstance(item, _ReadingItem):
            return item.reading.received_at or item.reading.ts
        if isinstance(item, Event):
            return item.ts
        return time.time()

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
    open_alerts: int,
) -> str | None:
    return reading_line(
        _ReadingItem(reading, news2_total, news2_level, anomaly, flagged, open_alerts)
    )


def event_line(event: Event) -> str:
    category, severity, title = _EVENT_META.get(str(event.type), ("other", 0, str(event.type)))
    if str(event.type) == "soft_sos" and event.data.get("high"):
        severity = 2
    return schema.line(
        schema.EVENTS,
        {"person": event.person or "_hub", "type": str(event.type), "category": category},
        {"title": title, "severity": severity, "count": 1, "event_id": event.id},
        schema.ts_ns(event.ts),
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
