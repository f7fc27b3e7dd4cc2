"""Physical red flags in what a person writes: what the NHS says needs 999 now, not a booking.

Deterministic on purpose, like the crisis route (agents.triage.red_flags): the planner checks
every message with `emergency()` right after the crisis check and, on a match, tells the person
to call 999 (and, if they wear a watch, to press SOS), stores what was said and books nothing.
The classifier and the model are never asked whether something is an emergency.

The list is the NHS ambulance services' "when to call 999" (SWASFT, SECAmb: chest pain that does
not go away, breathing difficulties, loss of consciousness, fits that are not stopping, severe
bleeding, severe allergic reactions, suspected stroke, sudden confusion, serious head injury),
the FAST stroke signs, and NICE NG143's red features in a feverish child (docs/clinical.md,
"The assistant's emergency route"). Each flag is a pattern plus, where a word alone is not
enough, the context that makes it acute ("chest pain" + "now" / "at rest" / "won't go away").

Precision matters as much as recall here: a family told to call 999 for a stable symptom stops
trusting the hub. So a flag does not fire on:
  * a denied symptom ("no chest pain, but ...": agents.triage.negation drops it first);
  * a recurring, situational pattern ("chest pain when I climb stairs that goes off when I
    rest" is angina for a cardiologist; "I can't breathe through my nose" is for ENT; "I can't
    breathe when I lie flat" is for a cardiologist);
  * an event long past ("she collapsed last year").
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from agents.triage import emergency_signs as sign
from agents.triage import negation
from agents.triage.red_flags import norm_chat


@dataclass(frozen=True, slots=True)
class Emergency:
    kind: str  # chest, stroke, breathing, collapse, bleeding, allergy, head, confusion, child
    phrase: str  # the words that matched, for the audit and tests; never logged


_SENTENCE = re.compile(r"[^.!?;\n]+")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def _chest(s: str) -> Emergency | None:
    m = sign.CHEST_RX.search(s)
    if not m or not sign.CHEST_ACUTE_RX.search(s) or sign.past(s):
        return None
    # "Probably just indigestion" does not undo two signs of a heart attack (NHS: call 999
    # even if you think it is indigestion).
    acute = {m.group(0) for m in sign.CHEST_ACUTE_RX.finditer(s)}
    if sign.CHEST_NOT.search(s) and not sign.NOT_INDIGESTION.search(s) and len(acute) < 2:
        return None
    if sign.EXERTIONAL.search(s) and not sign.CHEST_STILL.search(s):
        return None
    return Emergency("chest", m.group(0))


def _stroke(s: str) -> Emergency | None:
    if sign.NOT_STROKE.search(s):
        return None
    for m in sign.STROKE_RX.finditer(s):
        if sign.ARM_JOINT.match(s, m.end()) and m.group(0).endswith(("arm", "arms")):
            continue  # a stiff shoulder, not a weak arm
        return Emergency("stroke", m.group(0))
    side = sign.ONE_SIDE.search(s)
    if side and sign.TODAY_RX.search(s):
        return Emergency("stroke", side.group(0))
    return None


def _breathing(s: str) -> Emergency | None:
    short = sign.CATCH_BREATH.search(s)
    if short and sign.AT_REST.search(s) and not sign.past(s):
        return Emergency("breathing", short.group(0))
    severe = sign.BREATH_SEVERE.search(s)
    if severe and not sign.past(s) and not sign.BREATH_SITUATIONAL.search(s[severe.end() :]):
        return Emergency("breathing", severe.group(0))
    for m in sign.BREATH_RX.finditer(s):
        situation = sign.BREATH_SITUATIONAL.search(s[m.end() :])
        if situation and not _sudden_anyway(s, situation.group(0)):
            continue
        if sign.BREATH_FELT.search(s[: m.start()]) and not _sudden_anyway(s, ""):
            continue
        return Emergency("breathing", m.group(0))
    return None


def _sudden_anyway(s: str, situation: str) -> bool:
    """'I can't breathe properly, it came on suddenly and it's getting worse': the qualifier
    does not make it a usual pattern. The nose is always the nose's."""
    if "nose" in situation or "nostril" in situation:
        return False
    return bool(sign.SUDDEN_WORD.search(s)) and bool(sign.WORSENING.search(s))


def _collapse(s: str) -> Emergency | None:
    m = sign.COLLAPSE_RX.search(s)
    if not m or sign.past(s):
        return None
    if m.group(0).startswith("collaps") and sign.CAME_ROUND.search(s):
        return None  # a faint from which they came round at once: a booking (syncope)
    return Emergency("collapse", m.group(0))


def _bleeding(s: str) -> Emergency | None:
    # Heavy periods are a gynaecologist's, unless pregnant or with signs of losing blood.
    if sign.NOT_BLEED.search(s) and not (sign.PREGNANT.search(s) or sign.SHOCK.search(s)):
        return None
    m = sign.BLEED_RX.search(s) or (sign.SHOCK.search(s) and sign.MUCH_BLOOD.search(s))
    return Emergency("bleeding", m.group(0)) if m else None


def _allergy(s: str) -> Emergency | None:
    m = sign.SWELL_RX.search(s)
    if not m or sign.NOT_ALLERGY.search(s):
        return None
    if sign.AIRWAY.search(m.group(0)) or sign.ALLERGY_CONTEXT.search(s):
        return Emergency("allergy", m.group(0))
    return None


def _head(s: str) -> Emergency | None:
    m = sign.HEADACHE.search(s)
    if m and sign.HEAD_SEVERE.search(s) and not sign.past(s):
        return Emergency("head", m.group(0))
    m = sign.HEAD_INJURY_RX.search(s)
    if m and sign.INJURY_SIGNS.search(s):
        return Emergency("head", m.group(0))
    return None


def _confusion(s: str) -> Emergency | None:
    m = sign.CONFUSED.search(s)
    if not m or not (sign.TODAY_RX.search(s) or sign.COLLAPSE_RX.search(s)):
        return None
    # Months of decline is dementia's, for a booking; unless they say this was sudden.
    if sign.GRADUAL.search(s) and not sign.SUDDEN_WORD.search(s):
        return None
    return Emergency("confusion", m.group(0))


def _child(s: str) -> Emergency | None:
    m = sign.CHILD_RX.search(s) or (sign.GLASS.search(s) and sign.NO_FADE.search(s))
    return Emergency("child", m.group(0)) if m else None


_CHECKS = (_chest, _stroke, _breathing, _collapse, _bleeding, _allergy, _head, _confusion, _child)


# The planner asks about every message at every step of a conversation: the same few texts.
@functools.lru_cache(maxsize=4096)
def emergency(text: str) -> Emergency | None:
    """The first physical red flag in `text` (a message as written), or None.

    Each sentence is judged on its own, after its denied symptoms are dropped, so "no chest
    pain. I feel sick" raises nothing and the context of a flag is the sentence it is in."""
    clean = sign.FEAR.sub(" ", negation.drop_denied(norm_chat(text)))
    for s in _sentences(clean):
        for check in _CHECKS:
            hit = check(s)
            if hit:
                return hit
    return None
