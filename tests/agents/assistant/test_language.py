from __future__ import annotations

import pytest

from agents.assistant.language import is_dont_know, read_yes_no


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
