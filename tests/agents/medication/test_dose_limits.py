"""Medication-safety checks: ingredients of brands and combination products, totals across
products, the lowered paracetamol limit (each reason), NSAID cautions (each condition),
aspirin under 16 and codeine under 12, and the profile built from a household person."""

from __future__ import annotations

from datetime import date

import pytest

from agents.medication.dose_limits import (
    MedProfile,
    child_refusal,
    intake_review,
    limit_for,
    normalise_condition,
    review,
)
from agents.medication.drugs import KNOWN_SCHEDULES, LIMITS, PRODUCTS
from agents.medication.ingredients import ingredients, intake_ingredients, match_products, per_24h
from agents.medication.prescription import Dose, Prescription, parse_prescription
from gateway.household.model import Person


def rx(text: str) -> Prescription:
    r = parse_prescription(text)
    assert r.prescription is not None, r.questions
    return r.prescription


def test_every_table_row_names_its_source() -> None:
    for row in (*LIMITS, *PRODUCTS, *KNOWN_SCHEDULES):
        assert len(row.source) > 5, row
    assert all(p.per_unit and all(mg > 0 for _, mg in p.per_unit) for p in PRODUCTS)


@pytest.mark.parametrize(
    ("name", "dose", "want"),
    [
        ("co-codamol 30/500", Dose(2, "tablet"), {"codeine": 60, "paracetamol": 1000}),
        ("co-codamol 8/500", Dose(2, "tablet"), {"codeine": 16, "paracetamol": 1000}),
        ("co-codamol 15/500", Dose(1, "tablet"), {"codeine": 15, "paracetamol": 500}),
        ("panadol", Dose(2, "tablet"), {"paracetamol": 1000}),
        ("tylenol extra strength", Dose(2, "tablet"), {"paracetamol": 1000}),
        ("calpol infant", Dose(5, "ml"), {"paracetamol": 120}),
        ("calpol six plus", Dose(10, "ml"), {"paracetamol": 500}),
        ("nurofen", Dose(2, "tablet"), {"ibuprofen": 400}),
        ("lemsip max cold & flu", Dose(1, "sachet"), {"paracetamol": 1000, "phenylephrine": 12.2}),
        ("anadin extra", Dose(2, "tablet"), {"aspirin": 600, "paracetamol": 400, "caffeine": 90}),
        ("co-dydramol 10/500", Dose(2, "tablet"), {"dihydrocodeine": 20, "paracetamol": 1000}),
        ("solpadeine max", Dose(2, "tablet"), {"paracetamol": 1000, "codeine": 25.6}),
        ("sudafed", Dose(1, "tablet"), {"pseudoephedrine": 60}),
        ("excedrin extra strength", Dose(2, "tablet"),
         {"paracetamol": 500, "aspirin": 500, "caffeine": 130}),
        ("acetaminophen", Dose(650, "mg"), {"paracetamol": 650}),
        ("calpol", Dose(500, "mg", count=10, form="ml"), {"paracetamol": 500}),
    ],
)  # fmt: skip
def test_products_map_to_their_ingredients(name: str, dose: Dose, want: dict[str, float]) -> None:
    got, question = ingredients(name, dose)
    assert question is None
    assert got == pytest.approx(want)


def test_a_family_name_alone_is_asked_about() -> None:
    assert len(match_products("co-codamol")) == 3
    assert len(match_products("Calpol")) == 2
    assert match_products("nurofen plus")[0].name == "nurofen plus"  # not plain nurofen
    assert "Which co-codamol" in (ingredients("co-codamol", Dose(2, "tablet"))[1] or "")
    # Paracetamol tablets with no strength cannot be checked: asked, not guessed.
    r = parse_prescription("Paracetamol 2 tablets QDS")
    assert r.prescription is None and "What strength" in r.questions[0]


def test_reported_intakes_of_brands_and_counts() -> None:
    assert intake_ingredients("2 x co-codamol 30/500", 1000)[0] == {
        "codeine": 60,
        "paracetamol": 1000,
    }
    # No count: the mg is read as the main ingredient (500 mg of a 30/500 is one tablet).
    assert intake_ingredients("co-codamol 30/500", 500)[0] == {"codeine": 30, "paracetamol": 500}
    assert intake_ingredients("two sachets of lemsip max", 1)[0]["paracetamol"] == 2000
    assert intake_ingredients("Advil", 400)[0] == {"ibuprofen": 400}
    assert intake_ingredients("metformin", 500)[0] == {}
    # Which Lemsip was not said: the smallest certain amount, and a note.
    got, note = intake_ingredients("Lemsip", 1000)
    assert got["paracetamol"] == 1000 and note is not None and "smallest" in note


