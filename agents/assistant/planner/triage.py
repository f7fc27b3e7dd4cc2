"""How the messages of an appointment conversation become one kind of specialist: each message
classified on its own and together, the opener that needed a question set aside, and the rule
that unsure means ask, then a general physician (docs/agents.md, "Unsure means ask").

Kept apart from agents.assistant.planner.policy, which decides the steps; this decides what the complaint is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from agents.assistant.planner.types import TriageLike

GP = "general physician"
# An opener this short that the triage is unsure of ("a problem with my tummy"), or sends to a
# general physician ("I feel tired all the time"), names an area, not a picture: ask before
# settling, since the answer is where a specialist's signs show up (cold, dry skin, weight gain).
# A longer opener below the same confidence is a mixed picture; asking would mostly repeat it.
SHORT_OPENER_WORDS = 8
# "A problem with my wee", "something wrong with my eyes": an area and nothing about it. Asked
# about even when the triage is sure of the area's specialist, since the answer decides which
# (foamy urine and puffy eyes are a nephrologist's, not a urologist's).
AREA_ONLY = re.compile(
    r"^\W*(?:hi|hello|hey)?\W*(?:i(?:'ve| have)?|i've got|got|there's|there is|i think i have)?\s*"
    r"(?:a |an |some )?(?:little |small |bit of a )?(?:problem|issue|trouble|something wrong|"
    r"something|concern|worry)s? (?:with|about|in|down|going on with) (?:my|his|her|the|our) "
    r"[\w ]{1,20}?\W*$"
)
# "Her diabetes nurse wants her to see someone else": a referral with no reason given. The
# answer says why, and that decides the specialist (not the referrer's own field).
REFERRAL_ONLY = re.compile(
    r"\b(?:nurse|doctor|gp|consultant|team|clinic|physio|pharmacist)\b[^.;]{0,40}\b(?:wants?|says?|"
    r"said|told|asked)\b[^.;]{0,20}\b(?:see|be seen by|get seen by)\b[^.;]{0,10}\b(?:someone|a "
    r"specialist|somebody)\b"
)
# Unsure means ask, not guess: a complaint whose best specialty is below UNSURE_BELOW, or is
# within SPLIT_MARGIN of the runner-up while below SPLIT_TOP, is asked about once; still so
# after the answer, it goes to a general physician (who can refer on), and the user is told
# why. Set on the project's own sets, where every right specialist scored above them.
UNSURE_BELOW = 0.30
SPLIT_MARGIN = 0.05
SPLIT_TOP = 0.45


def past_prior(triage: TriageLike, past: Any) -> dict[str, float]:
    """Specialties of the person's similar past complaints, as a mild prior."""
    prior: dict[str, float] = {}
    if isinstance(past, list):
        for p in past[:5]:
            text = p.get("symptoms") if isinstance(p, Mapping) else None
            if isinstance(text, str) and text:
                r = triage.classify(text)
                if not r.vague:
                    prior[r.specialty] = prior.get(r.specialty, 0.0) + 1.0
    return prior


def scores(
    triage: TriageLike, msgs: Sequence[str], prior: Mapping[str, float] | None = None
) -> tuple[list[tuple[str, float]], bool]:
    """(specialties by descending probability, vague) of a complaint told in `msgs` (the
    opener, then each useful answer). Each message is classified on its own and the specific
    ones are averaged with the whole: a long conversation glued into one text lets filler
    ("I can't explain it", "for a year") drown the symptoms, and an answer weighs as much as
    the opener."""
    if len(msgs) == 1:
        r = triage.classify(msgs[0], prior)
        if r.vague and r.specialty == GP:
            return [(GP, r.confidence)] + [x for x in r.ranked if x[0] != GP], True
        return list(r.ranked), r.vague
    results = [triage.classify(m, prior) for m in msgs]
    first = results[0]
    if len(msgs[0].split()) <= SHORT_OPENER_WORDS or first.vague or weak(first.ranked):
        # The opener that needed a question named an area ("a problem with my tummy"); the
        # answers name the picture ("my side, in waves, down to the groin"): the opener
        # counts only as part of the whole.
        results = results[1:]
    # Each specific message, and the whole complaint (symptoms that only mean something
    # together: cold, weight gain, dry skin).
    whole = triage.classify(" ".join(msgs), prior)
    specific = [r for r in results if not r.vague] + [whole]
    total: dict[str, float] = {}
    for r in specific:
        for spec, p in r.ranked:
            total[spec] = total.get(spec, 0.0) + p / len(specific)
    ranked = sorted(total.items(), key=lambda kv: -kv[1])
    return ranked, all(r.vague for r in results)


def weak(ranked: Sequence[tuple[str, float]]) -> bool:
    """The evidence is weak (no specialty stands out) or split between two."""
    p1 = ranked[0][1]
    p2 = ranked[1][1] if len(ranked) > 1 else 0.0
    return p1 < UNSURE_BELOW or (p1 - p2 < SPLIT_MARGIN and p1 < SPLIT_TOP)
