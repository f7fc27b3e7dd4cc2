from __future__ import annotations

from collections import Counter

from agents.triage.kb import CONDITIONS, FOLLOW_UPS, VAGUE_UTTERANCES
from gateway.household.model import SPECIALIZATIONS


def test_every_specialty_has_at_least_six_conditions() -> None:
    counts = Counter(c.specialty for c in CONDITIONS)
    assert set(counts) == set(SPECIALIZATIONS)
    assert min(counts.values()) >= 6, counts
    assert len(CONDITIONS) >= 150


def test_specialty_strings_are_valid() -> None:
    bad = [c.name for c in CONDITIONS if c.specialty not in SPECIALIZATIONS]
    assert not bad


def test_condition_names_are_unique() -> None:
    dupes = [n for n, k in Counter(c.name for c in CONDITIONS).items() if k > 1]
    assert not dupes


def test_symptom_fragments_are_lay_sized_and_unique() -> None:
    for c in CONDITIONS:
        assert 5 <= len(c.symptoms) <= 12, c.name
        assert len(set(s.lower() for s in c.symptoms)) == len(c.symptoms), c.name
        for s in c.symptoms:
            assert s == s.strip() and s, c.name
            assert len(s.split()) <= 16, s
    all_frags = Counter(s.lower() for c in CONDITIONS for s in c.symptoms)
    shared = [s for s, k in all_frags.items() if k > 1]
    assert not shared, f"fragments in more than one condition: {shared}"


def test_vague_utterances_and_follow_ups() -> None:
    assert len(VAGUE_UTTERANCES) >= 40
    assert len(set(VAGUE_UTTERANCES)) == len(VAGUE_UTTERANCES)
    assert {"what", "where", "when", "triggers"} <= set(FOLLOW_UPS)
    for questions in FOLLOW_UPS.values():
        assert questions
        assert all(q.endswith("?") for q in questions)
