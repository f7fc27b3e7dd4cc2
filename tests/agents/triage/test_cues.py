"""Named tests, conditions and requests (agents/triage/cues.py), and shared words read in
context, on sentences written for these tests (none from an evaluation set)."""

from __future__ import annotations

import pytest

from agents.triage import cues
from agents.triage.classifier import Triage


def named(text: str) -> dict[str, float]:
    return cues.weights(cues.reread(text.lower()))


@pytest.mark.parametrize(
    ("text", "specialty"),
    [
        ("my psa is 8.1 and the gp wants me seen", "urologist"),
        ("egfr dropped to 41 on my last bloods", "nephrologist"),
        ("tsh came back raised", "endocrinologist"),
        ("ferritin is 6", "hematologist"),
        ("my smear test was abnormal", "gynecologist"),
        ("the colonoscopy found two polyps", "gastroenterologist"),
        ("my sister is hearing voices at night", "psychiatrist"),
        ("i was diagnosed with ibs and need help going through the low fodmap diet", "dietician"),
    ],
)
def test_a_named_test_or_request_points_to_its_specialty(text: str, specialty: str) -> None:
    w = named(text)
    assert max(w, key=lambda k: w[k]) == specialty, w


def test_a_normal_result_points_nowhere() -> None:
    assert "cardiologist" not in named("my heart races when I panic but the ecg was normal")


def test_shared_words_are_read_in_context() -> None:
    assert "hear" not in cues.reread("my dad hears voices telling him things")
    assert cues.reread("bad heartburn after meals").startswith("bad acid reflux")
    # The skin is the complaint: the ear does not decide ...
    assert "ear" not in cues.reread("a scaly patch on my ear that keeps crusting").split()
    # ... unless the ear's own function is the complaint.
    assert "ear" in cues.reread("a rash on my ear and I can't hear well").split()
    assert "gynecologist" not in named("a problem down there with my son")
    # A complaint set aside is not the one to book for.
    assert "knee" not in cues.reread("psa came back high, also my knees ache but that's just age")


def test_the_classifier_weighs_a_named_test_over_a_set_aside_ache(
    trained_triage: Triage,
) -> None:
    r = trained_triage.classify(
        "PSA came back 9, GP says specialist. knees ache but thats just old age"
    )
    assert r.specialty == "urologist"
    assert trained_triage.classify("a mole on my earlobe changed colour").specialty == (
        "dermatologist"
    )
