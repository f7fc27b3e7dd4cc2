"""Nights from the watches' stage minutes (agents/reports/sleep.py), and the report
that shows them: before this, a report read only {start, end} sleep records that no watch
sends, and said "No sleep was recorded" for every day."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from agents.reports.sleep import SESSION_BREAK_S, sessions_ending_in, sleep_sessions
from agents.reports.stats import _sleep


def ts(h: int, m: int = 0, day: int = 10) -> float:
    return datetime(2026, 3, day, h, m, tzinfo=UTC).timestamp()


def night(start: float, minutes: int, stage: str = "light", every: int = 5) -> list[dict[str, Any]]:
    """One reading every `every` minutes, each with `every` minutes in `stage`."""
    return [{"ts": start + (i + 1) * every * 60, "sleep": {stage: float(every)}}
            for i in range(minutes // every)]  # fmt: skip


def test_a_night_is_one_session_with_its_stages_and_minutes_asleep() -> None:
    rows = (night(ts(23, day=9), 120, "light") + night(ts(1), 60, "deep")
            + [{"ts": ts(2, 10), "sleep": {"awake": 10.0}}]  # woke for 10 minutes
            + night(ts(2, 10), 60, "rem"))  # fmt: skip
    [s] = sleep_sessions(rows)
    assert s["start"] == ts(23, day=9) and s["end"] == ts(3, 10)
    assert s["minutes"] == 240.0  # asleep, not the 250 on the clock
    assert s["stages"] == {"deep": 60.0, "light": 120.0, "rem": 60.0, "awake": 10.0}


def test_a_long_waking_or_silence_splits_sessions_and_the_morning_is_not_the_night() -> None:
    gap = int(SESSION_BREAK_S / 60) + 5
    rows: list[dict[str, Any]] = [
        *night(ts(0), 60),
        {"ts": ts(1, 30), "sleep": {"awake": 30.0}},
        *night(ts(1, gap), 30),
        {"ts": ts(8), "sleep": {"awake": 5.0}},
    ]
    a, b = sleep_sessions(rows)
    assert a["end"] == ts(1) and b["start"] == ts(1, gap)
    # The 30 awake minutes between them and the morning's are in neither night.
    assert a["stages"]["awake"] == 0.0 and b["stages"]["awake"] == 0.0


def test_odd_values_are_not_minutes_and_non_sleep_readings_are_skipped() -> None:
    rows: list[dict[str, Any]] = [
        {"ts": ts(1), "heart_rate": 60},
        {"ts": ts(1, 5), "sleep": {"deep": float("nan"), "light": 5.0, "rem": -3, "awake": True}},
        {"ts": ts(1, 10), "sleep": None},
        {"ts": "bad", "sleep": {"light": 5.0}},
    ]
    [s] = sleep_sessions(rows)
    assert s["minutes"] == 5.0 and s["stages"]["awake"] == 0.0


def test_a_night_counts_on_the_day_it_ends_and_once() -> None:
    sessions = sleep_sessions(night(ts(23, day=9), 450))  # 23:00 -> 06:30
    day9 = sessions_ending_in(sessions, ts(0, day=9), ts(0, day=10))
    day10 = sessions_ending_in(sessions, ts(0, day=10), ts(0, day=11))
    assert day9 == [] and len(day10) == 1
    out = _sleep(day10, "UTC")
    assert out["total_minutes"] == 450.0
    assert out["stages"] == {"deep": 0.0, "light": 450.0, "rem": 0.0, "awake": 0.0}
    assert out["sessions"][0]["start"].startswith(date(2026, 3, 9).isoformat() + "T23:00")
