"""A person's own resting baseline (gateway/monitor/baseline.py): what it learns, when it is
ready, and the one thing it may do, turn a low-priority alert whose value is usual for the
person into information. Never a medium or high one."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from gateway.base.clock import ManualClock
from gateway.base.settings import Settings
from gateway.contract.topics import EventType
from gateway.contract.values import Event, Reading
from gateway.household.model import Household, load_household
from gateway.monitor.baseline import MIN_DAYS, Baselines
from gateway.monitor.engine import Monitor
from gateway.monitor.profile import Profile
from gateway.monitor.response import alert_tier, usual_for_them

TZ = "Europe/London"
# Local midnight of a Monday in winter (UTC = local time).
DAY0 = datetime(2026, 1, 5, tzinfo=ZoneInfo(TZ)).timestamp()
HOUR = 3600.0

HOUSEHOLD = """
timezone: Europe/London
persons:
  - id: sam
    name: Sam Fit
    birth_date: 1988-05-01
    sex: male
    phone: "+447700900102"
    location: {latitude: 51.5072, longitude: -0.1276}
    devices:
      - {id: sam-watch, kind: watch, interval_s: 300}
    emergency_contacts:
      - {name: Kim, phone: "+447700900201"}
"""


def at(day: int, hour: float) -> float:
    return DAY0 + day * 86400 + hour * HOUR


def household(tmp_path: Path) -> Household:
    f = tmp_path / "household.yaml"
    f.write_text(HOUSEHOLD)
    return load_household(f)


def move(clock: ManualClock, ts: float) -> None:
    clock.advance(ts - clock.now())


# --- the baseline on its own ---------------------------------------------------------------


def test_nothing_is_usual_before_enough_completed_days() -> None:
    b = Baselines(TZ)
    for day in range(MIN_DAYS):
        for i in range(10):
            b.learn("sam", {"heart_rate": 46 + i % 3}, ts=at(day, 9 + i / 10), asleep=False)
    # Seven days learnt, but the seventh is still in progress on its own evening.
    assert b.usual("sam", ts=at(MIN_DAYS - 1, 20), asleep=False) == {}
    # The next morning it is complete: 70 values of 46, 47, 48.
    assert b.usual("sam", ts=at(MIN_DAYS, 8), asleep=False) == {"heart_rate": (46.0, 48.0)}
    # Asleep is kept apart: nothing learnt there.
    assert b.usual("sam", ts=at(MIN_DAYS, 3), asleep=True) == {}
    assert b.usual("kim", ts=at(MIN_DAYS, 8), asleep=False) == {}


def test_the_usual_range_is_the_central_95_percent() -> None:
    b = Baselines(TZ, min_days=1, min_values=20)
    # 100 values by hand: 3 of 40, 96 of 50, 1 of 60. Nearest rank: the 2.5th centile is the
    # 3rd value (40), the 97.5th the 98th (50): the one 60 is outside.
    values = [40] * 3 + [50] * 96 + [60]
    for i, v in enumerate(values):
        b.learn("sam", {"heart_rate": v}, ts=at(0, 8 + i / 60), asleep=False)
    assert b.usual("sam", ts=at(1, 8), asleep=False) == {"heart_rate": (40.0, 50.0)}


def test_temperature_is_binned_in_tenths_and_too_few_values_say_nothing() -> None:
    b = Baselines(TZ, min_days=1, min_values=20)
    for i in range(19):
        b.learn("sam", {"temperature_c": 36.44}, ts=at(0, 8 + i / 10), asleep=False)
    assert b.usual("sam", ts=at(1, 8), asleep=False) == {}
    b2 = Baselines(TZ, min_days=1, min_values=20)
    for i in range(20):
        b2.learn("sam", {"temperature_c": 36.44 + (i % 2) * 0.3}, ts=at(0, 8 + i / 10),
                 asleep=False)  # fmt: skip
    assert b2.usual("sam", ts=at(1, 8), asleep=False) == {"temperature_c": (36.4, 36.7)}


def test_old_days_leave_the_window() -> None:
    b = Baselines(TZ, min_days=1, window_days=3, min_values=1)
    b.learn("sam", {"heart_rate": 40}, ts=at(0, 9), asleep=False)
    assert b.usual("sam", ts=at(1, 9), asleep=False) == {"heart_rate": (40.0, 40.0)}
    b.learn("sam", {"heart_rate": 60}, ts=at(3, 9), asleep=False)
    # Day 0 is now outside the last three days: only day 3's 60 remains (and it is complete
    # on day 4).
    assert b.usual("sam", ts=at(4, 9), asleep=False) == {"heart_rate": (60.0, 60.0)}


def test_off_learns_nothing() -> None:
    b = Baselines(TZ, min_days=0)
    b.learn("sam", {"heart_rate": 40}, ts=at(0, 9), asleep=False)
    assert not b.enabled and b.usual("sam", ts=at(9, 9), asleep=False) == {}


def test_snapshot_round_trip_and_a_malformed_one_keeps_the_state() -> None:
    b = Baselines(TZ, min_days=1, min_values=1)
    b.learn("sam", {"heart_rate": 47, "spo2": 95}, ts=at(0, 9), asleep=True)
    assert b.dirty
    snap = json.loads(json.dumps(b.snapshot()))
    assert not b.dirty
    c = Baselines(TZ, min_days=1, min_values=1)
    c.restore(snap)
    assert c.usual("sam", ts=at(1, 1), asleep=True) == {
        "heart_rate": (47.0, 47.0), "spo2": (95.0, 95.0)
    }  # fmt: skip
    for bad in ({"version": 99, "keys": []},
                {"version": 1, "keys": [{"person": "x", "vital": "steps", "state": "awake",
                                         "days": {}}]},
                {"version": 1, "keys": [{"person": "x"}]}):  # fmt: skip
        with pytest.raises((ValueError, KeyError, TypeError)):
            c.restore(bad)
    assert c.usual("sam", ts=at(1, 1), asleep=True)["heart_rate"] == (47.0, 47.0)


# --- the decision it informs -----------------------------------------------------------------


def evidence(value: float, cls: str, usual: list[float] | None, red: int = 0) -> dict[str, Any]:
    info: dict[str, Any] = {"value": value, "class": cls, "intervention": False}
    if usual is not None:
        info["usual"] = usual
    return {"abnormal": {"heart_rate": info}, "news2": {"parameters": {"heart_rate": red}}}


def test_only_a_mild_value_inside_the_usual_range_is_usual_for_them(tmp_path: Path) -> None:
    assert usual_for_them("heart_rate_low", "abnormal", evidence(47, "low", [45, 60]))
    assert not usual_for_them("heart_rate_low", "abnormal", evidence(44, "low", [45, 60]))
    assert not usual_for_them("heart_rate_low", "abnormal", evidence(47, "low", None))
    # A red NEWS2 parameter, a critical value or an intervention value is never softened,
    # whatever the person's history says.
    assert not usual_for_them("heart_rate_low", "abnormal", evidence(40, "low", [38, 60], red=3))
    assert not usual_for_them("heart_rate_low", "critical", evidence(38, "critical_low", [30, 60]))
    assert not usual_for_them("news2", "low-medium", evidence(47, "low", [45, 60]))
    prof = Profile.from_person(household(tmp_path).persons[0], datetime(2026, 1, 5).date())
    assert alert_tier("heart_rate_low", "abnormal", evidence(47, "low", [45, 60]), prof) == 0
    assert alert_tier("heart_rate_low", "abnormal", evidence(44, "low", [45, 60]), prof) == 1
    assert alert_tier("heart_rate_low", "critical", evidence(38, "critical_low", [30, 60]),
                      prof) == 2  # fmt: skip


# --- through the monitor ---------------------------------------------------------------------


def monitor(tmp_path: Path, start: float, **settings: object) -> tuple[Monitor, ManualClock]:
    hh = household(tmp_path)
    clock = ManualClock(start)
    s = Settings(data_dir=tmp_path, **settings)  # type: ignore[arg-type]
    return Monitor(hh, s, clock=clock, data_dir=tmp_path), clock


def day_of_readings(m: Monitor, clock: ManualClock, day: int) -> list[Event]:
    """A fit adult's ordinary day every 5 minutes, at rest: 46 bpm from 07:00 to 12:00 (below
    the adult normal range, NEWS2 1: low priority), 60 otherwise; SpO2 96-98."""
    out: list[Event] = []
    for i in range(288):
        ts = at(day, i / 12)
        move(clock, ts)
        hr = 46 if 7 <= i / 12 < 12 else 60
        spo2 = 96 + i % 3  # a constant one would be a frozen sensor
        out += m.process(Reading("sam", "sam-watch", ts, heart_rate=hr, spo2=spo2)).events
    return out


def advisories(events: list[Event]) -> list[Event]:
    return [
        e
        for e in events
        if e.type == EventType.ADVISORY and e.data["transition"] in ("opened", "reopened")
    ]


def test_a_fit_adults_usual_low_pulse_becomes_information_after_a_week(tmp_path: Path) -> None:
    m, clock = monitor(tmp_path, at(0, 0))
    for day in range(MIN_DAYS):
        adv = advisories(day_of_readings(m, clock, day))
        assert [e.data["priority"] for e in adv] == ["low"], day
    # Day 8: seven completed days say 46 is this person's usual morning pulse.
    events = day_of_readings(m, clock, MIN_DAYS)
    adv = advisories(events)
    assert [e.data["priority"] for e in adv] == ["information"]
    d = adv[0].data
    assert d["abnormal"]["heart_rate"]["usual"] == [46.0, 60.0]
    assert "their usual 46-60" in d["why"] and "usual for them" in d["why"]
    assert d["notify"] is False and d["response"]["ask"] is False
    assert not [e for e in events if e.type == EventType.SOFT_SOS]
    # The open alert is shown as information, and it is not an alarm.
    for i in range(12):
        move(clock, at(MIN_DAYS + 1, 9 + i / 12))
        m.process(Reading("sam", "sam-watch", clock.now(), heart_rate=46, spo2=97))
    assert [a["priority"] for a in m.open_alerts("sam")] == ["information"]
    assert m.alert_priority("sam") is None


def test_a_critical_value_is_never_softened_and_never_learnt(tmp_path: Path) -> None:
    m, clock = monitor(tmp_path, at(0, 0))
    for day in range(MIN_DAYS + 1):
        day_of_readings(m, clock, day)
    out: list[Event] = []
    for i in range(12):  # an hour of 38 bpm at rest: critical for an adult, NEWS2 red
        ts = at(MIN_DAYS + 1, 9 + i / 12)
        move(clock, ts)
        out += m.process(Reading("sam", "sam-watch", ts, heart_rate=38, spo2=97)).events
    soft = [e for e in out if e.type == EventType.SOFT_SOS]
    assert soft and soft[0].data["priority"] == "medium"
    assert m.baseline.usual("sam", ts=at(MIN_DAYS + 2, 9), asleep=False)["heart_rate"] == (
        46.0,
        60.0,
    )


def test_exercise_is_not_learnt(tmp_path: Path) -> None:
    m, clock = monitor(tmp_path, at(0, 0), baseline_min_days=1)
    for i in range(24):  # two hours of running: 160 bpm, 150 steps a 5-minute reading
        ts = at(0, 10 + i / 12)
        move(clock, ts)
        m.process(Reading("sam", "sam-watch", ts, heart_rate=160, steps=750))
    assert m.baseline.usual("sam", ts=at(1, 9), asleep=False) == {}


def test_the_baseline_survives_a_restart(tmp_path: Path) -> None:
    m, clock = monitor(tmp_path, at(0, 0))
    for day in range(MIN_DAYS):
        day_of_readings(m, clock, day)
    m.save_state()
    m2, _ = monitor(tmp_path, at(MIN_DAYS, 8))
    assert m2.baseline.usual("sam", ts=at(MIN_DAYS, 8), asleep=False) == {
        "heart_rate": (46.0, 60.0),
        # What the alarms see from a watch is the value its recent readings agree on (the
        # middle of 96, 97, 98): that is what is learnt, as it is what is judged.
        "spo2": (97.0, 97.0),
    }


def test_off_keeps_every_mild_value_low_priority(tmp_path: Path) -> None:
    m, clock = monitor(tmp_path, at(0, 0), baseline_min_days=0)
    for day in range(MIN_DAYS + 1):
        adv = advisories(day_of_readings(m, clock, day))
        assert [e.data["priority"] for e in adv] == ["low"]
    assert m.baseline.usual("sam", ts=at(MIN_DAYS + 1, 9), asleep=False) == {}
