from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.base.clock import ManualClock
from gateway.contract.topics import VITAL_FIELDS, VitalsPayload, format_ts, vitals_topic
from gateway.contract.values import Reading
from gateway.edge.validate import Deduper, EdgeValidator, Rejection, SosIn, StatusIn, WatchAck
from gateway.household.model import load_household

ROOT = Path(__file__).resolve().parents[3]
HH = load_household(ROOT / "examples" / "household.yaml")
CLOCK = ManualClock(1_790_000_000.0)
V = EdgeValidator(HH, CLOCK, max_age_s=365 * 86400)
TOPIC = vitals_topic("grandma", "watch-maria")


def body(**kw: object) -> bytes:
    return json.dumps({"ts": CLOCK.now(), **kw}).encode()


def test_valid_reading_becomes_typed_reading() -> None:
    r = V.validate(
        TOPIC, body(seq=7, heart_rate=72, spo2=97, location={"latitude": 1, "longitude": 2})
    )
    assert isinstance(r, Reading)
    assert (r.person, r.device, r.seq, r.heart_rate, r.spo2) == (
        "grandma",
        "watch-maria",
        7,
        72,
        97,
    )
    assert (r.latitude, r.longitude) == (1, 2)


def test_rfc3339_and_epoch_ts_agree() -> None:
    a = V.validate(TOPIC, json.dumps({"ts": format_ts(CLOCK.now()), "heart_rate": 70}).encode())
    b = V.validate(TOPIC, body(heart_rate=70))
    assert isinstance(a, Reading) and isinstance(b, Reading)
    assert a.ts == pytest.approx(b.ts, abs=1e-3)


@pytest.mark.parametrize(
    ("topic", "payload", "reason"),
    [
        (TOPIC, b"\xff\xfe\x00garbage", "not_utf8"),
        (TOPIC, b"{not json", "not_json"),
        (TOPIC, b"[1, 2]", "not_object"),
        (TOPIC, b'{"ts": 1790000000, "heart_rate": NaN}', "non_finite"),
        (TOPIC, b'{"ts": 1790000000, "heart_rate": Infinity}', "non_finite"),
        (TOPIC, b'{"ts": 1790000000, "heart_rate": 1e999}', "non_finite"),
        (TOPIC, b'{"ts": 1790000000, "heart_rate": "fast"}', "schema"),
        (TOPIC, b'{"ts": 1790000000, "heartrate": 70}', "schema"),
        (TOPIC, b'{"ts": 1790000000}', "schema"),
        (TOPIC, b'{"heart_rate": 70}', "schema"),
        (TOPIC, b'{"ts": "yesterday", "heart_rate": 70}', "schema"),
        (TOPIC, b'{"ts": "2026-01-01T10:00:00", "heart_rate": 70}', "schema"),
        (TOPIC, b'{"ts": 1790000000, "heart_rate": -5}', "schema"),
        (TOPIC, b'{"ts": 1790000000, "consciousness": "X"}', "schema"),
        (TOPIC, b'{"ts": 1790000000, "steps": 1.5}', "schema"),
        (TOPIC, b'{"ts": 1790009999, "heart_rate": 70}', "ts_in_future"),
        (TOPIC, b"{" + b'"a":' * 10 + b"1" + b"}" * 10, "not_json"),
        (
            TOPIC,
            b'{"ts": 1790000000, "heart_rate": 70, "pad": "' + b"x" * 20000 + b'"}',
            "oversized",
        ),
        (vitals_topic("grandma", "stolen-watch"), body(heart_rate=70), "unknown_device"),
        (vitals_topic("nobody", "watch-maria"), body(heart_rate=70), "unknown_device"),
        ("health/grandma/watch-maria/firmware", b"{}", "unknown_topic"),
        ("health/grandma/notify", b"{}", "unknown_topic"),
        ("health/grandma/watch-maria/status", b"maybe", "schema"),
        ("health/grandma/watch-maria/sos", b'{"action": "panic", "ts": 1790000000}', "schema"),
    ],
)
def test_rejections_have_reasons(topic: str, payload: bytes, reason: str) -> None:
    r = V.validate(topic, payload)
    assert isinstance(r, Rejection), r
    assert r.reason == reason
    assert r.detail


