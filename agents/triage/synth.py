"""Deterministic generator of triage training sentences from the knowledge base.

Every sentence is built from one condition's lay symptom fragments (1-3 of them) dropped into a
clause-agnostic template, with optional openers, durations, intensity words and closing
questions, and then lightly paraphrased (tummy/belly/stomach, pee/urinate, ...). Some sentences
are prefixed with a vague complaint ("I am not feeling well, ...") but keep the specialty label,
so filler never outweighs a real symptom. Vague complaints on their own get the label "vague".
Conversational hedges ("i can't really put my finger on it but ...") and asides are added to both
kinds; some sentences use the condition's name in family-history and testing requests ("my mum
has gout, should i get tested?"). The word lists and templates live in agents.triage.phrasebook;
the lay-word lexicon the classifier applies to every text lives in agents.triage.lay_lexicon.

Output is lowercase and depends only on the seed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from agents.triage.kb import CONDITIONS, VAGUE_UTTERANCES, Condition
from agents.triage.phrasebook import (
    ADJECTIVES,
    ASIDES,
    CLOSERS,
    DURATIONS,
    FAMILY_TEMPLATES,
    HEDGES,
    INTENSITY,
    MIXED_TEMPLATES,
    NAME_TEMPLATES,
    OPENERS,
    PARAPHRASES,
    RELATIVES,
    TEMPLATES_1,
    TEMPLATES_2,
    TEMPLATES_3,
    VAGUE_FEEL,
    VAGUE_HAVE,
    VAGUE_PROBLEM,
    VAGUE_SEE,
    VAGUE_SOMETHING,
    VAGUE_STATE,
    VAGUE_TAIL,
    VAGUE_TEMPLATES,
    VAGUE_WANT,
)

VAGUE = "vague"


def vague_phrase(rng: random.Random) -> str:
    """One lowercase complaint without specialty signal: from the KB list or the grammar."""
    kind = rng.randrange(5)
    if kind == 0:
        return f"{rng.choice(VAGUE_FEEL)} {rng.choice(VAGUE_STATE)}{rng.choice(VAGUE_TAIL)}"
    if kind == 1:
        return f"{rng.choice(VAGUE_WANT)} {rng.choice(VAGUE_SEE)}{rng.choice(('', ' about my health', ' soon'))}"
    if kind == 2:
        return f"{rng.choice(VAGUE_SOMETHING)}{rng.choice(VAGUE_TAIL)}"
    if kind == 3:
        return f"{rng.choice(VAGUE_HAVE)} {rng.choice(VAGUE_PROBLEM)}{rng.choice(VAGUE_TAIL)}"
    return rng.choice(VAGUE_UTTERANCES).lower()


def _compile_paraphrases() -> list[tuple[re.Pattern[str], tuple[str, ...]]]:
    out = []
    for group in PARAPHRASES:
        alts = "|".join(re.escape(p) for p in sorted(group, key=len, reverse=True))
        out.append((re.compile(rf"(?<![\w'])(?:{alts})(?![\w'])"), group))
    return out


_PARAPHRASE_RES = _compile_paraphrases()


def paraphrase(text: str, rng: random.Random, p: float = 0.35) -> str:
    """Swap whole phrases for an equivalent member of their PARAPHRASES group with prob. p."""

    for pattern, group in _PARAPHRASE_RES:

        def swap(m: re.Match[str], group: tuple[str, ...] = group) -> str:
            if rng.random() >= p:
                return m.group(0)
            return rng.choice([g for g in group if g != m.group(0)] or list(group))

        text = pattern.sub(swap, text)
    return text


_GRADABLE = re.compile(r"\b(painful|sore|swollen|itchy|stiff|tired|weak|dizzy|bad|high|heavy)\b")


def _intensify(fragment: str, rng: random.Random) -> str:
    """Maybe put an intensity word before a pain/feeling adjective ("really sore"), or an
    evaluative adjective after a leading article ("a terrible cough")."""
    r = rng.random()
    if r < 0.3:
        m = _GRADABLE.search(fragment)
        if m is not None:
            return f"{fragment[: m.start()]}{rng.choice(INTENSITY)} {fragment[m.start() :]}"
    elif r < 0.5:
        a = re.match(r"(an?) ", fragment)
        if a is not None:
            adj = rng.choice(ADJECTIVES)
            article = "an" if adj[0] in "aeiou" else "a"
            return f"{article} {adj} {fragment[a.end() :]}"
    return fragment


def _tidy(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([,.;:?])", r"\1", text)
    text = re.sub(r"([.?])\.", r"\1", text)
    return text


# Share of specialty sentences that start with a vague complaint ("i feel off, ...").
MIX_VAGUE = 0.25
# Shares of specialty sentences built from the condition's name / from family history.
NAME_SHARE = 0.1
FAMILY_SHARE = 0.05
# Chances of a conversational hedge before / an aside after a sentence's body.
HEDGE_P = 0.2
ASIDE_P = 0.15


def _hedge(body: str, rng: random.Random) -> str:
    if rng.random() < HEDGE_P:
        body = rng.choice(HEDGES) + body
    if rng.random() < ASIDE_P:
        body = body.rstrip(".?!") + rng.choice(ASIDES)
    return body


def utterances(condition: Condition, rng: random.Random, n: int) -> list[str]:
    """n lowercase training sentences describing `condition` in lay terms."""
    symptoms = [s.lower() for s in condition.symptoms]
    out: list[str] = []
    for _ in range(n):
        r = rng.random()
        if r < NAME_SHARE:
            body = rng.choice(NAME_TEMPLATES).format(n=condition.name, r=rng.choice(RELATIVES))
        elif r < NAME_SHARE + FAMILY_SHARE:
            a = _intensify(rng.choice(symptoms), rng)
            body = rng.choice(FAMILY_TEMPLATES).format(a=a, r=rng.choice(RELATIVES))
        else:
            k = rng.choices((1, 2, 3), weights=(0.45, 0.4, 0.15))[0]
            k = min(k, len(symptoms))
            picked = [_intensify(s, rng) for s in rng.sample(symptoms, k)]
            template = rng.choice({1: TEMPLATES_1, 2: TEMPLATES_2, 3: TEMPLATES_3}[k])
            fields = dict(zip("abc", picked, strict=False))
            body = template.format(d=rng.choice(DURATIONS), **{x: fields.get(x, "") for x in "abc"})
            if rng.random() < MIX_VAGUE:
                body = rng.choice(MIXED_TEMPLATES).format(v=vague_phrase(rng), s=body)
        text = rng.choice(OPENERS) + _hedge(body, rng) + rng.choice(CLOSERS)
        out.append(_tidy(paraphrase(text, rng)))
    return out


def vague_utterances(rng: random.Random, n: int) -> list[str]:
    """n lowercase complaints that carry no specialty signal."""
    out: list[str] = []
    for _ in range(n):
        v, w = vague_phrase(rng), vague_phrase(rng)
        body = rng.choice(VAGUE_TEMPLATES).format(v=v, w=w, d=rng.choice(DURATIONS))
        text = rng.choice(OPENERS) + _hedge(body, rng) + rng.choice(CLOSERS)
        out.append(_tidy(paraphrase(text, rng)))
    return out


def training_set(
    seed: int = 0,
    per_condition: int = 30,
    conditions: Sequence[Condition] = CONDITIONS,
) -> tuple[list[str], list[str]]:
    """(texts, labels): every plain symptom fragment, `per_condition` generated sentences per
    condition, and vague complaints labelled VAGUE (about as many as an average specialty)."""
    rng = random.Random(seed)
    texts: list[str] = []
    labels: list[str] = []
    for cond in conditions:
        for s in cond.symptoms:
            texts.append(s.lower())
            labels.append(cond.specialty)
        for t in utterances(cond, rng, per_condition):
            texts.append(t)
            labels.append(cond.specialty)
    specialties = {c.specialty for c in conditions}
    n_vague = len(texts) // max(1, len(specialties))
    texts.extend(v.lower() for v in VAGUE_UTTERANCES)
    labels.extend(VAGUE for _ in VAGUE_UTTERANCES)
    for t in vague_utterances(rng, n_vague):
        texts.append(t)
        labels.append(VAGUE)
    return texts, labels
