"""Weekly, monthly and every-N-days reminders: the next fire times from the scheduler's own
CronTrigger (across both DST changes), the job surviving the SQLite job store, per-time doses,
and adherence on the days a medicine is not taken."""

from __future__ import annotations

import pickle
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from apscheduler.triggers.cron import CronTrigger

from agents.medication.prescription import Prescription, parse_prescription
from agents.medication.reminders import (
    DoseLedger,
    EveryNDays,
    expected_on,
    fire_times,
    reminder_detail,
    slot_of,
    triggers,
    with_expected,
)
from gateway.base.clock import ManualClock
from gateway.base.db import Database

LONDON = ZoneInfo("Europe/London")


def rx(text: str) -> Prescription:
    r = parse_prescription(text)
    assert r.prescription is not None, r.questions
    return r.prescription


def local(ds: list[datetime]) -> list[str]:
    return [d.astimezone(LONDON).strftime("%a %d/%m %H:%M") for d in ds]


def test_weekly_fires_only_on_its_day_across_the_spring_change() -> None:
    # 29 March 2026: the clocks go forward. Mondays at 08:00 local, before and after.
    got = fire_times(rx("Methotrexate 10 mg once a week on Monday"), LONDON, date(2026, 3, 18),
                     datetime(2026, 4, 14, tzinfo=LONDON))  # fmt: skip
    assert local(got) == ["Mon 23/03 08:00", "Mon 30/03 08:00", "Mon 06/04 08:00",
                          "Mon 13/04 08:00"]  # fmt: skip
    assert [d.astimezone(UTC).hour for d in got] == [8, 7, 7, 7]  # GMT, then BST
    trig = triggers(rx("Methotrexate 10 mg once a week on Monday"), LONDON, date(2026, 3, 18))
    assert len(trig) == 1 and isinstance(trig[0], CronTrigger)
    assert "day_of_week='mon'" in str(trig[0])


def test_weekly_across_the_autumn_change_and_for_a_number_of_weeks() -> None:
    got = fire_times(rx("Alendronic acid 70 mg once a week on Sunday before breakfast for 4 weeks"),
                     LONDON, date(2026, 10, 14), datetime(2026, 12, 31, tzinfo=LONDON))  # fmt: skip
    # 25 October 2026: the clocks go back. Four weeks from Wednesday 14th: four Sundays.
    assert local(got) == ["Sun 18/10 07:30", "Sun 25/10 07:30", "Sun 01/11 07:30",
                          "Sun 08/11 07:30"]  # fmt: skip
    assert [d.astimezone(UTC).hour for d in got] == [6, 7, 7, 7]


def test_several_weekdays_and_times() -> None:
    got = fire_times(rx("Co-trimoxazole 960 mg twice daily on Monday, Wednesday and Friday"),
                     LONDON, date(2026, 3, 27), datetime(2026, 4, 2, tzinfo=LONDON))  # fmt: skip
    assert local(got) == ["Fri 27/03 08:00", "Fri 27/03 20:00", "Mon 30/03 08:00",
                          "Mon 30/03 20:00", "Wed 01/04 08:00", "Wed 01/04 20:00"]  # fmt: skip


def test_monthly_on_its_day() -> None:
    got = fire_times(rx("Ibandronic acid 150 mg once a month on the 1st"), LONDON,
                     date(2026, 1, 15), datetime(2026, 5, 2, tzinfo=LONDON))  # fmt: skip
    assert local(got) == ["Sun 01/02 08:00", "Sun 01/03 08:00", "Wed 01/04 08:00",
                          "Fri 01/05 08:00"]  # fmt: skip


def test_every_two_weeks_from_the_first_weekday_and_alternate_days() -> None:
    got = fire_times(rx("Dulaglutide 1.5 mg every 2 weeks on Friday"), LONDON, date(2026, 3, 18),
                     datetime(2026, 5, 2, tzinfo=LONDON))  # fmt: skip
    assert local(got) == ["Fri 20/03 08:00", "Fri 03/04 08:00", "Fri 17/04 08:00",
                          "Fri 01/05 08:00"]  # fmt: skip
    got = fire_times(rx("Vitamin D 800 units every other day at 10pm"), LONDON, date(2026, 3, 27),
                     datetime(2026, 4, 3, tzinfo=LONDON))  # fmt: skip
    assert local(got) == ["Fri 27/03 22:00", "Sun 29/03 22:00", "Tue 31/03 22:00",
                          "Thu 02/04 22:00"]  # fmt: skip


def test_every_n_days_survives_pickling_like_a_stored_job() -> None:
    (trig,) = triggers(rx("Dulaglutide 1.5 mg every 2 weeks on Friday"), LONDON, date(2026, 3, 18))
    assert isinstance(trig, EveryNDays)
    again = pickle.loads(pickle.dumps(trig))
    now = datetime(2026, 3, 21, tzinfo=LONDON)
    assert again.get_next_fire_time(None, now) == trig.get_next_fire_time(None, now)
    assert local([again.get_next_fire_time(None, now)]) == ["Fri 03/04 08:00"]


def test_per_time_doses_are_reminded_with_their_own_amount() -> None:
    p = rx("Prednisolone 40 mg in the morning and 20 mg at lunchtime")
    assert reminder_detail(p, 0, 0, LONDON) == "Prednisolone 40 mg"
    assert reminder_detail(p, 1, 0, LONDON) == "Prednisolone 20 mg"
    noon = datetime(2026, 3, 30, 12, tzinfo=LONDON).timestamp()
    assert slot_of(p, noon, LONDON) == 1
    assert reminder_detail(p, None, noon, LONDON) == "Prednisolone 20 mg"  # an older job
    assert reminder_detail(rx("Metformin 500 mg tablets, two twice daily"), 1, 0, LONDON) == (
        "Metformin 2 tablets (1000 mg)"
    )


def test_expected_doses_on_dose_days_and_days_off(tmp_path: Path) -> None:
    weekly = rx("Methotrexate 10 mg once a week on Monday")
    daily = rx("Metformin 500 mg BD")
    start = date(2026, 3, 18)
    assert len(expected_on(weekly, LONDON, start, date(2026, 3, 30))) == 1  # a Monday (BST)
    assert expected_on(weekly, LONDON, start, date(2026, 3, 31)) == []
    assert expected_on(weekly, LONDON, start, date(2026, 3, 16)) == []  # before it started
    clock = ManualClock(datetime(2026, 3, 31, 9, tzinfo=LONDON).timestamp())
    led = DoseLedger(Database(tmp_path / "d.db"), now=clock.now, tz=LONDON)
    led.due("ann", "metformin", datetime(2026, 3, 31, 8, tzinfo=LONDON).timestamp())
    schedules = [(weekly, start), (daily, start)]
    tuesday = with_expected(led.adherence("ann", date(2026, 3, 31)), schedules, LONDON,
                            date(2026, 3, 31))  # fmt: skip
    assert "methotrexate" not in tuesday  # not a dose day: nothing expected, nothing missed
    assert tuesday["metformin"]["expected"] == 2 and tuesday["metformin"]["pending"] == 1
    monday = with_expected(led.adherence("ann", date(2026, 3, 30)), schedules, LONDON,
                           date(2026, 3, 30))  # fmt: skip
    assert monday["methotrexate"] == {"scheduled": 0, "taken": 0, "skipped": 0, "missed": 0,
                                      "pending": 0, "rate": None, "expected": 1}  # fmt: skip
