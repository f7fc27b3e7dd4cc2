"""The time-series feed's side of the gateway: the store's and the writer's health episodes
announced as events, a refused window backfilled from the local store, and the hub's own
health points and each person's normal ranges."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from gateway.contract.topics import (
    EventType,
)
from gateway.contract.values import Event, Reading
from gateway.runtime.parts import GatewayParts
from gateway.tsdb.lines import gateway_line, make_reading_line, ranges_lines

log = logging.getLogger("gateway.runtime.gateway")

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


class TsdbFeed(GatewayParts):
    """Mixed into Gateway."""

    def _on_store_state(self, ok: bool, reason: str) -> None:
        """From the store's writer thread: a failing disk is announced, and its end."""
        now = time.monotonic()
        if not ok:
            self._store_failing_at = now
            kind, data = EventType.MONITORING_DEGRADED, {"sink": "store", "reason": reason,
                                                         "active": True}  # fmt: skip
        else:
            since = self._store_failing_at or now
            kind = EventType.MONITORING_RECOVERED
            data = {"sink": "store", "degraded_s": round(now - since, 1), "active": False,
                    "lost": self.store.stats().get("lost", 0)}  # fmt: skip
        self._on_tsdb_event(kind, data)

    def _on_tsdb_event(self, kind: EventType, data: dict[str, Any]) -> None:
        """From the writer thread: hub events (person "") go through the bus like any other."""
        ev = Event(kind, "", self.clock.now(), data)
        loop = self._loop
        if loop is not None and not loop.is_closed():
            asyncio.run_coroutine_threadsafe(self.emit(ev), loop)

    def _tsdb_backfill(self, since: float, until: float) -> list[str]:
        """Readings of a window the outbox refused (it was full), from the local store.
        Runs on the tsdb writer thread, so it may wait for the store's own writer: the
        window's newest readings may still be queued there, not yet committed."""
        self.store.flush(timeout=5)
        lines: list[str] = []
        for p in self.household.persons:
            for row in self.store.readings(p.id, since=since, until=until + 0.001, limit=10**7):
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

    async def _tsdb_health(self) -> None:
        """The hub's own health points, and each person's normal ranges (hourly)."""
        assert self.tsdb is not None
        interval = self.settings.influx_health_interval_s
        last: tuple[float, int, int] | None = None
        next_ranges = 0.0
        while True:
            try:
                now = self.clock.now()
                if now >= next_ranges:
                    for p in self.household.persons:
                        for ln in ranges_lines(p.id, self.monitor.normal_ranges(p.id), now):
                            self.tsdb.add_line(ln)
                    next_ranges = now + 3600
                readings = self.counters["readings"]
                rejected = self.counters["rejected"]
                fields: dict[str, object] = {
                    "messages_total": self.counters["received"],
                    "readings_total": readings,
                    "rejected_total": rejected,
                    "outbox_points": self.tsdb.outbox.points,
                    "outbox_bytes": self.tsdb.outbox.size_bytes,
                    "queue_mqtt_in": self.link.inbound_depth(),
                    "queue_store": self.store.stats().get("queue", 0),
                    "texts_sent": self.texts.stats().get("sent", 0),
                    "texts_failed": self.texts.stats().get("failed", 0),
                    "alerts_total": self.counters["event_soft_sos"],
                }
                if last is not None and now > last[0]:
                    dt = now - last[0]
                    fields["ingest_rate"] = (readings - last[1]) / dt
                    fields["reject_rate"] = (rejected - last[2]) / dt
                last = (now, readings, rejected)
                self.tsdb.add_line(gateway_line(self.settings.gateway_id, fields, now))
            except Exception:
                log.exception("tsdb health point failed")
            await asyncio.sleep(interval)
