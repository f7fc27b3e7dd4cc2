"""Typed event payloads read what the producers really write (the monitor, the playbooks),
and leave the wire body (Event.data) as it was."""

from __future__ import annotations

from pathlib import Path

from gateway.base.clock import ManualClock
from gateway.base.settings import Settings
from gateway.contract.events import (
    PAYLOADS,
    AlertPayload,
    FallPayload,
    HardSosPayload,
    ImplausiblePayload,
    parse_payload,
    response_from,
)
from gateway.contract.topics import EventType
from gateway.contract.values import Event, Reading
from gateway.household.model import load_household
from gateway.monitor.engine import Monitor

ROOT = Path(__file__).resolve().parents[3]
HH = load_household(ROOT / "examples" / "household.yaml")


def _feed(tmp_path: Path, n: int, **v: object) -> list[Event]:
    clock = ManualClock(1_790_000_000.0)
    m = Monitor(HH, Settings(data_dir=tmp_path), clock=clock, data_dir=tmp_path)
    out: list[Event] = []
    for _ in range(n):
        clock.advance(5)
        out += m.process(Reading("dad", "watch-jon", clock.now(), **v)).events  # type: ignore[arg-type]
    return out


def test_a_soft_sos_from_the_monitor_parses_to_its_payload(tmp_path: Path) -> None:
    soft = [e for e in _feed(tmp_path, 3, spo2=89, heart_rate=80) if e.type == EventType.SOFT_SOS]
    assert len(soft) == 1
    p = parse_payload(soft[0].type, soft[0].data)
    assert isinstance(p, AlertPayload)
    d = soft[0].data
    assert p.alert_id == d["alert_id"] and p.alert_ids == tuple(d["alert_ids"])
    assert p.notify is True and p.retrospective is False and p.high is False
    assert p.abnormal["spo2"]["value"] == 89
    assert p.response == response_from(d["response"])
    assert p.response is not None and p.response.ask and p.response.on_no_answer == "contacts"
    # Nothing lost on the way back: the playbook hands the same response on.
    assert p.response.to_dict() == d["response"]
    assert p.why == d["why"] and p.advice == d["advice"] and p.news2 == d["news2"]
    # The monitor builds the payload and sends its to_data(): parsing it back loses nothing.
    assert p.to_data() == d


def test_a_fall_and_an_implausible_value_parse(tmp_path: Path) -> None:
    events = _feed(tmp_path, 1, heart_rate=80, fall_detected=True)
    fall = [e for e in events if e.type == EventType.FALL_DETECTED]
    assert parse_payload(fall[0].type, fall[0].data) == FallPayload("watch-jon", False)
    odd = [
        e
        for e in _feed(tmp_path / "b", 1, systolic_bp=300, heart_rate=70)
        if e.type == EventType.IMPLAUSIBLE_READING
    ]
    p = parse_payload(odd[0].type, odd[0].data)
    assert isinstance(p, ImplausiblePayload)
    assert p.vital == "systolic_bp" and p.value == 300 and p.device == "watch-jon"
    assert p.ask and p.response is not None and p.response.on_no_answer == "hard_sos"
    assert p.to_data() == odd[0].data  # built by the monitor as this payload: lossless


def test_hard_sos_round_trips_and_keeps_its_wire_body() -> None:
    p = HardSosPayload("run-1", "button", "watch-jon", "amb-2")
    assert p.to_data() == {
        "run_id": "run-1",
        "trigger": "button",
        "device": "watch-jon",
        "ambulance_id": "amb-2",
    }
    assert parse_payload(EventType.HARD_SOS, p.to_data()) == p


def test_an_unknown_no_answer_plan_still_tells_someone() -> None:
    r = response_from({"tier": 3, "ask": True, "on_no_answer": "mystery"})
    assert r is not None and r.on_no_answer == "contacts"
    assert response_from(None) is None
    # A tier beyond the scale reads as the top of it, never as "record only".
    top = response_from({"tier": 9})
    assert top is not None and top.level == "emergency"


def test_only_listed_types_have_a_payload() -> None:
    assert parse_payload(EventType.SOS_END, {"run_id": "x"}) is None
    assert set(PAYLOADS) <= {str(t) for t in EventType}
