"""Crisis wording (agents.triage.red_flags): paraphrases of suicidal and self-harm wording,
about oneself or someone else, are caught; denials, accidents and ordinary distress are not."""

from __future__ import annotations

import pytest

from agents.triage.red_flags import crisis

CRISIS = [
    "I've been thinking about ending my life",
    "I want to kill myself",
    "honestly everyone would be better off without me",
    "I keep thinking I'd be better off dead",
    "I looked up how many pills it would take",
    "I don't want to be alive any more",
    "I can't stop thinking about killing myself",
    "sometimes I wish I was dead",
    "I'm not sure I want to live",
    "I've been saving up my tablets",
    "there's no point in living",
    "I feel suicidal",
    "my son said he wants to die",
    "my husband talks about ending it all",
    "my teenage daughter has been cutting her arms",
    "I hurt myself on purpose to feel something",
    "I have thoughts of harming myself",
    "I get urges to cut myself",
    "she keeps burning her arms with a lighter",
    "my brother is self-harming again",
    "I'd never kill myself, but sometimes I wish I were dead",
    "I'm not suicidal, but I have been cutting myself",
    "I took an overdose last month and I feel the same again",
]

NOT_CRISIS = [
    "I'm not suicidal, just very low and tearful",
    "I've never hurt myself on purpose and I have no thoughts of suicide",
    "no thoughts of harming myself, I just can't sleep",
    "I would never kill myself, I just feel flat",
    "I hurt myself playing football and my knee is swollen",
    "I cut myself cooking and the cut looks infected",
    "my son fell off the trampoline and hurt his wrist",
    "this back pain is killing me",
    "I'm dying for a good night's sleep",
    "my diet is killing me, I snack all evening",
    "I'm scared, I don't want to die of a heart attack like my dad",
    "I've felt low for two months and stopped enjoying football",
]


@pytest.mark.parametrize("text", CRISIS)
def test_crisis_wording_is_caught(text: str) -> None:
    assert crisis(text) is not None, text


def test_missing_apostrophes_are_read_like_the_written_ones() -> None:
    assert crisis("I dont want to live anymore") is not None
    assert crisis("im not suicidal") is None
    assert crisis("i cant stop thinking about ending my life") is not None


@pytest.mark.parametrize("text", NOT_CRISIS)
def test_denials_accidents_and_ordinary_distress_are_not_a_crisis(text: str) -> None:
    assert crisis(text) is None, (text, crisis(text))


def test_curly_apostrophes_and_case_are_normalised() -> None:
    assert crisis("I DON\u2019T WANT TO LIVE ANY MORE") is not None
    assert crisis("I\u2019m not suicidal") is None
