"""The lay lexicon's routes added for the hard scenario set (eval/hard-scenarios.jsonl), each
checked on paraphrases written for this test (none is a scenario's wording or a KB fragment):
black stools, thirst with frequent urination, flagged kidneys, staring spells, low mood and early
waking, panic after a sound heart, what one may eat, clots that run in the family."""

from __future__ import annotations

import pytest

from agents.triage.classifier import Triage
from agents.triage.lay_lexicon import lay_expand

ROUTES: tuple[tuple[str, str], ...] = (
    # Black, tarry stools: upper gut bleeding, not a heart or joint matter.
    ("my poo has turned black and sticky like tar and I feel faint", "gastroenterologist"),
    ("black tarry motions since Tuesday, a bit dizzy when I get up", "gastroenterologist"),
    # Thirst and passing a lot of urine: diabetes.
    ("I'm so thirsty all day and I'm peeing constantly", "endocrinologist"),
    ("drinking jugs of water and weeing every hour, even at night", "endocrinologist"),
    # Kidneys flagged on tests: nephrology, even with swelling or blood pressure.
    ("the nurse said my kidneys were playing up on the blood test", "nephrologist"),
    ("my kidney tests came back abnormal and my feet swell", "nephrologist"),
    # Staring spells: epilepsy (absences).
    ("my teacher says I stare blankly for a few seconds in class", "neurologist"),
    ("I zone out for a few seconds and can't remember it", "neurologist"),
    # Low mood, lost enjoyment, early waking: depression.
    ("I've been feeling really down and I no longer enjoy my music", "psychiatrist"),
    ("I keep waking up at 3am and I've lost interest in everything", "psychiatrist"),
    # Attacks of fear of dying with a heart found sound: panic.
    (
        "my heart pounds and I was convinced I was going to die, but the ECG was normal",
        "psychiatrist",
    ),
    (
        "the cardiac checks were all fine but I get these attacks where I feel a sense of doom",
        "psychiatrist",
    ),
    # What one may eat with a known condition: the dietician.
    ("I have coeliac disease and need to know which foods I should eat", "dietician"),
    ("I'm diabetic, which foods should I avoid and can I have a meal plan", "dietician"),
    # A clot that runs in the family: a test for a clotting disorder.
    ("my brother had a clot too and I'd like to be tested for a blood disorder", "hematologist"),
)


@pytest.mark.parametrize(("text", "expected"), ROUTES)
def test_paraphrases_reach_their_specialist(
    trained_triage: Triage, text: str, expected: str
) -> None:
    r = trained_triage.classify(text)
    assert r.specialty == expected, (text, r.ranked[:3])


@pytest.mark.parametrize(
    ("text", "term"),
    [
        ("stools were black", "black tarry stools"),
        ("constantly thirsty", "thirsty"),
        ("my kidneys were flagged", "kidney function"),
        ("she stares into space", "absence seizures"),
        ("i wake at 4am", "early waking"),
        ("i'm sure i'm going to die", "panic attacks"),
        ("what i'm allowed to eat", "diet nutrition"),
    ],
)
def test_lay_phrases_gain_their_plain_terms(text: str, term: str) -> None:
    assert term in lay_expand(text)


def test_lay_words_for_low_mood_need_a_mood_verb() -> None:
    # "low" alone is too common ("low iron", "lower back") to mean low mood.
    assert "depressed" not in lay_expand("my iron is low and my lower back aches")
    assert "depressed" in lay_expand("i've been feeling low")
