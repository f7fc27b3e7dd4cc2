from __future__ import annotations

from datetime import date, datetime, time
from zoneinfo import ZoneInfo

import pytest

from agents.assistant.schedule import (
    Schedule,
    find_slot,
    parse_schedule,
    parse_slot_text,
    slot_text,
    specialist_slots,
)
from gateway.household.model import Specialist

NOW = datetime(2026, 3, 14, 18, 20)  # a Saturday evening
TZ = ZoneInfo("Europe/London")


@pytest.mark.parametrize(
    ("said", "day", "start", "end", "understood"),
    [
        ("Any weekday morning next week", date(2026, 3, 16), "09:00", "12:00", True),
        ("tomorrow afternoon", date(2026, 3, 15), "12:00", "17:00", True),
        ("next Tuesday at 3pm", date(2026, 3, 17), "15:00", "16:00", True),
        ("16 March", date(2026, 3, 16), "09:00", "17:00", True),
        ("March 20th in the evening", date(2026, 3, 20), "17:00", "20:00", True),
        ("between 2 and 4pm on Friday", date(2026, 3, 20), "14:00", "16:00", True),
        ("20/03/2026 10am", date(2026, 3, 20), "10:00", "11:00", True),
        ("2026-04-02", date(2026, 4, 2), "09:00", "17:00", True),
        ("in two weeks", date(2026, 3, 28), "09:00", "17:00", True),
        ("after 5pm", date(2026, 3, 15), "17:00", "20:00", True),
        ("before noon on monday", date(2026, 3, 16), "08:00", "12:00", True),
        ("I don't know", date(2026, 3, 15), "09:00", "17:00", False),
        ("It started a week ago", date(2026, 3, 15), "09:00", "17:00", False),
        ("whenever suits the doctor", date(2026, 3, 15), "09:00", "17:00", False),
        # A past date in the year means next year's.
        ("2 January", date(2027, 1, 2), "09:00", "17:00", True),
    ],
)
def test_parse_schedule(said: str, day: date, start: str, end: str, understood: bool) -> None:
    s = parse_schedule(said, NOW)
    assert (s.day, s.time_range, s.understood) == (day, f"{start}-{end}", understood)


def test_weekday_only_skips_the_weekend() -> None:
    s = parse_schedule("any weekday", NOW)  # said on a Saturday
    assert s.day == date(2026, 3, 16) and s.weekdays_only


def test_slot_text_round_trip() -> None:
    a, b = datetime(2026, 3, 16, 10, 0), datetime(2026, 3, 16, 10, 30)
    assert slot_text(a, b) == "10:00-10:30, 16/03/2026"
    assert parse_slot_text("10:00-10:30, 16/03/2026") == (a, b)
    for bad in ("10:30-10:00, 16/03/2026", "10:00-10:30 16/03/2026", "25:00-26:00, 01/01/2026"):
        with pytest.raises(ValueError):
            parse_slot_text(bad)


def spec(id_: str, **kw: object) -> Specialist:
    return Specialist.model_validate(
        {"id": id_, "name": f"Dr {id_}", "specialization": "cardiologist", **kw}
    )


def test_weekly_hours_are_cut_into_slots() -> None:
    s = spec("C1", hours={"mon": "09:00-10:00"}, slot_minutes=20)
    got = [(x.start.time(), x.end.time()) for x in specialist_slots(s, date(2026, 3, 16), 1, TZ)]
    assert got == [(time(9), time(9, 20)), (time(9, 20), time(9, 40)), (time(9, 40), time(10))]


def test_find_slot_prefers_the_wanted_range_then_earliest() -> None:
    a = spec("A", hours={"mon": "09:00-12:00", "tue": "14:00-16:00"})
    b = spec("B", hours={"mon": "13:00-15:00"})
    monday = Schedule(date(2026, 3, 16), time(13), time(17))
    got = find_slot([a, b], monday, now=NOW, taken=set(), tz=TZ)
    assert got is not None and got.specialist.id == "B" and got.start == datetime(2026, 3, 16, 13)
    # B's 13:00 is taken: the next one in range is B's 13:30.
    got = find_slot([a, b], monday, now=NOW, taken={("B", datetime(2026, 3, 16, 13))}, tz=TZ)
    assert got is not None and got.start == datetime(2026, 3, 16, 13, 30)
    # Nothing in range for weeks: the earliest free slot from the wanted day.
    evening = Schedule(date(2026, 3, 16), time(19), time(21))
    got = find_slot([a, b], evening, now=NOW, taken=set(), tz=TZ)
    assert got is not None and got.start == datetime(2026, 3, 16, 9)


def test_find_slot_never_offers_the_past() -> None:
    a = spec("A", slots=["2026-03-14T09:00/2026-03-14T09:30", "2026-03-20T09:00/2026-03-20T09:30"])
    got = find_slot(
        [a], Schedule(date(2026, 3, 14), time(9), time(17)), now=NOW, taken=set(), tz=TZ
    )
    assert got is not None and got.start == datetime(2026, 3, 20, 9)
    none = find_slot(
        [spec("Z")], Schedule(date(2026, 3, 14), time(9), time(17)), now=NOW, taken=set(), tz=TZ
    )
    assert none is None


def test_hours_validation() -> None:
    with pytest.raises(ValueError, match="weekday"):
        spec("A", hours={"someday": "09:00-10:00"})
    with pytest.raises(ValueError):
        spec("A", hours={"mon": "10:00-09:00"})
    with pytest.raises(ValueError):
        spec("A", hours={"mon": "9-10"})
