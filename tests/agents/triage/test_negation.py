"""Denied symptoms (agents.triage.negation) are dropped before classifying; complaints that are
only negative in form ("I can't hear", "no energy") are kept. Paraphrases written for this test."""

from __future__ import annotations

import pytest

from agents.triage.classifier import Triage, normalise
from agents.triage.negation import drop_denied


@pytest.mark.parametrize(
    ("text", "gone", "kept"),
    [
        ("no fever, no cough, but my knee is swollen and hot", "fever", "knee is swollen"),
        ("I don't have any chest pain, my ankles are puffy", "chest pain", "ankles are puffy"),
        ("it doesn't sting when I wee, I just go a lot at night", "sting", "go a lot at night"),
        ("I'm not short of breath and I've never smoked, I just cough", "smoked", "i just cough"),
        ("my stomach is fine, no nausea or vomiting; my skin itches", "nausea", "my skin itches"),
        ("it's not my joints, it's my heel in the morning", "joints", "my heel"),
        ("there's blood in my pee, it doesn't hurt at all", "hurt", "blood in my pee"),
        ("I haven't had a headache, but my eyesight is blurred", "headache", "eyesight"),
    ],
)
def test_denied_symptoms_are_dropped(text: str, gone: str, kept: str) -> None:
    out = drop_denied(normalise(text))
    assert gone not in out and kept in out, out


@pytest.mark.parametrize(
    "text",
    [
        "I can't hear properly and I can't sleep",
        "no energy, no appetite and I'm not sleeping",
        "I don't enjoy anything and I don't remember things",
        "it won't stop bleeding",
        "I can't walk without pain",
        "my cough has not gone away",
        "I haven't had a period for three months",
        "things aren't working downstairs",
    ],
)
def test_complaints_negative_only_in_form_are_kept(text: str) -> None:
    assert drop_denied(normalise(text)) == normalise(text)


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        ("No chest pain at all, but my ankles swell up by evening", "cardiologist"),
        (
            "no chest pain or palpitations, my pee has gone foamy and my legs are puffy",
            "cardiologist",
        ),
        ("I'm not short of breath, but I get a rash of itchy welts on my arms", "pulmonologist"),
        ("no headache, no dizziness, but my toe joint is red hot and agony", "neurologist"),
    ],
)
def test_a_denied_symptom_does_not_decide_the_specialist(
    trained_triage: Triage, text: str, not_expected: str
) -> None:
    assert trained_triage.classify(text).specialty != not_expected


def test_a_complaint_that_only_denies_is_vague(trained_triage: Triage) -> None:
    assert trained_triage.classify("no chest pain, no fever, no cough").vague
