"""Line formatting: escaping, types, stable timestamps, and that it parses as InfluxDB does."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.contract.topics import EventType
from gateway.contract.values import Event, Reading
from gateway.tsdb import schema
from gateway.tsdb.lines import (
    _ReadingItem,
    event_line,
    make_reading_line,
    reading_line,
    reading_line_generic,
)


def test_reading_line_has_schema_fields_only() -> None:
    r = Reading(
        "grandma",
        "watch-maria",
        1_790_000_000.123,
        seq=7,
        heart_rate=72.0,
        spo2=95.0,
        steps=10,
        fall_detected=False,
        consciousness="A",
        sleep={"deep": 30.0, "light": 60.0, "rem": 20.0, "awake": 5.0},
        latitude=51.5,
        longitude=-0.12,
    )
    ln = make_reading_line(
        r, news2_total=3, news2_level="low", anomaly=0.25, flagged=False, open_alerts=1
    )
    assert ln is not None
    head, fields, ts = ln.split(" ")
    assert head == "vitals,person=grandma,device=watch-maria"
    assert ts == str(1_790_000_000_123 * 1_000_000 + 7)
    kv = dict(f.split("=", 1) for f in fields.split(","))
    assert kv["heart_rate"] == "72.0" and kv["steps"] == "10i" and kv["fall_detected"] == "false"
    assert kv["consciousness"] == '"A"' and kv["news2_level"] == '"low"'
    assert kv["news2_level_num"] == "0i" and kv["open_alerts"] == "1i"
    assert kv["sleep_deep"] == "30.0"
    assert set(kv) <= set(schema.VITALS.fields)
    # Location is never written to the time series.
    assert "latitude" not in ln and "51.5" not in ln


def test_timestamps_are_stable_and_unique_per_seq() -> None:
    assert schema.ts_ns(1_790_000_000.0004, 1) == schema.ts_ns(1_790_000_000.0004, 1)
    assert schema.ts_ns(1_790_000_000.0, 1) != schema.ts_ns(1_790_000_000.0, 2)


def test_escaping() -> None:
    ln = schema.line(
        schema.EVENTS,
        {"person": "a b,c=d", "type": "t", "category": "c"},
        {"title": 'say "hi"\\ now\nplease', "count": 1},
        5,
    )
    assert (
        ln
        == r'events,person=a\ b\,c\=d,type=t,category=c title="say \"hi\"\\ now please",count=1i 5'
    )


def test_unknown_field_is_a_bug() -> None:
    with pytest.raises(KeyError):
        schema.line(schema.VITALS, {"person": "p"}, {"not_a_field": 1.0}, 1)


def test_non_finite_and_none_fields_are_left_out() -> None:
    ln = schema.line(
        schema.GATEWAY, {"gateway": "hub"}, {"ingest_rate": float("nan"), "readings_total": 3}, 1
    )
    assert ln == "gateway,gateway=hub readings_total=3i 1"
    with pytest.raises(ValueError):
        schema.line(schema.GATEWAY, {"gateway": "hub"}, {"ingest_rate": None}, 1)


def test_event_line_for_hub_and_person_events() -> None:
    ev = Event(EventType.HARD_SOS, "grandma", 1_790_000_000.0, {"run_id": "r"})
    ln = event_line(ev)
    assert ln.startswith("events,person=grandma,type=hard_sos,category=sos ")
    assert "severity=2i" in ln and f'event_id="{ev.id}"' in ln
    hub = event_line(Event(EventType.MONITORING_DEGRADED, "", 1_790_000_000.0, {}))
    assert hub.startswith("events,person=_hub,type=monitoring_degraded,category=system ")


def test_every_measurement_documented() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[3] / "docs" / "timeseries.md").read_text()
    for m in schema.MEASUREMENTS.values():
        assert f"`{m.name}`" in doc, m.name
        for f in (*m.tags, *m.fields):
            assert f"`{f}`" in doc, (m.name, f)


_opt_float = st.none() | st.floats(min_value=0, max_value=10_000, allow_nan=False)


@given(
    hr=_opt_float,
    spo2=_opt_float,
    temp=_opt_float,
    battery=st.none() | st.floats(min_value=0, max_value=100),
    steps=st.none() | st.integers(min_value=0, max_value=100_000),
    o2=st.none() | st.booleans(),
    acvpu=st.none() | st.sampled_from("ACVPU"),
    fall=st.none() | st.booleans(),
    sleep=st.none() | st.fixed_dictionaries({"deep": st.floats(0, 500), "rem": st.floats(0, 500)}),
    level=st.none() | st.sampled_from(["low", "low-medium", "medium", "high"]),
    anomaly=st.none() | st.floats(min_value=0, max_value=1),
    seq=st.none() | st.integers(min_value=0, max_value=2**40),
)
def test_fast_reading_line_matches_the_schema_reference(**kw: Any) -> None:
    r = Reading(
        "p-1",
        "dev_2",
        1_790_000_000.5,
        seq=kw["seq"],
        heart_rate=kw["hr"],
        spo2=kw["spo2"],
        temperature_c=kw["temp"],
        battery=kw["battery"],
        steps=kw["steps"],
        on_supplemental_o2=kw["o2"],
        consciousness=kw["acvpu"],
        fall_detected=kw["fall"],
        sleep=kw["sleep"],
    )
    item = _ReadingItem(r, 3 if kw["level"] else None, kw["level"], kw["anomaly"], False, 2)
    assert reading_line(item) == reading_line_generic(item)
