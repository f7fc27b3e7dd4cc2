"""The time-series schema's line formatters: a reading, an event, the hub's health point,
a person's normal ranges and a dose, each as one InfluxDB line-protocol line in the
measurements gateway/tsdb/schema.py defines (the Grafana dashboards read exactly these)."""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from gateway.contract.values import Event, Reading
from gateway.contract.vitals import SLEEP_STAGES, VITALS
from gateway.tsdb import schema

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


@dataclass(frozen=True, slots=True)
class _ReadingItem:
    reading: Reading
    news2_total: int | None
    news2_level: str | None
    anomaly: float | None
    flagged: bool
    open_alerts: int | None  # None: unknown (a backfill), so the field is left as it is


# Reading attributes by line-protocol type, in schema order (validated at the edge: finite).
_R_FLOATS = tuple(v.name for v in VITALS if v.tsdb == "float")
# Every reading attribute with a field of its own, in the order the fast path writes them.
_R_FIELDS = (*_R_FLOATS, *(v.name for v in VITALS if v.tsdb not in (None, "float")))
_SLEEP = tuple((stage, f"sleep_{stage}") for stage in SLEEP_STAGES)


def _line_ts(line: str) -> float:
    return int(line.rsplit(" ", 1)[1]) / 1e9


def line_for(item: object) -> str | None:
    """A queued item as its line (None: nothing to write): ready lines pass through."""
    if isinstance(item, str):
        return item
    if isinstance(item, _ReadingItem):
        return reading_line(item)
    if isinstance(item, Event):
        return event_line(item)
    return None


def reading_line(item: _ReadingItem) -> str | None:
    """The hot formatter (one per reading): specialised rather than schema.line's generic
    loop, a third of the cost; tests/gateway/tsdb/test_schema.py checks the two agree."""
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
    fields: dict[str, object] = {n: getattr(r, n) for n in _R_FIELDS}
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
