"""The emergency route's detector (agents/triage/emergency.py) on wording written apart from it.

Two paraphrase sets, each written by a helper that never read the rule, from NHS "when to call
999" pages and forum wording: `emergency-paraphrases.json` (87 emergencies, 85 routine
look-alikes; first sight 53/87 caught, 2/85 false alarms) and
`emergency-paraphrases-heldout.json` (74 and 76; first sight, after the first set's fixes,
52/74 caught, 4/76 false alarms). Both were then used to fix the rule, so both are held at
100 % here; the story sets' emergency stories (eval/stories/) are the unseen check.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.triage import kb
from agents.triage.emergency import emergency

DATA = Path(__file__).resolve().parents[2] / "data"
SETS = ("emergency-paraphrases.json", "emergency-paraphrases-heldout.json")


def _items(kind: str) -> list[tuple[str, str]]:
    out = []
    for name in SETS:
        data = json.loads((DATA / name).read_text(encoding="utf-8"))
        out += [(name, item["text"]) for item in data[kind]]
    return out


@pytest.mark.parametrize(("source", "text"), _items("emergency"))
def test_every_999_story_is_caught(source: str, text: str) -> None:
    assert emergency(text) is not None, text


@pytest.mark.parametrize(("source", "text"), _items("routine"))
def test_no_look_alike_is_called_an_emergency(source: str, text: str) -> None:
    assert emergency(text) is None, (text, emergency(text))


def test_the_kinds_match_what_each_set_says() -> None:
    data = json.loads((DATA / SETS[0]).read_text(encoding="utf-8"))
    kinds = {item["kind"] for item in data["emergency"]}
    assert kinds == {
        "chest", "stroke", "breathing", "collapse", "bleeding", "allergy", "head", "confusion",
        "child",
    }  # fmt: skip
    for item in data["emergency"]:
        hit = emergency(item["text"])
        assert hit is not None and hit.kind in kinds and hit.phrase


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no chest pain, but my ankles swell by the evening", None),
        ("I get chest pain on the stairs that goes off when I rest", None),
        ("chest pain on the stairs, and now it won't go away even sitting down", "chest"),
        ("I can't breathe through my nose since the cold", None),
        ("she collapsed last year and has been fine since", None),
        ("I'm scared of a stroke because my mum had one", None),
        ("his face has dropped on one side and he's slurring", "stroke"),
    ],
)
def test_context_decides(text: str, expected: str | None) -> None:
    hit = emergency(text)
    assert (hit.kind if hit else None) == expected


# The knowledge base's routine fragments that the rule calls emergencies, on purpose: each is
# on the NHS 999 list (a suspected pulmonary embolism, vomiting blood, FAST signs even when they
# pass or come with a known diagnosis). Anything else flagged is a false alarm.
ACCEPTED = {"pulmonary embolism", "peptic ulcer", "stroke follow-up", "bell's palsy", "als"}


def test_the_knowledge_base_raises_no_other_alarm() -> None:
    flagged = {c.name for c in kb.CONDITIONS for s in c.symptoms if emergency(s)}
    assert flagged <= ACCEPTED, flagged - ACCEPTED
