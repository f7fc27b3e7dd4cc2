"""Confirmation that fits the sensor (gateway/monitor/sustain.py): what a wrist's readings
agree on, how long the windows are, and what is severe enough for the short one."""

from __future__ import annotations

import pytest

from gateway.monitor.context import Context
from gateway.monitor.sustain import (
    K_FAST,
    K_SLOW,
    LONG_ASLEEP_S,
    LONG_AWAKE_S,
    Sustainer,
    agreed,
    severe,
    window,
)

AWAKE = Context("rest", False)
ASLEEP = Context("rest", True)
T0 = 1_790_000_000.0
MID = {"spo2": 97.5, "heart_rate": 75.0}


def test_agreed_needs_m_readings_at_or_beyond_it() -> None:
    assert agreed([88], 2, 97.5) is None  # one reading is not agreement
    assert agreed([88, 97], 2, 97.5) == 97  # the two disagree: the side nearer normal
    assert agreed([88, 89], 2, 97.5) == 89
    assert agreed([97, 88, 89], 2, 97.5) == 89  # two of three at or below 89
    assert agreed([97, 88, 97], 2, 97.5) == 97  # one odd reading never moves it
    assert agreed([90, 91, 92, 93, 94], 3, 97.5) == 92  # a full window: the median


def test_agreed_works_on_both_sides() -> None:
    assert agreed([140, 150, 70], 2, 75.0) == 140  # two of three at or above 140
    assert agreed([140, 70, 72], 2, 75.0) == 72


@pytest.mark.parametrize(
    ("interval", "ctx", "short", "long"),
    [
        (5.0, AWAKE, K_FAST, K_FAST),  # a fast stream awake: today's timing
        (20.0, AWAKE, K_FAST, K_FAST),
        (60.0, AWAKE, K_SLOW, int(LONG_AWAKE_S // 60) + 1),
        (60.0, ASLEEP, K_SLOW, int(LONG_ASLEEP_S // 60) + 1),
        (5.0, ASLEEP, K_FAST, 241),  # capped at K_MAX readings
    ],
)
def test_window_sizes(interval: float, ctx: Context, short: int, long: int) -> None:
    assert window(interval, ctx) == (short, long)


def test_severe_is_past_a_limit_by_about_one_readings_error() -> None:
    spo2 = (92.0, 100.0)  # critical low when <= 91
    assert not severe(91, spo2, "spo2", asleep=False)
    assert not severe(90, spo2, "spo2", asleep=False)
    assert severe(89, spo2, "spo2", asleep=False)
    # Asleep one and a half times as far: nocturnal dips are normal.
    assert not severe(89, spo2, "spo2", asleep=True)
    assert severe(88, spo2, "spo2", asleep=True)
    hr = (41.0, 130.0)
    assert severe(37, hr, "heart_rate", asleep=False) and not severe(
        38, hr, "heart_rate", asleep=False
    )
    assert severe(134, hr, "heart_rate", asleep=False)


def feed(
    s: Sustainer,
    values: list[float],
    *,
    interval: float = 60.0,
    ctx: Context = AWAKE,
    vital: str = "spo2",
    start: float = T0,
) -> list[float | None]:
    out = []
    for i, x in enumerate(values):
        got = s.values("p", "w", {vital: x}, start + i * interval, interval=interval, ctx=ctx,
                       mids=MID, limits={vital: (92.0, 100.0)})  # fmt: skip
        out.append(got.alarm.get(vital))
    return out


def test_a_single_artefact_never_reaches_the_alarms() -> None:
    s = Sustainer()
    got = feed(s, [97] * 20 + [80] + [97] * 20)
    assert min(v for v in got if v is not None) == 97


def test_a_severe_drop_counts_on_the_short_window() -> None:
    s = Sustainer()
    got = feed(s, [97] * 20 + [85] * 6)
    # Three of the last five readings at 85: the third one after the drop.
    assert got[20:23] == [97, 97, 85]


def test_a_value_near_its_limit_waits_for_the_long_window() -> None:
    s = Sustainer()
    got = feed(s, [96] * 20 + [91] * 20)
    first = next(i for i, v in enumerate(got) if v is not None and v <= 91)
    # The majority of 15 minutes of readings: the 9th reading at 91 (eight minutes on).
    assert first - 20 == 8


def test_asleep_a_brief_dip_is_not_an_alarm_but_a_deep_or_long_fall_is() -> None:
    s = Sustainer()
    got = feed(s, [95] * 30 + [90, 89, 89, 90] + [95] * 30, ctx=ASLEEP)
    assert min(v for v in got if v is not None) == 95  # four minutes at 89-90
    s = Sustainer()
    got = feed(s, [95] * 30 + [87, 86, 87] + [95] * 30, ctx=ASLEEP)
    assert min(v for v in got if v is not None) == 87  # three readings at 87 or below: severe
    s = Sustainer()
    got = feed(s, [95] * 30 + [90] * 20, ctx=ASLEEP)
    assert got[-1] == 90  # 90 all night long: the half-hour window agrees


def test_after_a_gap_the_window_starts_again_and_the_value_is_unknown() -> None:
    s = Sustainer()
    feed(s, [97] * 5)
    later = feed(s, [97, 97], start=T0 + 3 * 3600)
    assert later == [None, None]  # K = 5: three readings must agree again


def test_readings_taken_while_walking_do_not_count_at_rest() -> None:
    s = Sustainer()
    walking = Context("active", False)
    feed(s, [130] * 10, ctx=walking, vital="heart_rate")
    got = feed(s, [70] * 3, ctx=AWAKE, vital="heart_rate", start=T0 + 600)
    assert got[-1] == 70
