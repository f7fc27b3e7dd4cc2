"""The symptom condenser: the paper's short lists, from the user's own words, grounded in the
triage knowledge base."""

from __future__ import annotations

import re

import pytest

from agents.triage.condense import (
    ADJECTIVE_NOUNS,
    condense_symptoms,
    is_symptom,
    keeps_terms,
    terms,
)
from agents.triage.kb import CONDITIONS

_WORD = re.compile(r"[a-z']+")


@pytest.mark.parametrize(
    ("said", "want"),
    [
        (  # the paper's appendix example
            "I've been extremely fatigued with chills, body aches and a sore throat, it's "
            "becoming hard to get through the day",
            "fatigue, chills, body aches, sore throat",
        ),
        ("I've been having headaches and blurred vision", "headaches, blurred vision"),
        ("My eyes are red and itchy", "red eyes, itching"),
        ("I feel dizzy", "dizziness"),
        ("It burns when I pee.", "burns when I pee"),
    ],
)
def test_condenses_like_the_paper(said: str, want: str) -> None:
    assert condense_symptoms(said) == want


def test_the_public_example_keeps_every_reference_term() -> None:
    said = (
        "My knees ache every morning and they feel stiff for a long time, and my fingers "
        "are swollen."
    )
    got = condense_symptoms(said)
    assert keeps_terms(got, "morning knee stiffness, swollen fingers"), got
    assert "long time" not in got and "my" not in got.split()


def test_impact_statements_go_but_never_everything() -> None:
    assert condense_symptoms("My back went out and it's becoming hard to work") == "back went out"
    # No symptom word at all: what was said is kept, not an empty list.
    assert condense_symptoms("I need to see a doctor") == "need to see a doctor"
    assert condense_symptoms("I feel down all the time and I can't sleep") == (
        "feeling down, can't sleep"
    )


def test_every_knowledge_base_fragment_survives_and_nothing_is_invented() -> None:
    for c in CONDITIONS:
        for fragment in c.symptoms:
            got = condense_symptoms(fragment)
            assert got and is_symptom(got.casefold()), fragment
            said = set(_WORD.findall(fragment.casefold().replace("’", "'")))
            # A new word may only be the noun of an adjective the user used.
            allowed = said | {
                w for adj in said & set(ADJECTIVE_NOUNS) for w in ADJECTIVE_NOUNS[adj].split()
            }
            assert set(_WORD.findall(got.casefold())) <= allowed, (fragment, got)


def test_terms_and_their_check() -> None:
    assert terms(" fatigue, chills ,, sore throat") == ["fatigue", "chills", "sore throat"]
    assert keeps_terms("sore throat and chills, fatigued", "fatigue, chills, sore throat")
    assert not keeps_terms("fatigue, sore throat", "fatigue, chills, sore throat")


def test_bounded() -> None:
    assert len(condense_symptoms("I have a sharp pain in my chest, " * 40)) <= 200
