from __future__ import annotations

import random
from collections import Counter

from agents.triage import synth
from agents.triage.kb import CONDITIONS
from gateway.household.model import SPECIALIZATIONS


def test_training_set_is_deterministic_for_a_seed() -> None:
    a = synth.training_set(seed=3, per_condition=5)
    b = synth.training_set(seed=3, per_condition=5)
    assert a == b
    c = synth.training_set(seed=4, per_condition=5)
    assert a[0] != c[0]


def test_training_set_labels_and_balance() -> None:
    texts, labels = synth.training_set(seed=0, per_condition=10)
    assert len(texts) == len(labels)
    counts = Counter(labels)
    assert set(counts) == set(SPECIALIZATIONS) | {synth.VAGUE}
    # the vague class is about as large as an average specialty
    mean_specialty = (len(labels) - counts[synth.VAGUE]) / len(SPECIALIZATIONS)
    assert 0.5 * mean_specialty <= counts[synth.VAGUE] <= 2 * mean_specialty
    assert all(t == t.lower() and t.strip() for t in texts)


def test_utterances_use_the_conditions_symptoms() -> None:
    cond = next(c for c in CONDITIONS if c.name == "urinary tract infection")
    out = synth.utterances(cond, random.Random(1), 25)
    assert len(out) == 25
    assert out == synth.utterances(cond, random.Random(1), 25)
    assert len(set(out)) > 15, "templates and paraphrases should vary the sentences"
    assert all(t == t.lower() for t in out)


def test_paraphrase_swaps_whole_phrases_only() -> None:
    rng = random.Random(0)
    seen = {synth.paraphrase("my stomach hurts when i pee", rng, p=1.0) for _ in range(30)}
    assert any("tummy" in s or "belly" in s for s in seen)
    assert any("urinate" in s or "wee" in s or "pass urine" in s for s in seen)
    # "peeing" is its own group and matches are whole words: never "urinateing"
    seen = {synth.paraphrase("it hurts when peeing", rng, p=1.0) for _ in range(20)}
    assert all(s.endswith(("peeing", "urinating", "passing urine")) for s in seen)


def test_vague_sentences_are_labelled_vague() -> None:
    out = synth.vague_utterances(random.Random(2), 50)
    assert len(out) == 50 and all(out)
