"""Reminder times across DST (computed by the scheduler's own trigger, no sleeping), and the
dose ledger: answers, snoozes, missed doses and adherence."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from agents.medication.prescription import parse_prescription
from agents.medication.reminders import DoseLedger, fire_times
from gateway.base.clock import ManualClock
from gateway.base.db import Database

LONDON = ZoneInfo("Europe/London")


def rx(text: str):  # type: ignore[no-untyped-def]
    r = parse_prescription(text)
    assert r.prescription is not None, r.questions
    return r.prescription


def test_local_times_hold_across_the_spring_change() -> None:
    # 29 March 2026: clocks go forward at 01:00 GMT. 08:00 and 20:00 stay local times.
    got = fire_times(
        rx("Metformin 500 mg BD for 4 days"),
        LONDON,
        date(2026, 3, 27),
        datetime(2026, 4, 5, tzinfo=LONDON),
    )
    assert len(got) == 8  # 4 days, twice a day, and nothing after the course ends
    assert [(d.astimezone(LONDON).strftime("%d %H:%M")) for d in got] == [
        "27 08:00", "27 20:00", "28 08:00", "28 20:00", "29 08:00", "29 20:00", "30 08:00", "30 20:00",
    ]  # fmt: skip
    utc = [d.astimezone(UTC).strftime("%d %H:%M") for d in got]
    assert utc[:4] == ["27 08:00", "27 20:00", "28 08:00", "28 20:00"]  # GMT
    assert utc[4:] == ["29 07:00", "29 19:00", "30 07:00", "30 19:00"]  # BST


def test_local_times_hold_across_the_autumn_change() -> None:
    got = fire_times(
        rx("Zolpidem 5 mg QHS for 3 days"),
        LONDON,
        date(2026, 10, 24),
        datetime(2026, 11, 1, tzinfo=LONDON),
    )
    assert [d.astimezone(UTC).strftime("%d %H:%M") for d in got] == [
        "24 21:00", "25 22:00", "26 22:00",  # 22:00 BST, then 22:00 GMT
    ]  # fmt: skip


def test_every_six_hours_on_the_short_day() -> None:
    got = fire_times(
        rx("Ibuprofen 200 mg every 6 hours for 1 day"),
        LONDON,
        date(2026, 3, 29),
        datetime(2026, 3, 30, 12, tzinfo=LONDON),
    )
    local = [d.astimezone(LONDON).strftime("%H:%M") for d in got]
    assert local == ["02:00", "08:00", "14:00", "20:00"]


def test_as_needed_has_no_schedule() -> None:
    assert (
        fire_times(
            rx("Paracetamol 1 g PRN max 4 g/day"),
            LONDON,
            date(2026, 3, 1),
            datetime(2026, 3, 9, tzinfo=LONDON),
        )
        == []
    )


@pytest.fixture
def ledger(tmp_path: Path) -> tuple[DoseLedger, ManualClock]:
    clock = ManualClock(datetime(2026, 3, 30, 8, tzinfo=LONDON).timestamp())
    return DoseLedger(Database(tmp_path / "d.db"), now=clock.now, tz=LONDON, snooze_s=600), clock


def test_answers_and_adherence(ledger: tuple[DoseLedger, ManualClock]) -> None:
    led, clock = ledger
    t0 = clock.now()
    a = led.due("ann", "metformin", t0)
    assert led.due("ann", "metformin", t0).id == a.id  # the scheduler firing twice is harmless
    b = led.due("ann", "metformin", t0 + 12 * 3600)
    c = led.due("ann", "bisoprolol", t0)
    assert led.answer(a.id, "taken").status == "taken"  # type: ignore[union-attr]
    assert led.answer(a.id, "skip").status == "taken"  # type: ignore[union-attr]  # ended doses stay ended
    assert led.answer(c.id, "skip").status == "skipped"  # type: ignore[union-attr]
    assert led.answer("nope", "taken") is None
    adh = led.adherence("ann", date(2026, 3, 30))
    assert adh["metformin"] == {
        "scheduled": 2,
        "taken": 1,
        "skipped": 0,
        "missed": 0,
        "pending": 1,
        "rate": 1.0,
    }
    assert adh["bisoprolol"]["rate"] == 0.0
    assert b.status == "pending"


def test_snooze_then_missed(ledger: tuple[DoseLedger, ManualClock]) -> None:
    led, clock = ledger
    d = led.due("ann", "metformin", clock.now())
    s = led.answer(d.id, "snooze")
    assert s is not None and s.status == "snoozed" and s.due == clock.now() + 600
    assert led.snoozed_due() == []
    clock.advance(601)
    assert [x.id for x in led.snoozed_due()] == [d.id]
    assert led.mark_missed(missed_after_s=1800) == []  # not yet
    clock.advance(1800)
    missed = led.mark_missed(missed_after_s=1800)
    assert [(m.id, m.status) for m in missed] == [(d.id, "missed")]
    assert led.mark_missed(missed_after_s=1800) == []  # told once
    assert led.adherence("ann", date(2026, 3, 30))["metformin"]["missed"] == 1


def test_snoozes_are_bounded(ledger: tuple[DoseLedger, ManualClock]) -> None:
    led, clock = ledger
    d = led.due("ann", "metformin", clock.now())
    for _ in range(5):
        r = led.answer(d.id, "snooze")
    assert r is not None and r.snoozes == led.max_snoozes


def test_every_dose_that_ends_is_told_once(tmp_path: Path) -> None:
    # The time series' adherence points come from here (healthgw/assembly/agents.py).
    clock = ManualClock(datetime(2026, 3, 30, 8, tzinfo=LONDON).timestamp())
    ended: list[tuple[str, str]] = []
    led = DoseLedger(
        Database(tmp_path / "d.db"),
        now=clock.now,
        tz=LONDON,
        on_final=lambda d: ended.append((d.medication, d.status)),
    )
    a = led.due("ann", "metformin", clock.now())
    led.due("ann", "bisoprolol", clock.now())
    led.answer(a.id, "taken")
    led.answer(a.id, "skip")  # already ended: not told again
    clock.advance(3 * 3600)
    led.mark_missed(1800)
    assert ended == [("metformin", "taken"), ("bisoprolol", "missed")]
