from __future__ import annotations

import pytest

from agents.language import is_dont_know, read_yes_no, summarise_symptoms


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (
            "My knees ache every morning and they feel stiff, and my fingers are swollen.",
            "knees ache every morning, they feel stiff, fingers are swollen",
        ),
        ("I've been having headaches and blurred vision", "headaches, blurred vision"),
        ("It burns when I pee.", "it burns when i pee"),
    ],
)
def test_summarise_keeps_the_users_words(text: str, want: str) -> None:
    assert summarise_symptoms(text) == want


def test_summary_is_bounded() -> None:
    assert len(summarise_symptoms("I have pain " * 100)) <= 200


@pytest.mark.parametrize(
    ("answer", "want"),
    [
        ("Yes please", "yes"),
        ("yeah go ahead", "yes"),
        ("Sure, book it.", "yes"),
        ("No, not right now", "no"),
        ("nope", "no"),
        ("Not now, maybe later", "no"),
        ("yes maybe", "unclear"),
        ("yes... no, wait", "unclear"),
        ("I'm not sure", "unclear"),
        ("what time was it again?", "unclear"),
    ],
)
def test_yes_no(answer: str, want: str) -> None:
    assert read_yes_no(answer) == want


def test_dont_know() -> None:
    assert is_dont_know("I don't know")
    assert is_dont_know("idk")
    assert is_dont_know("not sure")
    assert not is_dont_know("It started a week ago")
    assert not is_dont_know("I don't know why but my knee hurts")
