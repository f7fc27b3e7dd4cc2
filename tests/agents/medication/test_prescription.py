from __future__ import annotations

from datetime import time

import pytest

from agents.medication.prescription import Dose, intake_warning, parse_prescription


def hm(*xs: str) -> tuple[time, ...]:
    return tuple(time.fromisoformat(x) for x in xs)


@pytest.mark.parametrize(
    ("text", "medicine", "dose", "times", "days"),
    [
        (
            "Metformin 500 mg twice daily after meals for 30 days",
            "metformin",
            Dose(500, "mg"),
            hm("08:30", "19:30"),
            30,
        ),
        (
            "Amoxicillin 250mg TDS x 7 days",
            "amoxicillin",
            Dose(250, "mg"),
            hm("08:00", "14:00", "20:00"),
            7,
        ),
        (
            "Amoxicillin 500 mg TID for 1 week",
            "amoxicillin",
            Dose(500, "mg"),
            hm("08:00", "14:00", "20:00"),
            7,
        ),
        (
            "Paracetamol 1 g QID",
            "paracetamol",
            Dose(1000, "mg"),
            hm("08:00", "12:00", "16:00", "20:00"),
            None,
        ),
        (
            "Ibuprofen 200 mg QDS with food",
            "ibuprofen",
            Dose(200, "mg"),
            hm("08:00", "12:00", "16:00", "20:00"),
            None,
        ),
        ("Omeprazole 20 mg OD before breakfast", "omeprazole", Dose(20, "mg"), hm("07:30"), None),
        ("Atorvastatin 40 mg once a day", "atorvastatin", Dose(40, "mg"), hm("08:00"), None),
        ("Zolpidem 5 mg QHS", "zolpidem", Dose(5, "mg"), hm("22:00"), None),
        ("Amitriptyline 10 mg nocte for 2 weeks", "amitriptyline", Dose(10, "mg"), hm("22:00"), 14),
        ("Prednisolone 40 mg OM for 5 days", "prednisolone", Dose(40, "mg"), hm("08:00"), 5),
        ("Bisoprolol 2.5 mg BD", "bisoprolol", Dose(2.5, "mg"), hm("08:00", "20:00"), None),
        (
            "Doxycycline 100 mg every 12 hours for 10 days",
            "doxycycline",
            Dose(100, "mg"),
            hm("08:00", "20:00"),
            10,
        ),
        (
            "Cefalexin 500 mg 8 hourly",
            "cefalexin",
            Dose(500, "mg"),
            hm("08:00", "16:00", "00:00"),
            None,
        ),
        ("Lactulose 15 ml twice a day", "lactulose", Dose(15, "ml"), hm("08:00", "20:00"), None),
        (
            "Levothyroxine 50 mcg every morning on an empty stomach",
            "levothyroxine",
            Dose(50, "mcg"),
            hm("08:00"),
            None,
        ),
    ],
)
def test_dosing_codes(
    text: str, medicine: str, dose: Dose, times: tuple[time, ...], days: int | None
) -> None:
    r = parse_prescription(text)
    assert r.ok, r.questions
    rx = r.prescription
    assert rx is not None
    assert (rx.medicine, rx.dose, rx.times, rx.duration_days) == (medicine, dose, times, days)


def test_as_needed_with_a_stated_maximum() -> None:
    r = parse_prescription("Paracetamol 1 g PRN max 4 g/day")
    assert r.ok and r.prescription is not None
    rx = r.prescription
    assert rx.as_needed and rx.times == () and rx.max_per_day == Dose(4000, "mg")
    assert r.warnings == ()
    assert "as needed" in rx.summary() and "4000 mg" in rx.summary()
    r = parse_prescription("Salbutamol 2 puffs as required, at least 4 hours apart")
    assert r.ok and r.prescription is not None and r.prescription.dose == Dose(2, "puff")


def test_instructions_are_kept() -> None:
    r = parse_prescription("Metformin 500 mg twice daily after meals for 30 days")
    assert r.prescription is not None and r.prescription.instructions == ("after meals",)
    assert r.prescription.summary() == (
        "Metformin 500 mg, twice daily at 08:30, 19:30 for 30 days (after meals)."
    )


@pytest.mark.parametrize(
    ("text", "warned"),
    [
        ("Paracetamol 1 g every 4 hours", "6000 mg a day"),
        ("Ibuprofen 400 mg every 6 hours", "1600 mg a day"),
        ("Paracetamol 1g PRN max 6 g/day", "stated maximum of 6000 mg"),
    ],
)
def test_over_the_counter_maximums(text: str, warned: str) -> None:
    r = parse_prescription(text)
    assert r.prescription is not None
    assert any(warned in w for w in r.warnings), r.warnings


def test_safe_schedules_are_not_warned() -> None:
    assert parse_prescription("Paracetamol 1 g QID").warnings == ()
    assert parse_prescription("Ibuprofen 200 mg TDS").warnings == ()


def test_reported_intake_over_the_maximum() -> None:
    assert intake_warning("Paracetamol", 5000) is not None
    assert intake_warning("paracetamol 500mg", 3000) is None
    assert intake_warning("metformin", 99999) is None


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("Aspirin 75mg", "How often"),
        ("Amoxicillin twice daily", "How much"),
        ("Take two tablets twice a day", "Which medicine"),
        ("Amoxicillin 250mg BD TDS", "two different frequencies"),
        ("Ibuprofen 400 mg every 7 hours", "does not fit a day"),
        ("Metformin 500 mg BD every 8 hours", "two different frequencies"),
        ("", "Please type the prescription"),
        ("x" * 600, "Please type the prescription"),
        ("Metformin 500 mg BD for 900 days", "how many days"),
    ],
)
def test_unclear_prescriptions_get_a_question_not_a_guess(text: str, asks: str) -> None:
    r = parse_prescription(text)
    assert r.prescription is None and not r.ok
    assert any(asks in q for q in r.questions), r.questions
