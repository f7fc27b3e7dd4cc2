"""The daily report against a day computed by hand.

The fixture day is Tuesday 2026-03-10 in Europe/London, which is on GMT (UTC+0) then, so
local clock time = UTC and the arithmetic below can be checked on paper.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from agents.reports import (
    DayData,
    compute_report,
    day_bounds,
    narrative_ok,
    numbers_in,
    render_html,
    render_plots,
)

TZ = "Europe/London"
DAY = date(2026, 3, 10)
T0 = datetime(2026, 3, 10, tzinfo=UTC).timestamp()  # local midnight (GMT)
INTERVAL = 300.0  # 5 min; hold cap and gap threshold = 3 x 5 = 15 min
NAN = math.nan
RANGES = {
    "heart_rate": (50.0, 100.0),
    "spo2": (94.0, 100.0),
    "temperature_c": (36.0, 37.5),
    "respiratory_rate": (12.0, 20.0),
}


def at(h: int, m: int = 0, base: float = T0) -> float:
    return base + h * 3600 + m * 60


def day_frame() -> pd.DataFrame:
    """12 readings: 08:00..08:25 every 5 min, a gap, then 09:30..09:55 every 5 min."""
    times = [at(8, m) for m in range(0, 30, 5)] + [at(9, m) for m in range(30, 60, 5)]
    hr = [70, 72, 74, 76, 120, 78, 80, 82, 84, 86, 88, 90]  # 120 at 08:20 is out of range
    spo2 = [97, 97, 96, 96, 96, 88, 95, 95, 96, 96, 97, 97]  # 88 at 08:25 is out of range
    temp = [36.8, NAN, NAN, NAN, NAN, NAN, 37.0, NAN, NAN, NAN, NAN, 37.3]
    news2 = [0, 0, 0, 1, 3, 5, 2, 1, 1, 0, 0, 0]  # max 5 at 08:25
    anomaly = [0.1, 0.1, 0.2, 0.3, 0.75, 0.4, NAN, 0.2, 0.5, 0.1, 0.1, 0.1]  # 0.75 at 08:20
    return pd.DataFrame(
        {
            "ts": times,
            "device": ["watch-1"] * 12,
            "heart_rate": hr,
            "spo2": spo2,
            "respiratory_rate": [NAN] * 12,
            "systolic_bp": [NAN] * 12,
            "diastolic_bp": [NAN] * 12,
            "temperature_c": temp,
            "steps": [10] * 12,
            "news2_total": news2,
            "anomaly": anomaly,
        }
    )


EVENTS: list[dict[str, Any]] = [
    {"type": "soft_sos", "ts": at(8, 21)},
    {"type": "hard_sos", "ts": at(8, 26)},
    {"type": "alert_cleared", "ts": at(8, 40)},
    {"type": "anomaly", "ts": at(8, 20), "score": 0.75},  # the same one as the reading
    {"type": "anomaly", "ts": at(14, 0), "score": 0.9},
    {"type": "soft_sos", "ts": at(-1)},  # the evening before: not this day's
    # Found in late data (a watch synced the night later): listed, nobody was woken.
    {"type": "retrospective_alert", "ts": at(3, 10), "transition": "opened"},
    {"type": "retrospective_alert", "ts": at(4, 0), "transition": "cleared"},
]
ADHERENCE: list[dict[str, Any]] = [
    {"medication": "Metformin 500mg", "scheduled": at(8), "status": "taken"},
    {"medication": "Metformin 500mg", "scheduled": at(20), "status": "missed"},
    {"medication": "Aspirin", "scheduled": at(9), "status": "skipped"},
    {"medication": "Vitamin D", "scheduled": at(21), "status": "pending"},
]
SLEEP: list[dict[str, Any]] = [
    {"start": at(-1), "end": at(6, 30), "quality": 0.8},  # 23:00 -> 06:30 = 450 min
    {"start": at(14), "end": at(14, 30)},  # nap, 30 min
]


def make(readings: pd.DataFrame | None = None, **kw: Any) -> DayData:
    args: dict[str, Any] = {
        "person": "alice",
        "day": DAY,
        "tz": TZ,
        "readings": day_frame() if readings is None else readings,
        "events": EVENTS,
        "normal_ranges": RANGES,
        "adherence": ADHERENCE,
        "sleep": SLEEP,
        "expected_interval_s": INTERVAL,
    }
    return DayData(**(args | kw))


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    return compute_report(make())


def iso(h: int, m: int = 0) -> str:
    return f"2026-03-10T{h:02d}:{m:02d}:00+00:00"


def test_heart_rate_by_hand(report: dict[str, Any]) -> None:
    # sum = 70+72+74+76+120+78+80+82+84+86+88+90 = 1000, mean = 1000/12 = 83.33 -> 83.3
    # holds: 08:00..08:20 five x 5 min = 25; 08:25 -> next 09:30 capped at 15; 09:30..09:50
    #   five x 5 = 25; 09:55 capped at 15 -> monitored 80 min
    # out of range: 120 at 08:20 holds 5 min -> 5 min; 5/80 = 6.25% -> 6.3 (half-up)
    assert report["vitals"]["heart_rate"] == {
        "min": 70.0,
        "mean": 83.3,
        "max": 120.0,
        "n": 12,
        "out_of_range_minutes": 5.0,
        "out_of_range_pct": 6.3,
        "monitored_minutes": 80.0,
        "normal_range": [50.0, 100.0],
    }


def test_spo2_by_hand(report: dict[str, Any]) -> None:
    # sum = 97+97+96+96+96+88+95+95+96+96+97+97 = 1146, mean = 95.5
    # out of range: 88 at 08:25 holds until min(09:30, 08:25+15) = 08:40 -> 15 min
    # 15/80 = 18.75% -> 18.8
    assert report["vitals"]["spo2"] == {
        "min": 88.0,
        "mean": 95.5,
        "max": 97.0,
        "n": 12,
        "out_of_range_minutes": 15.0,
        "out_of_range_pct": 18.8,
        "monitored_minutes": 80.0,
        "normal_range": [94.0, 100.0],
    }


def test_sparse_and_missing_vitals(report: dict[str, Any]) -> None:
    # temperature at 08:00, 09:30, 09:55 only: each holds 15 min (capped) -> 45 monitored
    # mean = (36.8+37.0+37.3)/3 = 37.0333 -> 37.03, none outside 36.0..37.5
    assert report["vitals"]["temperature_c"] == {
        "min": 36.8,
        "mean": 37.03,
        "max": 37.3,
        "n": 3,
        "out_of_range_minutes": 0.0,
        "out_of_range_pct": 0.0,
        "monitored_minutes": 45.0,
        "normal_range": [36.0, 37.5],
    }
    rr = report["vitals"]["respiratory_rate"]
    assert rr["n"] == 0 and rr["mean"] is None and rr["out_of_range_minutes"] is None
    # no normal range given for blood pressure
    assert report["vitals"]["systolic_bp"]["normal_range"] is None


def test_day_sections_by_hand(report: dict[str, Any]) -> None:
    assert report["date"] == "2026-03-10"
    assert report["hours"] == 24.0
    assert report["readings"] == 12
    assert report["steps"] == {"total": 120, "n": 12}
    assert report["news2_max"] == {"value": 5, "time": iso(8, 25)}
    # reading at 08:20 (0.75) and its duplicate event count once; the 14:00 event adds one;
    # 0.5 at 09:40 is below 0.6
    assert report["anomalies"] == {"count": 2, "max_score": 0.9, "times": [iso(8, 20), iso(14)]}
    assert report["sos"] == {
        "soft": {"count": 1, "times": [iso(8, 21)]},
        "hard": {"count": 1, "times": [iso(8, 26)]},
        "low": {"count": 0, "times": []},  # low-priority alerts (advisory)
        "usual": {"count": 0, "times": []},  # mild, but inside the person's usual range
        "retrospective": {"count": 1, "times": [iso(3, 10)]},
    }
    assert report["events"] == {
        "alert_cleared": 1, "anomaly": 2, "hard_sos": 1, "retrospective_alert": 2, "soft_sos": 1,
    }  # fmt: skip
    # 00:00 -> 08:00 = 480 min; 08:25 -> 09:30 = 65 min; 09:55 -> 24:00 = 845 min
    assert report["device_gaps"] == {
        "count": 3,
        "total_minutes": 1390.0,
        "min_gap_minutes": 5.0,
        "listed": [
            {"device": "watch-1", "start": iso(0), "end": iso(8), "minutes": 480.0},
            {"device": "watch-1", "start": iso(8, 25), "end": iso(9, 30), "minutes": 65.0},
            {"device": "watch-1", "start": iso(9, 55), "end": "2026-03-11T00:00:00+00:00",
             "minutes": 845.0},
        ],
    }  # fmt: skip
    assert report["sleep"] == {
        "total_minutes": 480.0,
        "sessions": [
            {
                "start": "2026-03-09T23:00:00+00:00",
                "end": iso(6, 30),
                "minutes": 450.0,
                "quality": 0.8,
            },
            {"start": iso(14), "end": iso(14, 30), "minutes": 30.0},
        ],
    }
    meds = report["adherence"]["medications"]
    assert meds["Metformin 500mg"] == {
        "scheduled": 2,
        "taken": 1,
        "missed": 1,
        "skipped": 0,
        "snoozed": 0,
        "pending": 0,
        "rate": 0.5,
    }
    assert meds["Aspirin"]["skipped"] == 1 and meds["Aspirin"]["rate"] == 0.0
    assert meds["Vitamin D"]["pending"] == 1 and meds["Vitamin D"]["rate"] is None
    # overall: 1 taken of 3 decided (the pending one is not) -> 0.333
    assert report["adherence"]["overall"]["rate"] == 0.333
    # no previous days in this frame
    assert report["vs_previous_7_days"]["heart_rate"]["days"] == 0
    assert report["vs_previous_7_days"]["heart_rate"]["diff"] is None
    json.dumps(report, allow_nan=False)  # serialisable, no NaN


def test_low_priority_and_usual_for_them_are_counted_apart() -> None:
    events = [
        {"type": "advisory", "ts": at(10), "priority": "low", "transition": "opened"},
        {"type": "advisory", "ts": at(11), "priority": "information", "transition": "opened"},
        {"type": "advisory", "ts": at(12, 5), "priority": "information", "transition": "opened"},
    ]
    sos = compute_report(make(events=events))["sos"]
    assert sos["low"] == {"count": 1, "times": [iso(10)]}
    assert sos["usual"] == {"count": 2, "times": [iso(11), iso(12, 5)]}


def test_day_without_readings_has_no_gaps() -> None:
    empty = day_frame().iloc[0:0]
    r = compute_report(make(empty))
    assert r["readings"] == 0 and r["news2_max"] is None
    assert r["device_gaps"] == {
        "count": 0, "total_minutes": 0.0, "min_gap_minutes": 5.0, "listed": []
    }  # fmt: skip
    assert r["anomalies"]["count"] == 2  # the 08:20 and 14:00 events still count


def prev_day(k: int, hr: float, spo2: float, temp: float | None) -> pd.DataFrame:
    """Two readings at 12:00 and 12:05 on the k-th day before DAY, daily mean as given."""
    base = T0 - k * 86400
    return pd.DataFrame(
        {
            "ts": [at(12, 0, base), at(12, 5, base)],
            "heart_rate": [hr - 1, hr + 1],
            "spo2": [spo2, spo2],
            "temperature_c": [temp, temp] if temp is not None else [NAN, NAN],
        }
    )


def test_vs_previous_7_days() -> None:
    hr_means = [70, 72, 71, 73, 70, 72, 71]  # days -1 .. -7
    spo2_means = [95, 96, 94, 97, 95, 96, 95]
    temps = [36.9, 37.0, None, None, None, None, None]  # only 2 days -> not enough
    frames = [
        prev_day(k + 1, h, s, t)
        for k, (h, s, t) in enumerate(zip(hr_means, spo2_means, temps, strict=True))
    ]
    frames.append(prev_day(8, 200, 50, 40.0))  # 8 days before: outside the window
    r = compute_report(make(pd.concat([day_frame(), *frames], ignore_index=True)))
    # day itself unchanged by the extra rows
    assert r["vitals"]["heart_rate"]["mean"] == 83.3 and r["readings"] == 12
    vs = r["vs_previous_7_days"]
    # HR: baseline 499/7 = 71.2857 -> 71.3; diff 83.3333 - 71.2857 = 12.0476 -> 12.05
    # deviations^2 sum = 7.4286, /6 = 1.2381, sd = 1.1127 -> 1.11; 12.05 > 2.23 -> flag
    assert vs["heart_rate"] == {
        "days": 7,
        "baseline_mean": 71.3,
        "diff": 12.05,
        "sd": 1.11,
        "flag": True,
    }
    # SpO2: baseline 668/7 = 95.4286; diff 95.5 - 95.4286 = 0.0714 -> 0.07
    # sd = sqrt(((.4286^2*3)+(.5714^2*2)+1.4286^2+1.5714^2)/6) = sqrt(5.7143/6) = 0.9759 -> 0.98
    assert vs["spo2"] == {"days": 7, "baseline_mean": 95.4, "diff": 0.07, "sd": 0.98, "flag": False}
    # temperature: 2 previous days < 3 -> null
    assert vs["temperature_c"] == {
        "days": 2,
        "baseline_mean": None,
        "diff": None,
        "sd": None,
        "flag": None,
    }
    assert r["baseline_from"] == "2026-03-03" and r["baseline_to"] == "2026-03-09"


def test_dst_spring_forward_day_has_23_hours() -> None:
    day = date(2026, 3, 29)  # clocks go 01:00 GMT -> 02:00 BST
    start, end = day_bounds(day, TZ)
    assert start == datetime(2026, 3, 29, 0, tzinfo=UTC).timestamp()
    assert end == datetime(2026, 3, 29, 23, tzinfo=UTC).timestamp()  # 00:00 BST on the 30th
    ts = [
        datetime(2026, 3, 28, 23, 30, tzinfo=UTC).timestamp(),  # 23:30 GMT on the 28th: out
        datetime(2026, 3, 29, 0, 0, tzinfo=UTC).timestamp(),  # 00:00 GMT: first of the day
        datetime(2026, 3, 29, 22, 30, tzinfo=UTC).timestamp(),  # 23:30 BST: last of the day
        datetime(2026, 3, 29, 23, 30, tzinfo=UTC).timestamp(),  # 00:30 BST on the 30th: out
    ]
    df = pd.DataFrame({"ts": ts, "heart_rate": [200.0, 60.0, 80.0, 200.0]})
    r = compute_report(make(df, day=day, events=[], sleep=[], adherence=[]))
    assert r["hours"] == 23.0
    assert r["day_start"] == "2026-03-29T00:00:00+00:00"
    assert r["day_end"] == "2026-03-30T00:00:00+01:00"
    assert r["vitals"]["heart_rate"]["n"] == 2 and r["vitals"]["heart_rate"]["max"] == 80.0
    # 00:00 -> 23:30 BST is 22.5 elapsed hours = 1350 min; 23:30 BST -> midnight = 30 min
    gaps = r["device_gaps"]
    assert (gaps["count"], gaps["total_minutes"]) == (2, 1380.0)
    assert gaps["listed"] == [
        {"device": "", "start": "2026-03-29T00:00:00+00:00", "end": "2026-03-29T23:30:00+01:00",
         "minutes": 1350.0},
        {"device": "", "start": "2026-03-29T23:30:00+01:00", "end": "2026-03-30T00:00:00+01:00",
         "minutes": 30.0},
    ]  # fmt: skip


def test_dst_fall_back_day_has_25_hours() -> None:
    r = compute_report(make(day_frame().iloc[0:0], day=date(2026, 10, 25), events=[]))
    assert r["hours"] == 25.0


def test_plots_are_pngs(tmp_path: Path) -> None:
    paths = render_plots(make(), tmp_path / "plots")
    names = sorted(p.name for p in paths)
    # only the vitals with data that day
    assert names == [
        "alice_2026-03-10_heart_rate.png",
        "alice_2026-03-10_spo2.png",
        "alice_2026-03-10_temperature_c.png",
    ]
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_html_escapes_and_embeds(tmp_path: Path) -> None:
    evil = "<script>alert('x')</script>"
    adherence = [{"medication": evil, "scheduled": at(8), "status": "taken"}]
    d = make(adherence=adherence, person="bob & <b>co</b>")
    r = compute_report(d)
    plots = render_plots(d, tmp_path)
    page = render_html(r, plots, "Hello <img src=x onerror=alert(1)>")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<b>co</b>" not in page and "bob &amp; &lt;b&gt;co&lt;/b&gt;" in page
    assert "<img src=x" not in page
    assert page.count('src="data:image/png;base64,') == len(plots) == 3
    assert "http" not in page  # self-contained


# ---------------------------------------------------------------- narrative


def test_numbers_in() -> None:
    text = (
        "On Tuesday 10 March 2026 your SpO2 fell to 88% at 08:25 and NEWS2 reached 5; "
        "you walked 1,200 steps, took your 2nd dose at 8pm, temperature 37.03, "
        "heart rate 12.05 higher, two SOS alerts."
    )
    assert numbers_in(text) == [88.0, 5.0, 1200.0, 37.03, 12.05]


def test_narrative_built_from_report_is_accepted(report: dict[str, Any]) -> None:
    hr = report["vitals"]["heart_rate"]
    spo2 = report["vitals"]["spo2"]
    text = (
        f"On Tuesday 10 March 2026 your heart rate averaged {hr['mean']} bpm "
        f"(between {hr['min']:.0f} and {hr['max']:.0f}), and was above your normal range "
        f"for {hr['out_of_range_minutes']:.0f} minutes ({hr['out_of_range_pct']}% of the time). "
        f"Your lowest oxygen was {spo2['min']:.0f}% at 08:25, when NEWS2 peaked at 5. "
        "There was one soft SOS at 08:21 and one hard SOS at 8:26 am. The watch sent nothing "
        "for 65 minutes in the morning. You took 50% of your Metformin 500mg doses "
        "and 33.3% of all decided doses. You slept 480 minutes. Mean heart rate was 83 over 12 readings."
    )
    assert narrative_ok(text, report)


@pytest.mark.parametrize(
    "bad",
    [
        "Your lowest oxygen was 85% this morning.",  # it was 88
        "Your heart rate averaged 83.4 bpm.",  # 83.3
        "The watch was off for 66 minutes.",  # 65
        "You had a soft SOS at 09:15.",  # no such time
        "On 11 March 2026 all was well.",  # not the report's date
        "Your heart rate rose by 10 bpm.",  # a bare 10 is a quantity, not the date
    ],
)
def test_narrative_with_invented_number_is_rejected(report: dict[str, Any], bad: str) -> None:
    assert not narrative_ok(bad, report)
