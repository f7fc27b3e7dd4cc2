"""PersonStatePublisher with a fake monitor and a recording publish function."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from gateway.base.clock import ManualClock
from gateway.contract.topics import EventType, StatePayload, format_ts, state_topic
from gateway.contract.values import Event
from gateway.household.model import Household, load_household
from gateway.household.state import PersonStatePublisher

ROOT = Path(__file__).resolve().parents[3]


class FakeSource:
    """The four monitor views PersonStatePublisher reads."""

    def __init__(self) -> None:
        self.vitals: dict[str, dict[str, dict[str, Any]]] = {}
        self.news2: dict[str, dict[str, Any]] = {}
        self.alerts: dict[str, list[dict[str, Any]]] = {}
        self.states: dict[tuple[str, str], str] = {}
        self.rows: dict[tuple[str, str], dict[str, Any]] = {}
        self.row_reads = 0

    def latest_vitals(self, person: str) -> dict[str, Any]:
        return dict(self.vitals.get(person, {}))

    def latest_news2(self, person: str) -> dict[str, Any] | None:
        return self.news2.get(person)

    def open_alert_count(self, person: str) -> int:
        return len(self.alerts.get(person, []))

    def alert_priority(self, person: str) -> str | None:
        return "medium" if self.alerts.get(person) else None

    def device_state(self, person: str, device: str) -> str:
        return self.states.get((person, device), "unknown")

    def device_rows(self) -> Mapping[tuple[str, str], Mapping[str, Any]]:
        self.row_reads += 1
        return dict(self.rows)

    def set_vital(self, person: str, name: str, value: Any, ts: float) -> None:
        self.vitals.setdefault(person, {})[name] = {"value": value, "ts": ts}


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, bool]] = []

    async def __call__(
        self, topic: str, payload: dict[str, Any] | str | bytes, *, retain: bool = False
    ) -> None:
        self.calls.append((topic, payload, retain))

    def states(self, person: str) -> list[dict[str, Any]]:
        return [p for t, p, _ in self.calls if t == state_topic(person)]

    def clear(self) -> None:
        self.calls.clear()


@pytest.fixture
def household() -> Household:
    return load_household(ROOT / "examples" / "household.yaml")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def source() -> FakeSource:
    return FakeSource()


@pytest.fixture
def rec() -> Recorder:
    return Recorder()


def make(
    household: Household,
    source: FakeSource,
    rec: Recorder,
    clock: ManualClock,
    **kw: Any,
) -> PersonStatePublisher:
    kw.setdefault("tick_s", 3600.0)  # tests flush by hand unless they test the loop
    return PersonStatePublisher(household, source, source.device_rows, rec, clock, **kw)


def ev(kind: EventType, person: str, clock: ManualClock, **data: Any) -> Event:
    return Event(kind, person, clock.now(), data)


async def test_start_publishes_every_person_once_retained_and_valid(
    household: Household, source: FakeSource, rec: Recorder, clock: ManualClock
) -> None:
    source.set_vital("grandma", "heart_rate", 72.0, clock.now())
    source.set_vital("grandma", "consciousness", "A", clock.now())
    source.news2["grandma"] = {"total": 2, "level": "low", "parameters": {}, "ts": clock.now()}
    source.states[("grandma", "watch-maria")] = "active"
    source.rows[("grandma", "watch-maria")] = {"battery": 81.0, "last_seen": clock.now() - 3}
    pub = make(household, source, rec, clock)
    await pub.start()
    try:
        assert sorted(t for t, _, _ in rec.calls) == sorted(
            state_topic(p.id) for p in household.persons
        )
        assert all(retain for _, _, retain in rec.calls)
        assert source.row_reads == 1  # one snapshot of the store for all persons
        [maria] = rec.states("grandma")
        state = StatePayload.model_validate(maria)
        assert state.person == "grandma"
        assert state.ts == format_ts(clock.now())
        assert state.vitals == {"heart_rate": 72.0, "consciousness": "A"}
        assert (state.news2_total, state.news2_level, state.sos) == (2, "low", "off")
        assert state.open_alerts == 0
        dev = state.devices["watch-maria"]
        assert (dev.state, dev.battery, dev.last_seen) == (
            "active",
            81.0,
            format_ts(clock.now() - 3),
        )
        [jon] = rec.states("dad")
        assert jon["vitals"] == {} and jon["news2_level"] is None
        assert jon["devices"]["watch-jon"] == {
            "state": "unknown",
            "battery": None,
            "last_seen": None,
        }
    finally:
        await pub.stop()


async def test_plain_vitals_are_rate_limited_per_person(
    household: Household, source: FakeSource, rec: Recorder, clock: ManualClock
) -> None:
    pub = make(household, source, rec, clock, min_interval_s=10.0)
    await pub.start()
    rec.clear()
    for hr in (70, 71, 72, 73):
        source.set_vital("dad", "heart_rate", float(hr), clock.now())
        pub.note_reading("dad")
        assert await pub.flush() == 0  # within 10 s of the start publication
        clock.advance(2)
    assert rec.calls == []
    clock.advance(2)  # 10 s since the last publication
    assert await pub.flush() == 1
    [state] = rec.states("dad")
    assert state["vitals"]["heart_rate"] == 73.0  # only the newest value went out
    # Nothing noted since: nothing to send, however long we wait.
    clock.advance(60)
    assert await pub.flush() == 0
    # A reading that changes nothing is noted but not republished.
    pub.note_reading("dad")
    assert await pub.flush() == 0
    assert len(rec.calls) == 1
    await pub.stop()


async def test_news2_level_change_goes_out_at_once(
    household: Household, source: FakeSource, rec: Recorder, clock: ManualClock
) -> None:
    pub = make(household, source, rec, clock, min_interval_s=10.0)
    await pub.start()
    rec.clear()
    # Same level as published: an ordinary, rate-limited update.
    source.set_vital("dad", "spo2", 97.0, clock.now())
    pub.note_reading("dad", None)
    assert await pub.flush() == 0
    source.news2["dad"] = {"total": 5, "level": "medium"}
    pub.note_reading("dad", "medium")
    assert await pub.flush() == 1
    [state] = rec.states("dad")
    assert (state["news2_total"], state["news2_level"]) == (5, "medium")
    # The same level again is not urgent.
    source.set_vital("dad", "spo2", 96.0, clock.now())
    pub.note_reading("dad", "medium")
    assert await pub.flush() == 0
    await pub.stop()


async def test_the_loop_wakes_for_an_urgent_reading(
    household: Household, source: FakeSource, rec: Recorder, clock: ManualClock
) -> None:
    pub = make(household, source, rec, clock, tick_s=3600.0)
    await pub.start()
    rec.clear()
    source.news2["grandma"] = {"total": 7, "level": "high"}
    pub.note_reading("grandma", "high")
    for _ in range(50):
        if rec.calls:
            break
        await asyncio.sleep(0.01)
    assert [s["news2_level"] for s in rec.states("grandma")] == ["high"]
    await pub.stop()


async def test_sos_follows_hard_sos_and_sos_end_at_once(
    household: Household, source: FakeSource, rec: Recorder, clock: ManualClock
) -> None:
    pub = make(household, source, rec, clock, min_interval_s=10.0)
    await pub.start()
    rec.clear()
    await pub.on_event(ev(EventType.HARD_SOS, "grandma", clock, run_id="r1", trigger="button"))
    assert [s["sos"] for s in rec.states("grandma")] == ["on"]
    await pub.on_event(ev(EventType.SOS_END, "grandma", clock, run_id="r2", trigger="button"))
    assert [s["sos"] for s in rec.states("grandma")] == ["on", "off"]
    assert rec.states("dad") == []
    await pub.stop()


async def test_alert_and_device_events_publish_at_once(
    household: Household, source: FakeSource, rec: Recorder, clock: ManualClock
) -> None:
    pub = make(household, source, rec, clock, min_interval_s=10.0)
    await pub.start()
    rec.clear()
    source.alerts["dad"] = [{"alert_id": "a1"}]
    await pub.on_event(ev(EventType.SOFT_SOS, "dad", clock, alert_id="a1"))
    source.states[("dad", "watch-jon")] = "stale"
    await pub.on_event(ev(EventType.DEVICE_STALE, "dad", clock, device="watch-jon"))
    source.alerts["dad"] = []
    await pub.on_event(ev(EventType.ALERT_CLEARED, "dad", clock, alert_id="a1"))
    states = rec.states("dad")
    assert [s["open_alerts"] for s in states] == [1, 1, 0]
    assert [s["devices"]["watch-jon"]["state"] for s in states] == ["unknown", "stale", "stale"]
    # Events that change nothing shown, hub events and strangers are ignored.
    await pub.on_event(ev(EventType.PROMPT_ANSWERED, "dad", clock))
    await pub.on_event(ev(EventType.MONITORING_DEGRADED, "", clock))
    await pub.on_event(ev(EventType.HARD_SOS, "stranger", clock))
    pub.note_reading("stranger", "high")
    assert len(rec.calls) == 3
    await pub.stop()


async def test_battery_is_kept_between_readings_without_one(
    household: Household, source: FakeSource, rec: Recorder, clock: ManualClock
) -> None:
    source.rows[("dad", "watch-jon")] = {"battery": 55.0, "last_seen": clock.now()}
    pub = make(household, source, rec, clock, min_interval_s=0.0)
    await pub.start()
    clock.advance(5)
    source.rows[("dad", "watch-jon")] = {"battery": None, "last_seen": clock.now()}
    pub.note_reading("dad")
    assert await pub.flush() == 1
    dev = rec.states("dad")[-1]["devices"]["watch-jon"]
    # Heard from since the start and never flagged by the monitor: active.
    assert dev == {"state": "active", "battery": 55.0, "last_seen": format_ts(clock.now())}
    await pub.stop()


async def test_open_sos_is_read_at_start_and_stop_flushes_pending(
    household: Household, source: FakeSource, rec: Recorder, clock: ManualClock
) -> None:
    pub = make(household, source, rec, clock, sos_open=lambda p: p == "dad")
    await pub.start()
    assert rec.states("dad")[0]["sos"] == "on"
    assert rec.states("grandma")[0]["sos"] == "off"
    rec.clear()
    source.set_vital("grandma", "heart_rate", 64.0, clock.now())
    pub.note_reading("grandma")
    await pub.stop()  # within min_interval, but stopping: it goes out now
    assert [s["vitals"] for s in rec.states("grandma")] == [{"heart_rate": 64.0}]


async def test_a_failing_source_never_breaks_the_loop_nor_logs_values(
    household: Household, rec: Recorder, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken(FakeSource):
        def latest_news2(self, person: str) -> dict[str, Any] | None:
            if person == "dad":
                raise RuntimeError("heart rate 187")
            return {"total": 99, "level": "catastrophic-187"}

    source = Broken()
    pub = make(household, source, rec, clock)
    with caplog.at_level("ERROR"):
        await pub.start()
    assert rec.calls == [] and pub.errors == len(household.persons)
    assert "RuntimeError" in caplog.text and "news2_level" in caplog.text
    assert "187" not in caplog.text
    pub.note_reading("dad")
    assert await pub.flush(due_only=False) == 0
    await pub.stop()


async def test_with_the_real_monitor(
    household: Household, rec: Recorder, clock: ManualClock, tmp_path: Path
) -> None:
    from gateway.base.settings import Settings
    from gateway.contract.values import Reading
    from gateway.household.state import StateSource
    from gateway.monitor.engine import Monitor

    monitor = Monitor(household, Settings(), clock=clock, data_dir=tmp_path)
    source: StateSource = monitor  # the Monitor satisfies the protocol as is
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    pub = PersonStatePublisher(household, source, lambda: rows, rec, clock, tick_s=3600.0)
    await pub.start()
    rec.clear()
    reading = Reading(
        "dad", "watch-jon", clock.now(), seq=1, heart_rate=71.0, spo2=97.0, battery=90.0
    )
    out = monitor.process(reading)
    rows[("dad", "watch-jon")] = {"battery": 90.0, "last_seen": clock.now()}
    pub.note_reading("dad", out.news2_level)
    await pub.flush(due_only=False)
    [state] = rec.states("dad")
    StatePayload.model_validate(state)
    assert state["vitals"]["heart_rate"] == 71.0 and state["vitals"]["spo2"] == 97.0
    assert state["news2_level"] == out.news2_level
    assert state["devices"]["watch-jon"]["battery"] == 90.0
    await pub.stop()
    monitor.anomaly.close()
