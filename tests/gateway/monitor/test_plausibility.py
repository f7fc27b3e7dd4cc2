"""Plausibility: range, consistency, jumps (with confirmation of real changes), frozen
sensors, late readings and per-device state."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from gateway.contract.values import Reading
from gateway.monitor.plausibility import (
    DEFAULT_FROZEN_RULES,
    DEFAULT_JUMP_RULES,
    Flag,
    JumpRule,
    PlausibilityChecker,
    PlausibilityResult,
)
from gateway.monitor.ranges import Profile, VitalRange, ranges_for

RANGES = ranges_for(Profile(), "rest")
T0 = 1_790_000_000.0


def reading(ts: float, device: str = "watch1", **vitals: float) -> Reading:
    return Reading(person="p1", device=device, ts=T0 + ts, **vitals)  # type: ignore[arg-type]


def run(
    checker: PlausibilityChecker, rows: list[tuple[float, dict[str, float]]]
) -> list[PlausibilityResult]:
    return [checker.check(reading(ts, **vals), RANGES) for ts, vals in rows]


def kinds(result: PlausibilityResult) -> list[tuple[str, str]]:
    return [(f.vital, f.kind) for f in result.flags]


# --- plausible range ----------------------------------------------------------------------


def test_out_of_plausible_is_flagged_and_not_accepted() -> None:
    r = PlausibilityChecker().check(
        reading(0, systolic_bp=500, diastolic_bp=80, heart_rate=72, spo2=40), RANGES
    )
    assert r.accepted == {"diastolic_bp": 80.0, "heart_rate": 72.0}
    assert r.flags == (
        Flag("spo2", "out_of_plausible", 40.0, "below the plausible range"),
        # 500 mmHg is beyond any recorded human value: discarded, never asked about.
        Flag("systolic_bp", "impossible", 500.0, "beyond any human value"),
    )
    assert r.flagged == frozenset({"spo2", "systolic_bp"})


@pytest.mark.parametrize(
    ("vital", "value", "kind"),
    [
        ("heart_rate", 0, "out_of_plausible"),  # a vanished pulse: possible (an arrest)
        ("heart_rate", 24, "out_of_plausible"),
        ("heart_rate", 300, "out_of_plausible"),
        ("heart_rate", 351, "impossible"),
        ("spo2", 0, "out_of_plausible"),
        ("spo2", 101, "impossible"),
        ("respiratory_rate", 0, "out_of_plausible"),
        ("respiratory_rate", 151, "impossible"),
        ("systolic_bp", 30, "out_of_plausible"),
        ("systolic_bp", 300, "out_of_plausible"),
        ("systolic_bp", 401, "impossible"),
        ("temperature_c", 25, "out_of_plausible"),
        ("temperature_c", 9.9, "impossible"),
        ("temperature_c", 47.5, "impossible"),
    ],
)
def test_possible_but_implausible_is_told_apart_from_impossible(
    vital: str, value: float, kind: str
) -> None:
    r = PlausibilityChecker().check(reading(0, **{vital: value}), RANGES)
    assert r.accepted == {}
    assert [(f.vital, f.kind) for f in r.flags] == [(vital, kind)]


def test_plausible_edges_are_inside() -> None:
    r = PlausibilityChecker().check(reading(0, heart_rate=250, spo2=100, temperature_c=30), RANGES)
    assert r.accepted == {"heart_rate": 250, "spo2": 100, "temperature_c": 30}
    assert r.flags == ()


def test_implausible_value_does_not_become_a_baseline() -> None:
    c = PlausibilityChecker()
    results = run(c, [(0, {"heart_rate": 70}), (1, {"heart_rate": 400}), (2, {"heart_rate": 71})])
    assert [r.accepted for r in results] == [{"heart_rate": 70}, {}, {"heart_rate": 71}]


def test_vitals_without_a_range_are_not_range_checked() -> None:
    r = PlausibilityChecker().check(reading(0, heart_rate=300), {})
    assert r.accepted == {"heart_rate": 300}


# --- consistency -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("systolic", "diastolic", "consistent"),
    [(120, 80, True), (120, 119, True), (120, 120, False), (120, 130, False)],
)
def test_diastolic_must_be_below_systolic(
    systolic: float, diastolic: float, consistent: bool
) -> None:
    r = PlausibilityChecker().check(
        reading(0, systolic_bp=systolic, diastolic_bp=diastolic, heart_rate=70), RANGES
    )
    if consistent:
        assert r.accepted == {"systolic_bp": systolic, "diastolic_bp": diastolic, "heart_rate": 70}
        assert r.flags == ()
    else:
        assert r.accepted == {"heart_rate": 70}
        assert kinds(r) == [("systolic_bp", "inconsistent"), ("diastolic_bp", "inconsistent")]


# --- jumps -------------------------------------------------------------------------------


def test_default_jump_rules() -> None:
    assert DEFAULT_JUMP_RULES["heart_rate"] == JumpRule(30, 2)
    assert DEFAULT_JUMP_RULES["spo2"] == JumpRule(6, 0.5)
    assert DEFAULT_JUMP_RULES["temperature_c"] == JumpRule(0.5, 0.02)
    assert DEFAULT_JUMP_RULES["systolic_bp"] == JumpRule(40, 1)
    assert DEFAULT_JUMP_RULES["diastolic_bp"] == JumpRule(30, 1)
    assert DEFAULT_JUMP_RULES["respiratory_rate"] == JumpRule(10, 0.5)
    assert DEFAULT_JUMP_RULES["heart_rate"].tolerance(60) == pytest.approx(150)


@pytest.mark.parametrize(
    ("vital", "first", "second", "dt", "accepted"),
    [
        ("heart_rate", 70, 102, 1, True),  # |Δ| 32 == 30 + 2 x 1
        ("heart_rate", 70, 102.5, 1, False),
        ("heart_rate", 70, 37.5, 1, False),  # falls count as much as rises
        ("heart_rate", 70, 130, 15, True),  # 60 <= 30 + 2 x 15
        ("spo2", 97, 91, 0.5, True),  # 6 <= 6.25
        ("spo2", 97, 86, 5, False),  # 11 > 8.5
        ("temperature_c", 36.8, 37.5, 10, True),  # 0.7 <= 0.7
        ("temperature_c", 36.8, 37.6, 10, False),
        ("systolic_bp", 120, 165, 5, True),
        ("systolic_bp", 120, 166, 5, False),
        ("respiratory_rate", 16, 30, 8, True),
        ("respiratory_rate", 16, 31, 8, False),
    ],
)
def test_jump_threshold(vital: str, first: float, second: float, dt: float, accepted: bool) -> None:
    c = PlausibilityChecker()
    c.check(reading(0, **{vital: first}), RANGES)
    r = c.check(reading(dt, **{vital: second}), RANGES)
    assert (vital in r.accepted) is accepted
    if not accepted:
        assert kinds(r) == [(vital, "jump")]


def test_a_glitch_that_does_not_repeat_is_dropped() -> None:
    c = PlausibilityChecker()
    results = run(c, [(0, {"heart_rate": 70}), (1, {"heart_rate": 150}), (2, {"heart_rate": 72})])
    assert [r.accepted for r in results] == [{"heart_rate": 70}, {}, {"heart_rate": 72}]
    assert kinds(results[1]) == [("heart_rate", "jump")]
    assert results[1].flags[0].detail == "changed faster than physiology allows"


def test_a_real_sudden_change_is_accepted_once_two_readings_confirm_it() -> None:
    # Complete heart block: 75 -> 35 bpm from one beat to the next, and it stays there.
    c = PlausibilityChecker()
    results = run(
        c,
        [
            (0, {"heart_rate": 75}),
            (1, {"heart_rate": 35}),
            (2, {"heart_rate": 36}),
            (3, {"heart_rate": 35}),
            (4, {"heart_rate": 34}),
            (5, {"heart_rate": 36}),
        ],
    )
    assert [r.accepted for r in results] == [
        {"heart_rate": 75},
        {},
        {},
        {"heart_rate": 35},  # second confirmation: re-baselined
        {"heart_rate": 34},
        {"heart_rate": 36},
    ]
    assert [f.detail for f in results[2].flags] == ["sudden change, confirmed 1/2"]


def test_a_second_different_jump_restarts_confirmation() -> None:
    c = PlausibilityChecker()
    results = run(
        c,
        [
            (0, {"heart_rate": 75}),
            (1, {"heart_rate": 150}),
            (2, {"heart_rate": 35}),  # far from both the baseline and the pending level
            (3, {"heart_rate": 36}),
            (4, {"heart_rate": 35}),
        ],
    )
    assert [r.accepted for r in results] == [{"heart_rate": 75}, {}, {}, {}, {"heart_rate": 35}]


def test_jump_check_is_skipped_after_ten_minutes() -> None:
    # Rules with no time allowance make the 10-minute cut-off visible.
    c = PlausibilityChecker(jump_rules={"heart_rate": JumpRule(10, 0)})
    assert run(c, [(0, {"heart_rate": 70}), (600, {"heart_rate": 90})])[1].accepted == {}
    c = PlausibilityChecker(jump_rules={"heart_rate": JumpRule(10, 0)})
    assert run(c, [(0, {"heart_rate": 70}), (600.5, {"heart_rate": 90})])[1].accepted == {
        "heart_rate": 90
    }


# --- frozen sensor -------------------------------------------------------------------------


def test_default_frozen_rules() -> None:
    assert set(DEFAULT_FROZEN_RULES) == {"heart_rate", "spo2", "respiratory_rate"}
    assert DEFAULT_FROZEN_RULES["heart_rate"].readings == 12
    assert DEFAULT_FROZEN_RULES["heart_rate"].span_s == 300


def test_frozen_heart_rate_is_flagged_until_it_changes() -> None:
    c = PlausibilityChecker()
    rows = [(60.0 * i, {"heart_rate": 62.0}) for i in range(13)] + [(780, {"heart_rate": 63.0})]
    results = run(c, rows)
    assert all(r.accepted == {"heart_rate": 62} for r in results[:11])
    assert results[11].accepted == {}  # 12 readings over 660 s
    assert kinds(results[11]) == [("heart_rate", "frozen")]
    assert kinds(results[12]) == [("heart_rate", "frozen")]
    assert results[13].accepted == {"heart_rate": 63}
    assert results[13].flags == ()


def test_frozen_needs_the_time_span_as_well_as_the_count() -> None:
    # A 5 s watch: 12 identical readings are only 55 s; frozen from 300 s (the 61st).
    c = PlausibilityChecker()
    results = run(c, [(5.0 * i, {"heart_rate": 62.0}) for i in range(62)])
    assert all(r.flags == () for r in results[:60])
    assert kinds(results[60]) == [("heart_rate", "frozen")]


def test_a_normal_integer_heart_rate_at_rest_is_never_frozen() -> None:
    # A smoothed integer watch at rest repeats values in short runs; a day of it stays clean.
    pattern = [62, 62, 62, 63, 63, 62, 61, 61, 61, 61, 62, 62, 63, 64, 63, 62, 62, 62, 62, 62]
    c = PlausibilityChecker()
    results = run(c, [(5.0 * i, {"heart_rate": float(pattern[i % 20])}) for i in range(17_280)])
    assert all(r.flags == () for r in results)


def test_a_steady_saturation_in_sleep_is_not_frozen_within_half_an_hour() -> None:
    c = PlausibilityChecker()
    results = run(c, [(60.0 * i, {"spo2": 97.0}) for i in range(32)])
    assert all(r.flags == () for r in results[:30])  # 30 readings span 29 minutes
    assert kinds(results[30]) == [("spo2", "frozen")]  # 31st: 30 minutes


def test_temperature_and_pressure_are_never_frozen() -> None:
    c = PlausibilityChecker()
    rows = [(60.0 * i, {"temperature_c": 36.6, "systolic_bp": 120.0}) for i in range(100)]
    assert all(r.flags == () for r in run(c, rows))


# --- late and duplicate readings ------------------------------------------------------------


def test_late_readings_are_judged_but_do_not_rewrite_history() -> None:
    c = PlausibilityChecker()
    results = run(
        c,
        [
            (100, {"spo2": 97}),
            (200, {"spo2": 97}),
            (150, {"spo2": 96}),  # late but close: accepted
            (190, {"spo2": 80}),  # late and 17 % off within 10 s: questioned
            (210, {"spo2": 98}),  # judged against the in-order 97 at t=200
        ],
    )
    assert [r.accepted for r in results] == [
        {"spo2": 97},
        {"spo2": 97},
        {"spo2": 96},
        {},
        {"spo2": 98},
    ]
    assert results[3].flags[0].detail == "late reading far from the current level"


def test_late_glitch_does_not_start_a_confirmation() -> None:
    c = PlausibilityChecker()
    results = run(
        c,
        [
            (10, {"heart_rate": 70}),
            (9, {"heart_rate": 150}),  # late: flagged, but not a pending level
            (11, {"heart_rate": 150}),  # first in-order jump
            (12, {"heart_rate": 150}),  # confirmation 1 of 2
        ],
    )
    assert [r.accepted for r in results] == [{"heart_rate": 70}, {}, {}, {}]


def test_redelivered_readings_do_not_extend_a_frozen_run() -> None:
    c = PlausibilityChecker()
    rows: list[tuple[float, dict[str, float]]] = []
    for i in range(11):
        rows += [(60.0 * i, {"heart_rate": 62.0})] * 3  # each delivered three times
    assert all(r.flags == () for r in run(c, rows))


# --- devices ------------------------------------------------------------------------------


def test_devices_have_separate_histories() -> None:
    c = PlausibilityChecker()
    c.check(reading(0, device="a", heart_rate=60), RANGES)
    c.check(reading(0, device="b", heart_rate=140), RANGES)
    assert c.check(reading(1, device="a", heart_rate=62), RANGES).accepted == {"heart_rate": 62}
    assert c.check(reading(1, device="b", heart_rate=139), RANGES).accepted == {"heart_rate": 139}


def test_forget_drops_the_history() -> None:
    c = PlausibilityChecker()
    c.check(reading(0, heart_rate=60), RANGES)
    c.forget("p1", "watch1")
    assert c.check(reading(1, heart_rate=140), RANGES).accepted == {"heart_rate": 140}


def test_flag_to_dict() -> None:
    f = Flag("heart_rate", "jump", 150.0, "changed faster than physiology allows")
    assert f.to_dict() == {
        "vital": "heart_rate",
        "kind": "jump",
        "value": 150.0,
        "detail": "changed faster than physiology allows",
    }


def test_non_numeric_vitals_are_ignored() -> None:
    r = PlausibilityChecker().check(
        Reading(person="p1", device="w", ts=T0, steps=40, consciousness="A", battery=50.0),
        RANGES,
    )
    assert r == PlausibilityResult({}, ())


def test_custom_ranges_are_used() -> None:
    narrow: Mapping[str, VitalRange] = {"heart_rate": VitalRange((60, 70), (50, 80), (40, 90))}
    r = PlausibilityChecker().check(reading(0, heart_rate=95), narrow)
    assert kinds(r) == [("heart_rate", "out_of_plausible")]
