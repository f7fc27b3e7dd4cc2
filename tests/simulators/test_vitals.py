"""The vitals model: deterministic, always on-contract, and each scenario shows its signature."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.contract.topics import VitalsPayload
from gateway.household.model import load_household
from simulators.scenarios import SCENARIOS
from simulators.story import Timeline, story
from simulators.vitals import (
    BATTERY_DYING_S,
    DeviceSilent,
    VitalsModel,
    model_for_person,
)

# 2026-09-21 14:13:20 UTC: mid-afternoon, so scenario runs start awake.
START = 1_790_000_000.0
STEP = 5.0
NUMERIC = ("heart_rate", "spo2", "temperature_c", "respiratory_rate", "systolic_bp")


def run(scenario: str = "normal", minutes: float = 30, **kw: Any) -> list[dict[str, Any]]:
    kw.setdefault("start_ts", START)
    m = VitalsModel("alice", seed=kw.pop("seed", 7), scenario=scenario, **kw)
    out = []
    for i in range(int(minutes * 60 / STEP)):
        if not m.alive:
            break
        out.append(m.next(kw["start_ts"] + i * STEP))
    return out


def first_minute(rows: list[dict[str, Any]], pred: Any) -> float | None:
    return next((i * STEP / 60 for i, r in enumerate(rows) if pred(r)), None)


def runs(values: list[Any]) -> Iterator[int]:
    """Lengths of runs of identical consecutive values."""
    n = 1
    for a, b in itertools.pairwise(values):
        if a == b:
            n += 1
        else:
            yield n
            n = 1
    yield n


def test_same_seed_same_readings_other_seed_differs() -> None:
    assert run(seed=3, minutes=20) == run(seed=3, minutes=20)
    a = [r["heart_rate"] for r in run(seed=3, minutes=20)]
    b = [r["heart_rate"] for r in run(seed=4, minutes=20)]
    assert a != b


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_payload_is_on_contract(scenario: str) -> None:
    rows = run(scenario, minutes=40, home=(51.5, -0.12))
    assert rows
    for r in rows:
        VitalsPayload.model_validate(r)
    assert [r["seq"] for r in rows] == list(range(len(rows)))
    ts = [VitalsPayload.model_validate(r).ts for r in rows]
    assert ts == sorted(ts) and len(set(ts)) == len(ts)


def test_watch_like_rounding_bp_less_often_and_location_sometimes() -> None:
    rows = run(minutes=20, home=(51.5, -0.12))
    r = rows[0]
    assert isinstance(r["heart_rate"], int) and isinstance(r["spo2"], int)
    assert r["temperature_c"] == round(r["temperature_c"], 1)
    with_bp = [i for i, r in enumerate(rows) if "systolic_bp" in r]
    assert with_bp[:3] == [0, 12, 24]  # once a minute at 5 s readings
    assert all("diastolic_bp" in rows[i] for i in with_bp)
    located = [r["location"] for r in rows if "location" in r]
    assert 2 <= len(located) < len(rows) / 10
    assert all(abs(loc["latitude"] - 51.5) < 0.1 for loc in located)


def _in_normal_range(r: dict[str, Any], resting: bool, age: int) -> bool:
    hr = r["heart_rate"]
    ok = [
        50 <= hr <= 100 if resting else hr <= 0.85 * (220 - age),
        r["spo2"] >= 95,
        35.8 <= r["temperature_c"] <= 37.6,
        12 <= r["respiratory_rate"] <= 20 or not resting,
    ]
    if "systolic_bp" in r:
        ok += [90 <= r["systolic_bp"] <= 140 or not resting, 55 <= r["diastolic_bp"] <= 90]
    return all(ok)


@pytest.mark.parametrize(("age", "sex", "seed"), [(30, "male", 1), (55, "female", 2)])
def test_normal_day_stays_in_adult_ranges_and_varies(age: int, sex: str, seed: int) -> None:
    rows = run(minutes=24 * 60, age=age, sex=sex, seed=seed)
    good, last_move = 0, -math.inf
    for i, r in enumerate(rows):
        if r["steps"] >= 5:
            last_move = i * STEP
        # HR may stay up for a few minutes after a walk; that is still normal.
        good += _in_normal_range(r, resting=i * STEP - last_move > 180, age=age)
    assert good / len(rows) >= 0.95
    hr = [r["heart_rate"] for r in rows]
    assert max(runs(hr)) < 12
    assert sum(r["steps"] for r in rows) > 2000  # there were walks


def test_circadian_sleep_at_night_with_lower_heart_rate() -> None:
    rows = run(minutes=24 * 60, seed=5)
    asleep = [r for r in rows if "sleep" in r]
    awake = [r for r in rows if "sleep" not in r]
    assert 6 * 3600 <= len(asleep) * STEP <= 9.5 * 3600
    assert all(r["steps"] == 0 for r in asleep)
    stages = {k for r in asleep for k, v in r["sleep"].items() if v > 0}
    assert stages >= {"deep", "light", "rem"}
    assert all(math.isclose(sum(r["sleep"].values()), STEP / 60, abs_tol=0.002) for r in asleep)
    mean = lambda rs: sum(r["heart_rate"] for r in rs) / len(rs)  # noqa: E731
    assert mean(asleep) < mean(awake) - 8


def test_hypoxia_spo2_falls_within_minutes_with_hr_and_rr_rising() -> None:
    rows = run("hypoxia", minutes=15)
    reached = first_minute(rows, lambda r: r["spo2"] <= 88)
    assert reached is not None and 1 < reached <= 4  # a ramp, not a step
    late = rows[-60:]
    assert all(83 <= r["spo2"] <= 90 for r in late)
    assert sum(r["heart_rate"] for r in late) / 60 > rows[0]["heart_rate"] + 15
    assert min(r["respiratory_rate"] for r in late) >= 21
    assert all(r["steps"] == 0 for r in rows)


def test_tachycardia_at_rest() -> None:
    rows = run("tachycardia_rest", minutes=10)
    reached = first_minute(rows, lambda r: r["heart_rate"] > 120)
    assert reached is not None and reached <= 3
    assert all(r["heart_rate"] > 120 for r in rows[60:])
    assert all(r["steps"] == 0 for r in rows)


def test_bradycardia() -> None:
    rows = run("bradycardia", minutes=10)
    assert first_minute(rows, lambda r: r["heart_rate"] < 45) is not None
    assert sum(r["heart_rate"] for r in rows[-60:]) / 60 < 45


def test_fever_rises_to_39_and_raises_heart_rate() -> None:
    rows = run("fever", minutes=60)
    reached = first_minute(rows, lambda r: r["temperature_c"] >= 39)
    assert reached is not None and 10 < reached <= 45
    assert max(r["temperature_c"] for r in rows) <= 40.2
    assert rows[-1]["heart_rate"] > rows[0]["heart_rate"] + 15


def test_hypotension_systolic_falls_below_90() -> None:
    rows = run("hypotension", minutes=30)
    reached = first_minute(rows, lambda r: r.get("systolic_bp", 999) <= 90)
    assert reached is not None and 3 < reached <= 20
    late_bp = [r["systolic_bp"] for r in rows[-120:] if "systolic_bp" in r]
    assert late_bp and max(late_bp) <= 95


def test_fall_is_detected_once_then_no_movement() -> None:
    rows = run("fall", minutes=10, home=(51.5, -0.12))
    assert rows[0]["fall_detected"] is True
    assert "location" in rows[0]
    assert not any(r.get("fall_detected") for r in rows[1:])
    assert all(r["steps"] == 0 for r in rows[1:])


def _implausible(r: dict[str, Any]) -> bool:
    return (
        not 20 <= r["heart_rate"] <= 230
        or r["spo2"] < 60
        or not 30 <= r["temperature_c"] <= 43
        or not 4 <= r["respiratory_rate"] <= 60
    )


def test_glitch_has_rare_single_spikes_then_recovers() -> None:
    rows = run("glitch", minutes=30)
    spikes = [i for i, r in enumerate(rows) if _implausible(r)]
    assert 3 <= len(spikes) <= len(rows) * 0.1
    assert spikes[0] < 25
    assert all(b - a > 1 for a, b in itertools.pairwise(spikes))
    assert all(not _implausible(rows[i + 1]) for i in spikes if i + 1 < len(rows))


def test_frozen_repeats_identical_values() -> None:
    rows = run("frozen", minutes=10)
    fields = ("heart_rate", "spo2", "temperature_c", "respiratory_rate", "steps")
    assert len({tuple(r[f] for f in fields) for r in rows}) == 1
    assert len({r["ts"] for r in rows}) == len(rows)


def test_not_worn_has_no_heart_rate_and_no_steps() -> None:
    rows = run("not_worn", minutes=10)
    assert all("heart_rate" not in r and "spo2" not in r for r in rows)
    assert all(r["steps"] == 0 for r in rows)


def test_battery_dying_drains_to_zero_then_silent() -> None:
    m = VitalsModel("bob", seed=1, scenario="battery_dying", start_ts=START, battery=80)
    rows = []
    ts = START
    while m.alive:
        rows.append(m.next(ts))
        ts += STEP
    assert rows[-1]["battery"] == 0
    assert len(rows) * STEP <= BATTERY_DYING_S + STEP
    levels = [r["battery"] for r in rows]
    assert levels == sorted(levels, reverse=True) and levels[0] >= 79
    assert all(b > 0 for b in levels[:-1])  # 0 % means dead, nothing else
    with pytest.raises(DeviceSilent):
        m.next(ts)


def test_normal_battery_drains_slowly() -> None:
    rows = run(minutes=120, battery=90)
    assert 80 <= rows[-1]["battery"] < 90


def test_switching_back_to_normal_recovers_gradually() -> None:
    m = VitalsModel("alice", seed=2, scenario="hypoxia", start_ts=START)
    ts = START
    for _ in range(120):
        m.next(ts)
        ts += STEP
    m.set_scenario("normal", ts)
    after = [m.next(ts + i * STEP)["spo2"] for i in range(60)]
    assert after[0] <= 90  # no instant jump back
    assert min(after[-12:]) >= 94


def test_unknown_scenario_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown scenario"):
        VitalsModel("x", start_ts=START, scenario="zombie")


def test_household_profile_shapes_the_model(household_path: Any) -> None:
    hh = load_household(household_path)
    grandma = model_for_person(hh.by_id["grandma"], start_ts=START)  # COPD, beta blocker
    dad = model_for_person(hh.by_id["dad"], start_ts=START)
    assert grandma.spo2_base < 94 < dad.spo2_base
    assert grandma.resting_hr < 72
    assert grandma.interval_s == 5
    assert grandma.location() == {"latitude": 51.5072, "longitude": -0.1276}


def test_story_timeline_plays_each_step_once_in_order() -> None:
    steps = story(hypoxia_at=60, sos_at=120, sos_end_at=200)
    assert [name for _, name in steps] == ["normal", "hypoxia", "sos", "sos_end", "normal"]
    tl = Timeline(steps)
    assert tl.due(0) == ["normal"]
    assert tl.due(59) == []
    assert tl.due(130) == ["hypoxia", "sos"]
    assert tl.due(1000) == ["sos_end", "normal"]
    assert tl.due(2000) == [] and tl.next_at is None
    with pytest.raises(ValueError):
        Timeline([(0, "dance")])