def test_schedule_totals_across_products() -> None:
    # 2 x co-codamol 30/500 four times a day is 4 g of paracetamol on its own ...
    assert per_24h(rx("Co-codamol 30/500 2 tablets QDS")) == {"codeine": 240, "paracetamol": 4000}
    # ... and any Lemsip on top goes over.
    lemsip = rx("Lemsip Max Cold & Flu 1 sachet every 4 hours as needed max 4 sachets a day")
    r = review(lemsip, None, [rx("Co-codamol 30/500 2 tablets QDS")])
    assert any("already give 4000 mg a day" in w and "at most 0 doses" in w for w in r.warnings)
    # A regular schedule with another one: the total and both names are said.
    r = review(rx("Paracetamol 1 g TDS"), None, [rx("Co-codamol 8/500 2 tablets BD")])
    assert r.warnings == ["paracetamol: 5000 mg in 24 hours together with co-codamol 8/500 is "
                          "more than the usual maximum of 4000 mg (BNF paracetamol: 0.5-1 g every "
                          "4-6 hours, max 4 g a day)."]  # fmt: skip
    # A weekly medicine counts on its day (not divided by 7).
    assert per_24h(rx("Methotrexate 10 mg once a week on Monday")) == {}  # no limit row
    assert per_24h(rx("Ibuprofen 400 mg on Mondays")) == {"ibuprofen": 400}


def test_intake_totals_over_24_hours_name_every_product() -> None:
    totals = {"paracetamol": 5000.0, "codeine": 240.0}
    sources = {"paracetamol": ["2 x co-codamol 30/500"] * 4 + ["lemsip max"],
               "codeine": ["2 x co-codamol 30/500"] * 4}  # fmt: skip
    w = intake_review("lemsip max", {"paracetamol": 1000, "phenylephrine": 12.2}, totals, sources)
    assert w == ["paracetamol: 5000 mg in the last 24 hours (from 2 x co-codamol 30/500, lemsip "
                 "max) is more than the usual maximum of 4000 mg (BNF paracetamol: 0.5-1 g every "
                 "4-6 hours, max 4 g a day)."]  # fmt: skip


@pytest.mark.parametrize(
    ("profile", "day", "dose", "reason"),
    [
        (MedProfile.of(age=70, weight_kg=45), 2700, 675, "weight under 50 kg"),
        (MedProfile.of(age=30, weight_kg=40), 2400, 600, "60 mg/kg a day"),
        (MedProfile.of(age=60, conditions=["Liver disease"]), 3000, 1000, "liver disease"),
        (MedProfile.of(age=60, conditions=["cirrhosis"]), 3000, 1000, "liver disease"),
        (MedProfile.of(age=60, conditions=["hepatic-impairment"]), 3000, 1000, "liver disease"),
        (MedProfile.of(age=60, conditions=["alcohol"]), 3000, 1000, "heavy alcohol use"),
        (MedProfile.of(age=60, conditions=["heavy alcohol use"]), 3000, 1000, "heavy alcohol use"),
        (MedProfile.of(age=85, conditions=["frailty"]), 3000, 1000, "frailty"),
        (MedProfile.of(age=85, weight_kg=40, conditions=["frail"]), 2400, 600, "frailty"),
    ],
)
def test_paracetamol_limit_is_lowered_and_says_why(
    profile: MedProfile, day: float, dose: float, reason: str
) -> None:
    lim = limit_for("paracetamol", profile)
    assert lim is not None
    assert (lim.max_mg_day, lim.max_mg_dose) == (day, dose)
    assert any(reason in r for r in lim.reasons)
    w = review(rx("Paracetamol 1 g QDS"), profile).warnings
    assert any(f"this person's maximum of {day:g} mg" in x and reason in x for x in w), w


def test_paracetamol_limit_is_not_lowered_without_a_reason() -> None:
    for prof in (MedProfile.of(age=80), MedProfile.of(age=30, weight_kg=50),
                 MedProfile.of(age=70, conditions=["hypertension"])):  # fmt: skip
        lim = limit_for("paracetamol", prof)
        assert lim is not None and (lim.max_mg_day, lim.reasons) == (4000, ())
    assert review(rx("Paracetamol 1 g QDS"), MedProfile.of(age=80)).warnings == []


