"""The daily report as a person reads it (issue 14): device gaps a reader can take in, events
counted in the day of the readings that caused them, charts first with the events marked.

Same fixture day as test_report.py: Tuesday 2026-03-10, Europe/London on GMT, so local clock
time = UTC and the numbers can be checked on paper."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from agents.reports import (
    DayData,
    chart_data,
    compute_report,
    draw_charts,
    render_html,
    render_plots,
)
from agents.reports.daily import narrative_facts

TZ = "Europe/London"
DAY = date(2026, 3, 10)
T0 = datetime(2026, 3, 10, tzinfo=UTC).timestamp()
NEXT_DAY = T0 + 86_400


def at(h: int, m: int = 0, s: int = 0) -> float:
    return T0 + h * 3600 + m * 60 + s


def iso(h: int, m: int = 0) -> str:
    return f"2026-03-10T{h:02d}:{m:02d}:00+00:00"


def frame(ts: list[float], device: str | list[str], hr: float = 70.0) -> pd.DataFrame:
    devices = device if isinstance(device, list) else [device] * len(ts)
    return pd.DataFrame({"ts": ts, "device": devices, "heart_rate": [hr] * len(ts)})


def make(readings: pd.DataFrame, **kw: Any) -> DayData:
    args: dict[str, Any] = {"person": "alice", "day": DAY, "tz": TZ, "readings": readings}
    return DayData(**(args | kw))


# ---------------------------------------------------------------- device gaps


def test_a_device_reading_less_often_than_configured_has_no_gap_per_minute() -> None:
    # Configured for 5 s, reads once a minute all day: 3 x 5 s = 15 s would make every
    # minute a gap (1,441 rows before the fix); the 5-minute floor makes it none.
    minutes = frame([at(0) + 60 * i for i in range(1440)], "watch-1")
    r = compute_report(make(minutes, expected_interval_s=5.0, device_intervals={"watch-1": 5.0}))
    assert r["device_gaps"] == {
        "count": 0, "total_minutes": 0.0, "min_gap_minutes": 5.0, "listed": []
    }  # fmt: skip


def test_gaps_are_per_device_with_a_total_and_the_ten_longest_listed() -> None:
    # watch-1 (every 60 s) falls silent 12 times, every 2 hours from 00:30, for 120, 110,
    # ... 10 minutes. Between silences it reads every minute.
    ts: list[float] = []
    t = at(0)
    for k in range(12):
        silence_start = at(2 * k, 30)
        while t <= silence_start:
            ts.append(t)
            t += 60
        t = silence_start + (12 - k) * 10 * 60  # the next reading after the silence
    while t < NEXT_DAY:
        ts.append(t)
        t += 60
    # The cuff is configured for 12 h: two readings a day are no gap at all.
    cuff = [at(8), at(20)]
    readings = pd.concat([frame(ts, "watch-1"), frame(cuff, "cuff")], ignore_index=True)
    d = make(readings, expected_interval_s=60.0,
             device_intervals={"watch-1": 60.0, "cuff": 43_200.0})  # fmt: skip
    gaps = compute_report(d)["device_gaps"]
    assert gaps["count"] == 12
    assert gaps["total_minutes"] == 10.0 * sum(range(1, 13))  # 780
    # The 10 longest (120 .. 30 minutes, the first ten), listed in time order.
    assert [g["minutes"] for g in gaps["listed"]] == [10.0 * (12 - k) for k in range(10)]
    assert [g["start"] for g in gaps["listed"]] == [iso(2 * k, 30) for k in range(10)]
    assert {g["device"] for g in gaps["listed"]} == {"watch-1"}


def test_the_evening_report_does_not_count_the_rest_of_the_day_as_silence() -> None:
    # Made at 20:00 (the evening job): the last reading at 19:58 leaves no gap; before the
    # fix 19:58 -> midnight was a 242-minute gap.
    readings = frame([at(0) + 60 * i for i in range(20 * 60 - 1)], "watch-1")
    assert readings["ts"].iloc[-1] == at(19, 58)
    r = compute_report(make(readings, expected_interval_s=60.0, as_of=at(20)))
    assert r["device_gaps"]["count"] == 0
    # ...and a watch that stopped at 18:00 shows 18:00 -> 20:00 (120 min), not to midnight.
    r = compute_report(make(readings[readings["ts"] <= at(18)], as_of=at(20)))
    assert r["device_gaps"]["listed"] == [
        {"device": "watch-1", "start": iso(18), "end": iso(20), "minutes": 120.0}
    ]


# ---------------------------------------------------------------- events by reading time

# A watch offline all day syncs at 09:00 the next morning: the alerts its readings cause are
# stored then, but happened on the 10th. A soft SOS stored late on the 10th from a reading of
# the 9th belongs to the 9th.
LATE_EVENTS: list[dict[str, Any]] = [
    *({"type": "soft_sos", "ts": NEXT_DAY + 9 * 3600 + i, "reading_ts": at(14, i)}
      for i in range(19)),
    {"type": "retrospective_alert", "ts": at(3, 10), "reading_ts": at(3, 10),
     "transition": "opened"},
    {"type": "hard_sos", "ts": at(15)},  # a button: no reading, the time it was pressed
    {"type": "soft_sos", "ts": at(0, 5), "reading_ts": at(0) - 600},  # the 9th's
]  # fmt: skip


def test_events_count_in_the_day_of_their_readings() -> None:
    r = compute_report(make(frame([at(14, i) for i in range(19)], "watch-1"), events=LATE_EVENTS))
    sos = r["sos"]
    assert sos["soft"]["count"] == 19  # was 0: stored the next day
    assert sos["soft"]["times"][0] == iso(14, 0) and sos["soft"]["times"][-1] == iso(14, 18)
    assert sos["hard"] == {"count": 1, "times": [iso(15)]}
    assert sos["retrospective"] == {"count": 1, "times": [iso(3, 10)]}
    assert r["events"] == {"hard_sos": 1, "retrospective_alert": 1, "soft_sos": 19}
    # The next day's report does not count them again.
    nxt = compute_report(make(frame([], "watch-1"), day=date(2026, 3, 11), events=LATE_EVENTS))
    assert nxt["sos"]["soft"]["count"] == 0 and nxt["events"] == {}


# ---------------------------------------------------------------- charts first, marked


def test_chart_data_marks_events_at_their_reading_time_and_breaks_lines_at_gaps() -> None:
    ts = [at(8, m) for m in range(0, 30)] + [at(12, m) for m in range(0, 30)]
    d = make(frame(ts, "watch-1"), events=LATE_EVENTS, normal_ranges={"heart_rate": (50, 100)},
             expected_interval_s=60.0)  # fmt: skip
    c = chart_data(d)
    json.dumps(c, allow_nan=False)  # the console can take it as it is
    hr = c["series"]["heart_rate"]
    assert hr["normal"] == [50.0, 100.0] and set(c["series"]) == {"heart_rate"}
    # One break (value None) between 08:29 and 12:00, none elsewhere.
    assert [p for p in hr["points"] if p[1] is None] == [[(at(8, 29) + at(12)) / 2, None]]
    assert len(hr["points"]) == 61
    kinds = [(m["ts"], m["kind"]) for m in c["markers"]]
    assert kinds.count((at(14, 0), "soft_sos")) == 1 and len(kinds) == 19 + 1 + 1
    assert (at(15), "hard_sos") in kinds and (at(3, 10), "retrospective_alert") in kinds
    assert [(g["start"], g["end"]) for g in c["gaps"]] == [
        (at(0), at(8)), (at(8, 29), at(12)), (at(12, 29), NEXT_DAY)
    ]  # fmt: skip


def test_charts_are_drawn_from_chart_data_alone(tmp_path: Path) -> None:
    d = make(frame([at(8, m) for m in range(30)], "watch-1"), events=LATE_EVENTS)
    c = json.loads(json.dumps(chart_data(d)))  # what a browser would get
    paths = draw_charts(c, tmp_path)
    assert [p.name for p in paths] == ["alice_2026-03-10_heart_rate.png"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_page_puts_charts_first_and_says_times_as_a_reader_does(tmp_path: Path) -> None:
    ts = [at(8, m) for m in range(0, 30)] + [at(12, m) for m in range(0, 30)]
    d = make(frame(ts, "watch-1"), events=LATE_EVENTS, expected_interval_s=60.0,
             name="Alice Jones")  # fmt: skip
    r = compute_report(d)
    page = render_html(r, render_plots(d, tmp_path), None)
    assert "<h1>Daily health report - Alice Jones - Tuesday 10 March 2026</h1>" in page
    h2 = re.findall(r"<h2>([^<]*)</h2>", page)
    assert h2[0] == "Charts" and h2.index("Charts") < h2.index("Vitals") < h2.index("Alerts")
    assert page.index('<p class="summary">') < page.index("<h2>Charts</h2>")
    assert "soft SOS 19" in page and 'alt="Chart: Heart rate (bpm)"' in page
    # Times as "08:29", not ISO strings; the gaps table has the device.
    assert "2026-03-10T" not in page
    assert '<td>watch-1</td><td>08:29</td><td>12:00</td><td class="num">211.0</td>' in page
    assert "3 gaps, 23 h 02 min in all" in page  # 480 + 211 + 691 = 1382 minutes
    # Empty sections say so in words instead of a table of headers.
    assert "No sleep was recorded." in page and "No doses were scheduled." in page
    # Read on a phone too: laid out for its width, wide tables scroll on their own.
    assert 'name="viewport" content="width=device-width' in page
    assert page.count('<div class="scroll"><table>') == page.count("<table>")
    assert "<td>12:29</td><td>11 Mar 00:00</td>" in page


def test_the_narrator_is_given_the_sos_counts() -> None:
    # It read sos.soft_count, which the report never had: the model was told "None".
    r = compute_report(make(frame([at(14, i) for i in range(19)], "watch-1"), events=LATE_EVENTS))
    facts = narrative_facts(r)
    assert (facts["soft_sos"], facts["hard_sos"], facts["alerts_in_synced_data"]) == (19, 1, 1)
    assert facts["device_gaps"] == {"count": 2, "total_minutes": 1422.0}  # 00:00-14:00, 14:18-24:00
