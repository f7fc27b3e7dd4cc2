"""The time-series schema: every measurement, tag and field the gateway writes to InfluxDB.

One module, so the writer, the Grafana dashboards' tests and docs/timeseries.md all agree.
Lines are formatted by hand (InfluxDB line protocol): building `Point` objects costs several
times more per point, and this runs for every reading.

Timestamps are nanoseconds derived from the device's own `ts` (ms) plus its `seq` inside the
millisecond, so a replayed point lands on the same key and overwrites itself: replays never
duplicate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from gateway.contract import vitals
from gateway.contract.vitals import FieldKind

DEFAULT_BUCKET = "health"


@dataclass(frozen=True, slots=True)
class Measurement:
    name: str
    tags: tuple[str, ...]
    fields: Mapping[str, FieldKind]
    doc: str


VITALS = Measurement(
    "vitals",
    ("person", "device"),
    {
        **{v.name: v.tsdb for v in vitals.VITALS if v.tsdb is not None},
        # Minutes in each sleep stage since the previous reading (summed per night).
        **{f"sleep_{stage}": "float" for stage in vitals.SLEEP_STAGES},
        # What the monitor made of the reading.
        "news2_total": "int",
        "news2_level": "str",
        # 0 low, 1 low-medium, 2 medium, 3 high: a number Grafana can colour by threshold.
        "news2_level_num": "int",
        "anomaly_score": "float",
        # 1 when the reading was flagged implausible (not learned from, river-style).
        "flagged": "int",
        "open_alerts": "int",
    },
    "One point per accepted reading. Location is deliberately not written.",
)

EVENTS = Measurement(
    "events",
    ("person", "type", "category"),
    {
        "title": "str",  # short text for Grafana annotations; never a measured value
        "severity": "int",  # 0 info, 1 warning, 2 critical
        "count": "int",  # always 1, so sum() counts events
        "event_id": "str",
    },
    "One point per gateway event (alerts, SOS, anomalies, device state, texts, medication).",
)

RANGES = Measurement(
    "ranges",
    ("person", "vital"),
    {"low": "float", "high": "float"},
    "Each person's normal range per vital (after household overrides), written at start and"
    " hourly, for the bands on the person dashboard.",
)

DOSES = Measurement(
    "doses",
    ("person", "medication"),
    {"status": "str", "taken": "int", "dose_id": "str"},
    "One point per answered or missed medication dose (taken=1 for taken, else 0).",
)

GATEWAY = Measurement(
    "gateway",
    ("gateway",),
    {
        "messages_total": "int",
        "readings_total": "int",
        "rejected_total": "int",
        "ingest_rate": "float",  # readings/s over the last interval
        "reject_rate": "float",  # rejects/s over the last interval
        "outbox_points": "int",
        "outbox_bytes": "int",
        "queue_mqtt_in": "int",
        "queue_store": "int",
        "texts_sent": "int",
        "texts_failed": "int",
        "alerts_total": "int",
        # Written once per hard SOS: button press received -> first text handed to the provider.
        "sos_latency_ms": "float",
    },
    "The hub's own health, every HEALTHGW_INFLUX_HEALTH_INTERVAL_S.",
)

MEASUREMENTS: dict[str, Measurement] = {m.name: m for m in (VITALS, EVENTS, RANGES, DOSES, GATEWAY)}

NEWS2_LEVEL_NUM: dict[str, int] = {"low": 0, "low-medium": 1, "medium": 2, "high": 3}


# --- line protocol --------------------------------------------------------------------------
_MEAS_ESC = str.maketrans({",": r"\,", " ": r"\ "})
_TAG_ESC = str.maketrans({",": r"\,", "=": r"\=", " ": r"\ "})


def _tag(v: str) -> str:
    # Line protocol has no empty tag values; newlines would split the line.
    return v.replace("\n", " ").translate(_TAG_ESC) or "_"


def _str_field(v: str) -> str:
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def _field(kind: FieldKind, v: object) -> str | None:
    if v is None:
        return None
    if kind == "float":
        f = float(v)  # type: ignore[arg-type]
        return repr(f) if math.isfinite(f) else None
    if kind == "int":
        return f"{int(v)}i"  # type: ignore[call-overload]
    if kind == "bool":
        return "true" if v else "false"
    return _str_field(str(v))


def ts_ns(ts: float, seq: int | None = None) -> int:
    """Stable nanosecond timestamp: the ms of `ts`, plus `seq` inside that ms."""
    ns = round(ts * 1000) * 1_000_000
    if seq is not None:
        ns += seq % 1_000_000
    return ns


def line(m: Measurement, tags: Mapping[str, str], fields: Mapping[str, object], ns: int) -> str:
    """One line of line protocol; fields not in the schema are a programming error."""
    tag_part = "".join(f",{k}={_tag(tags[k])}" for k in m.tags if k in tags)
    parts = []
    for k, v in fields.items():
        s = _field(m.fields[k], v)
        if s is not None:
            parts.append(f"{k}={s}")
    if not parts:
        raise ValueError(f"a {m.name} point needs at least one field")
    return f"{m.name.translate(_MEAS_ESC)}{tag_part} {','.join(parts)} {ns}"