@pytest.mark.parametrize(
    ("profile", "says"),
    [
        (MedProfile.of(age=50, conditions=["ckd"]), "with kidney disease"),
        (MedProfile.of(age=50, conditions=["chronic kidney disease"]), "with kidney disease"),
        (MedProfile.of(age=50, conditions=["CKD stage 4"]), "with kidney disease"),
        (MedProfile.of(age=50, conditions=["hypertension"]), "with high blood pressure"),
        (MedProfile.of(age=50, conditions=["heart failure"]), "with heart failure"),
        (MedProfile.of(age=50, conditions=["heart_failure"]), "with heart failure"),
        (MedProfile.of(age=30, conditions=["pregnant"]), "with pregnancy"),
        (MedProfile.of(age=50, medications=["warfarin 5 mg"]), "with warfarin (an anticoagulant)"),
        (MedProfile.of(age=50, medications=["apixaban 5 mg bd"]), "with apixaban"),
        (MedProfile.of(age=50, medications=["enoxaparin 40 mg"]), "with enoxaparin"),
        (MedProfile.of(age=65), "at 65 or over"),
        (MedProfile.of(age=50, conditions=["peptic ulcer"]), "stomach ulcer"),
    ],
)
@pytest.mark.parametrize(
    "text", ["Ibuprofen 400 mg TDS", "Naproxen 250 mg BD", "Diclofenac 50 mg TDS",
             "Aspirin 600 mg every 4 hours as needed", "Celecoxib 100 mg BD",
             "Nurofen Plus 1 tablet TDS"],
)  # fmt: skip
def test_nsaids_are_flagged(text: str, profile: MedProfile, says: str) -> None:
    w = review(rx(text), profile).warnings
    assert any(says in x and "NSAID" in x for x in w), w


def test_nsaids_are_not_flagged_without_a_reason() -> None:
    assert review(rx("Ibuprofen 400 mg TDS"), MedProfile.of(age=40)).warnings == []
    assert review(rx("Ibuprofen 400 mg TDS"), MedProfile.of(age=64)).warnings == []
    # Low-dose aspirin is not an NSAID dose; with an anticoagulant it is a bleeding risk.
    assert review(rx("Aspirin 75 mg OD"), MedProfile.of(age=70, conditions=["ckd"])).warnings == []
    w = review(rx("Aspirin 75 mg OD"), MedProfile.of(age=50, medications=["rivaroxaban"])).warnings
    assert len(w) == 1 and "bleeding" in w[0]
    # An anticoagulant among the other active prescriptions counts too.
    w = review(rx("Ibuprofen 200 mg TDS"), MedProfile.of(age=50), [rx("Warfarin 3 mg at 6pm")])
    assert any("with warfarin" in x for x in w.warnings)


@pytest.mark.parametrize("age", [0, 5, 12, 15])
@pytest.mark.parametrize(
    "text", ["Aspirin 300 mg every 4 hours as needed", "Aspirin 75 mg OD",
             "Anadin Extra 2 tablets every 6 hours", "Beechams Powders 1 powder every 4 hours"],
)  # fmt: skip
def test_aspirin_is_refused_under_16(text: str, age: int) -> None:
    r = parse_prescription(text, MedProfile.of(age=age))
    assert r.prescription is None and r.refused
    assert "Reye's syndrome" in r.questions[0] and "Nothing was scheduled" in r.questions[0]


def test_aspirin_at_16_and_codeine_under_12() -> None:
    assert parse_prescription("Aspirin 300 mg QDS", MedProfile.of(age=16)).ok
    assert parse_prescription("Aspirin 300 mg QDS").ok  # age unknown: nothing to refuse on
    r = parse_prescription("Co-codamol 8/500 2 tablets QDS", MedProfile.of(age=11))
    assert r.refused and "under 12" in r.questions[0]
    assert parse_prescription("Co-codamol 8/500 2 tablets QDS", MedProfile.of(age=12)).ok
    # Already taken: a warning that says what to do, not a refusal.
    w = child_refusal(["aspirin"], MedProfile.of(age=9), taken=True)
    assert len(w) == 1 and "NHS 111" in w[0]


def test_profile_from_a_household_person() -> None:
    p = Person.model_validate({
        "id": "ann", "name": "Ann", "birth_date": "1950-06-01", "sex": "female",
        "location": {"latitude": 51.5, "longitude": -0.1}, "weight_kg": 48,
        "conditions": ["Chronic Kidney Disease", "Heart-Failure", "frailty", "Alcohol dependence"],
        "medications": ["Warfarin 5 mg", "bisoprolol 5 mg"], "pregnant": False,
    })  # fmt: skip
    prof = MedProfile.from_person(p, date(2026, 5, 31))
    assert prof.age == 75 and prof.weight_kg == 48
    assert {"ckd", "heart_failure", "frail", "heavy_alcohol_use"} <= prof.conditions
    assert prof.anticoagulant() == "warfarin" and not prof.pregnant
    assert normalise_condition("pregnant") == "pregnancy"
    assert normalise_condition("Liver cirrhosis") == "liver_disease"
