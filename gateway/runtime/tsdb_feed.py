"""The time-series feed (optional, HEALTHGW_INFLUX_URL): the writer and what it calls back
(its health episodes announced as events, a refused window backfilled from the local store),
and the hub's own health points with each person's normal ranges (`HealthPoints`)."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.base.clock import Clock
from gateway.base.settings import Settings
from gateway.contract.topics import EventType
from gateway.contract.values import Event, Reading
from gateway.household.model import Household
from gateway.monitor.engine import Monitor
from gateway.mqtt.link import MqttLink
from gateway.notify.dispatcher import TextDispatcher
from gateway.store import Store
from gateway.tsdb.lines import gateway_line, make_reading_line, ranges_lines
from gateway.tsdb.outbox import Outbox
from gateway.tsdb.sink import InfluxSink
from gateway.tsdb.writer import TimeSeriesWriter

log = logging.getLogger(__name__)

# Columns of a stored reading that rebuild a Reading (backfill into the time series).
_READING_KEYS = (
    "person",
    "device",
    "ts",
    "seq",
    *(
        f
        for f in Reading.__dataclass_fields__
        if f not in ("person", "device", "ts", "seq", "received_at")
    ),
)


class TsdbFeed:
    """Off the hot path, with a disk outbox. `writer` is None when no InfluxDB is set: the
    feed then does nothing. `emit_from_thread` puts an event on the bus from the writer's
    thread."""

    def __init__(
        self,
        settings: Settings,
        data_dir: Path,
        household: Household,
        store: Store,
        clock: Clock,
        emit_from_thread: Callable[[Event], None],
    ) -> None:
        self._household = household
        self._store = store
        self._clock = clock
        self._emit_from_thread = emit_from_thread
        self.writer: TimeSeriesWriter | None = None
        if settings.influx_url is not None:
            s = settings
            token = s.influx_token.get_secret_value() if s.influx_token else ""
            self.writer = TimeSeriesWriter(
                InfluxSink(str(s.influx_url).rstrip("/"), s.influx_org, s.influx_bucket, token,
                           s.influx_timeout_s),
                Outbox(data_dir / "outbox", int(s.influx_outbox_max_mb * 1024 * 1024)),
                batch_size=s.influx_batch_size,
                flush_s=s.influx_flush_s,
                degraded_after_s=s.influx_degraded_after_s,
                alarm_pct=s.influx_outbox_alarm_pct,
                on_event=self.on_event,
                stop_timeout_s=s.influx_timeout_s + 5,
                backfill=self.backfill,
            )  # fmt: skip

    def on_event(self, kind: EventType, data: dict[str, Any]) -> None:
        """From the writer thread: hub events (person "") go through the bus like any other."""
        self._emit_from_thread(Event(kind, "", self._clock.now(), data))

    def backfill(self, since: float, until: float) -> list[str]:
        """Readings of a window the outbox refused (it was full), from the local store.
        Runs on the tsdb writer thread, so it may wait for the store's own writer: the
        window's newest readings may still be queued there, not yet committed."""
        self._store.flush(timeout=5)
        lines: list[str] = []
        for p in self._household.persons:
            for row in self._store.readings(p.id, since=since, until=until + 0.001, limit=10**7):
                r = Reading(
                    **{k: row[k] for k in _READING_KEYS},
                    received_at=float(row["received_at"]),
                )
                ln = make_reading_line(
                    r,
                    news2_total=row["news2_total"],
                    news2_level=row["news2_level"],
                    anomaly=row["anomaly"],
                    flagged=bool(row["flags"]),
                    open_alerts=None,  # not stored: leave the field InfluxDB already has
                )
                if ln is not None:
                    lines.append(ln)
        return lines


class HealthPoints:
    """The hub's own health points, and each person's normal ranges (hourly), into the time
    series: a supervised task of the running gateway (`run`)."""

    def __init__(
        self,
        writer: TimeSeriesWriter,
        settings: Settings,
        household: Household,
        monitor: Monitor,
        store: Store,
        link: MqttLink,
        texts: TextDispatcher,
        counters: Counter[str],
        clock: Clock,
    ) -> None:
        self.writer = writer
        self._interval_s = settings.influx_health_interval_s
        self._gateway_id = settings.gateway_id
        self._household = household
        self._monitor = monitor
        self._store = store
        self._link = link
        self._texts = texts
        self._counters = counters
        self._clock = clock

    async def run(self) -> None:
        interval = self._interval_s
        last: tuple[float, int, int] | None = None
        next_ranges = 0.0
        while True:
            try:
                now = self._clock.now()
                if now >= next_ranges:
                    for p in self._household.persons:
                        for ln in ranges_lines(p.id, self._monitor.normal_ranges(p.id), now):
                            self.writer.add_line(ln)
                    next_ranges = now + 3600
                readings = self._counters["readings"]
                rejected = self._counters["rejected"]
                fields: dict[str, object] = {
                    "messages_total": self._counters["received"],
                    "readings_total": readings,
                    "rejected_total": rejected,
                    "outbox_points": self.writer.outbox.points,
                    "outbox_bytes": self.writer.outbox.size_bytes,
                    "queue_mqtt_in": self._link.inbound_depth(),
                    "queue_store": self._store.stats().get("queue", 0),
                    "texts_sent": self._texts.stats().get("sent", 0),
                    "texts_failed": self._texts.stats().get("failed", 0),
                    "alerts_total": self._counters["event_soft_sos"],
                }
                if last is not None and now > last[0]:
                    dt = now - last[0]
                    fields["ingest_rate"] = (readings - last[1]) / dt
                    fields["reject_rate"] = (rejected - last[2]) / dt
                last = (now, readings, rejected)
                self.writer.add_line(gateway_line(self._gateway_id, fields, now))
            except Exception:
                log.exception("tsdb health point failed")
            await asyncio.sleep(interval)