def test_rejection_detail_never_echoes_values() -> None:
    r = V.validate(TOPIC, b'{"ts": 1790000000, "heart_rate": "SECRET-VALUE-123"}')
    assert isinstance(r, Rejection)
    assert "SECRET" not in r.detail and "heart_rate" in r.detail


def test_sos_ack_status() -> None:
    s = V.validate("health/grandma/watch-maria/sos", body(action="start"))
    assert isinstance(s, SosIn) and s.payload.action == "start"
    a = V.validate("health/grandma/watch-maria/ack", b'{"ok": true, "prompt_id": "p1"}')
    assert isinstance(a, WatchAck) and a.payload.ok and a.payload.prompt_id == "p1"
    st_ = V.validate("health/grandma/watch-maria/status", b"offline")
    assert isinstance(st_, StatusIn) and not st_.online


def test_deduper_drops_redeliveries_keeps_out_of_order_and_counter_resets() -> None:
    d = Deduper(window=8)

    def r(seq: int, ts: float) -> Reading:
        return Reading("grandma", "watch-maria", ts, seq, heart_rate=70)

    assert not d.is_duplicate(r(2, 20))
    assert not d.is_duplicate(r(1, 10))  # late, but new
    assert d.is_duplicate(r(2, 20))  # QoS 1 redelivery
    assert not d.is_duplicate(r(2, 99))  # device restarted its counter
    assert d.duplicates == 1


def test_deduper_is_one_bounded_window_over_all_devices() -> None:
    d = Deduper(window=8)
    first = Reading("grandma", "watch-maria", 1.0, 1, heart_rate=70)
    twin = Reading("dad", "watch-jon", 1.0, 1, heart_rate=70)  # same seq and ts, other device
    assert not d.is_duplicate(first)
    assert not d.is_duplicate(twin)
    for i in range(6):
        assert not d.is_duplicate(Reading("dad", "watch-jon", 10.0 + i, 10 + i, heart_rate=70))
    assert d.is_duplicate(first)  # still inside the window
    for i in range(50):  # a long stream from one device pushes everything older out
        d.is_duplicate(Reading("dad", "watch-jon", 100.0 + i, 100 + i, heart_rate=70))
    assert len(d) == 8  # memory stays bounded, however many devices and readings
    assert not d.is_duplicate(first)  # forgotten: the store's unique key is the backstop


# --- property tests ---------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_give_a_value_or_a_rejection(raw: bytes) -> None:
    r = V.validate(TOPIC, raw)
    assert isinstance(r, Reading | Rejection)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.sampled_from([*VITAL_FIELDS, "ts", "seq", "battery", "junk"]), json_values)
)
def test_any_object_gives_a_value_or_a_rejection(obj: dict[str, object]) -> None:
    raw = json.dumps(obj, allow_nan=True).encode()
    r = V.validate(TOPIC, raw)
    assert isinstance(r, Reading | Rejection)
    if isinstance(r, Reading):
        for name in ("heart_rate", "spo2", "temperature_c"):
            v = getattr(r, name)
            assert v is None or (math.isfinite(v) and v >= 0)


vital_values = st.fixed_dictionaries(
    {},
    optional={
        "heart_rate": st.integers(20, 250),
        "spo2": st.integers(50, 100),
        "temperature_c": st.floats(30, 43, allow_nan=False),
        "respiratory_rate": st.integers(4, 60),
        "steps": st.integers(0, 500),
        "consciousness": st.sampled_from("ACVPU"),
    },
).filter(bool)


@settings(max_examples=200, deadline=None)
@given(vital_values, st.integers(0, 10**6))
def test_every_contract_valid_reading_is_accepted_unchanged(
    vitals: dict[str, object], seq: int
) -> None:
    payload = {"ts": CLOCK.now() - 5, "seq": seq, **vitals}
    VitalsPayload.model_validate(payload)
    r = V.validate(TOPIC, json.dumps(payload).encode())
    assert isinstance(r, Reading)
    for k, v in vitals.items():
        assert getattr(r, k) == v
