from __future__ import annotations

from agents.triage.lay_lexicon import lay_expand


def test_lay_words_append_the_plain_kb_terms_and_keep_the_original() -> None:
    assert lay_expand("My Ticker is doing flip-flops") == (
        "my ticker is doing flip-flops . heart palpitations heart"
    )
    assert lay_expand("my tummy hurts when I wee") == "my tummy hurts when i wee . stomach pee"


def test_text_without_lay_words_is_only_lowercased() -> None:
    assert lay_expand("Nothing Here") == "nothing here"


def test_curly_apostrophes_are_straightened() -> None:
    assert lay_expand("it\u2019s my belly") == "it's my belly . stomach"
