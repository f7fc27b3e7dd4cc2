"""Deterministic generator of triage training sentences from the knowledge base.

Every sentence is built from one condition's lay symptom fragments (1-3 of them) dropped into a
clause-agnostic template, with optional openers, durations, intensity words and closing
questions, and then lightly paraphrased (tummy/belly/stomach, pee/urinate, ...). Some sentences
are prefixed with a vague complaint ("I am not feeling well, ...") but keep the specialty label,
so filler never outweighs a real symptom. Vague complaints on their own get the label "vague".

Output is lowercase and depends only on the seed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from agents.triage.kb import CONDITIONS, VAGUE_UTTERANCES, Condition

VAGUE = "vague"

# Interchangeable lay phrasings. Any member found as a whole phrase may be swapped for another
# member of its group. Members of a group must be grammatically interchangeable.
PARAPHRASES: tuple[tuple[str, ...], ...] = (
    ("stomach", "tummy", "belly"),
    ("pee", "urinate", "wee", "pass urine"),
    ("peeing", "urinating", "passing urine"),
    ("short of breath", "breathless", "out of breath", "winded"),
    ("tired", "exhausted", "worn out", "drained"),
    ("throw up", "vomit", "be sick"),
    ("throwing up", "vomiting"),
    ("dizzy", "lightheaded", "woozy"),
    ("poop", "stool", "bowel movement"),
    ("diarrhea", "diarrhoea", "the runs", "loose motions"),
    ("painful", "sore"),
    ("hurts", "aches"),
    ("really", "very", "super", "quite"),
    ("weird", "strange", "odd"),
    ("lately", "recently", "these days"),
    ("i'm", "i am"),
    ("i've", "i have"),
    ("can't", "cannot"),
    ("doesn't", "does not"),
    ("won't", "will not"),
    ("a lot", "all the time", "constantly"),
    ("swollen", "puffy"),
    ("kid", "child"),
    ("feel", "get"),
    ("lump", "bump"),
    ("blood test", "blood work", "lab test"),
)

OPENERS: tuple[str, ...] = (
    "",
    "",
    "",
    "hi, ",
    "hello, ",
    "hi doctor, ",
    "so ",
    "well, ",
    "um, ",
    "ok so ",
    "good morning, ",
    "i need help, ",
    "i want to book an appointment, ",
    "booking for my mother, ",
    "for my husband: ",
    "about my son, ",
)

DURATIONS: tuple[str, ...] = (
    "for the past two weeks",
    "since yesterday",
    "for a few days",
    "for months now",
    "on and off for a year",
    "since last week",
    "for about a month",
    "since the weekend",
    "for a long time",
    "every day",
    "lately",
    "recently",
)

INTENSITY: tuple[str, ...] = ("really", "quite", "very", "a bit", "kind of", "so")

CLOSERS: tuple[str, ...] = (
    "",
    "",
    "",
    " what kind of doctor should i see?",
    " who should i book?",
    " which specialist do i need?",
    " is this serious?",
    " can i get an appointment?",
    " please help.",
    " what should i do?",
    " it's getting worse.",
    " it's been bothering me.",
)

# {a}, {b}, {c} are symptom fragments; {d} a duration.
TEMPLATES_1: tuple[str, ...] = (
    "{a}",
    "{a}.",
    "{a} {d}",
    "{d}, {a}",
    "i've got {a}",
    "i have {a}",
    "i've been having {a}",
    "lately {a}",
    "should i see someone about {a}?",
    "who treats {a}?",
    "what doctor do i need for {a}?",
    "problem: {a}",
    "i'm worried because {a}",
    "i noticed {a} {d}",
    "{a} and it's not getting better",
    "{a}, it started {d}",
    "it's about {a}",
    "the issue is {a}",
    "my main complaint is {a}",
    "{a}, any idea who i should see?",
)

TEMPLATES_2: tuple[str, ...] = (
    "{a} and {b}",
    "{a}, also {b}",
    "{a}. also {b}.",
    "i have {a} and {b}",
    "{d} {a} and {b}",
    "{a}. {b}. what should i do?",
    "{a}, plus {b}",
    "{a} and sometimes {b}",
    "{a}; {b}",
    "first {a}, now {b}",
    "{a} and on top of that {b}",
    "should i see someone about {a} and {b}?",
    "{a} {d}, and {b}",
    "{b} and {a}",
)

TEMPLATES_3: tuple[str, ...] = (
    "{a}, {b} and {c}",
    "{a}. {b}. {c}.",
    "i have {a}, {b}, and {c}",
    "{a} and {b}, also {c}",
    "{d}: {a}, {b}, {c}",
    "{a}; also {b} and {c}",
)

VAGUE_TEMPLATES: tuple[str, ...] = (
    "{v}",
    "{v}.",
    "{v} {d}",
    "{d} {v}",
    "{v}, what should i do?",
    "{v} and i don't know who to see",
    "{v}. {w}.",
    "{v}, {w}",
    "{v}, can you help?",
    "{v}, i need an appointment",
)

# A vague complaint used as filler in front of a real symptom ("i am not feeling well, ...").
MIXED_TEMPLATES: tuple[str, ...] = (
    "{v}, {s}",
    "{v}. {s}.",
    "{v}: {s}",
    "{s}. {v}.",
    "{v} and {s}",
)


# A small grammar of generic complaints, so the vague class is learned from structure
# ("i've been feeling <state>", "i need to <see someone>", "something is <off>") rather than
# from a fixed list of sentences.
_FEEL = ("i feel", "i've been feeling", "i'm feeling", "feeling", "i just feel", "i kind of feel")
_STATE = (
    "off",
    "unwell",
    "not well",
    "not great",
    "not right",
    "weird",
    "strange",
    "bad",
    "awful",
    "rubbish",
    "poorly",
    "under the weather",
    "not myself",
    "out of sorts",
    "sick",
    "funny",
    "terrible",
    "not good",
    "not so good",
    "horrible",
)
_WANT = ("i need to", "i want to", "i'd like to", "can i", "i think i should", "i have to")
_SEE = (
    "see a doctor",
    "see someone",
    "talk to a doctor",
    "get checked",
    "see a specialist",
    "get some advice",
    "make an appointment",
    "get medical advice",
    "get looked at",
)
_SOMETHING = (
    "something is wrong",
    "something is off",
    "something isn't right",
    "something feels wrong",
    "something weird is going on",
    "things are not right",
    "everything feels off",
)
_HAVE = ("i have", "i've got", "i'm having", "i've been having", "there's")
_PROBLEM = (
    "a problem",
    "some problems",
    "an issue",
    "some issues",
    "a few things going on",
    "some trouble",
    "some difficulties",
    "a health issue",
    "some symptoms",
    "a concern",
    "some pain",
    "some discomfort",
)
_TAIL = ("", "", "", " lately", " with my body", " with my health", " with me", " these days")


def vague_phrase(rng: random.Random) -> str:
    """One lowercase complaint without specialty signal: from the KB list or the grammar."""
    kind = rng.randrange(5)
    if kind == 0:
        return f"{rng.choice(_FEEL)} {rng.choice(_STATE)}{rng.choice(_TAIL)}"
    if kind == 1:
        return (
            f"{rng.choice(_WANT)} {rng.choice(_SEE)}{rng.choice(('', ' about my health', ' soon'))}"
        )
    if kind == 2:
        return f"{rng.choice(_SOMETHING)}{rng.choice(_TAIL)}"
    if kind == 3:
        return f"{rng.choice(_HAVE)} {rng.choice(_PROBLEM)}{rng.choice(_TAIL)}"
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


# Evaluative adjectives that also occur in vague complaints ("i feel terrible"); putting them in
# front of symptom noun phrases ("a terrible earache") teaches the model they carry no signal.
ADJECTIVES: tuple[str, ...] = (
    "terrible",
    "bad",
    "awful",
    "horrible",
    "strange",
    "weird",
    "annoying",
)
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


def utterances(condition: Condition, rng: random.Random, n: int) -> list[str]:
    """n lowercase training sentences describing `condition` in lay terms."""
    symptoms = [s.lower() for s in condition.symptoms]
    out: list[str] = []
    for _ in range(n):
        k = rng.choices((1, 2, 3), weights=(0.45, 0.4, 0.15))[0]
        k = min(k, len(symptoms))
        picked = [_intensify(s, rng) for s in rng.sample(symptoms, k)]
        template = rng.choice({1: TEMPLATES_1, 2: TEMPLATES_2, 3: TEMPLATES_3}[k])
        fields = dict(zip("abc", picked, strict=False))
        body = template.format(d=rng.choice(DURATIONS), **{x: fields.get(x, "") for x in "abc"})
        if rng.random() < MIX_VAGUE:
            body = rng.choice(MIXED_TEMPLATES).format(v=vague_phrase(rng), s=body)
        text = rng.choice(OPENERS) + body + rng.choice(CLOSERS)
        out.append(_tidy(paraphrase(text, rng)))
    return out


def vague_utterances(rng: random.Random, n: int) -> list[str]:
    """n lowercase complaints that carry no specialty signal."""
    out: list[str] = []
    for _ in range(n):
        v, w = vague_phrase(rng), vague_phrase(rng)
        body = rng.choice(VAGUE_TEMPLATES).format(v=v, w=w, d=rng.choice(DURATIONS))
        text = rng.choice(OPENERS) + body + rng.choice(CLOSERS)
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
