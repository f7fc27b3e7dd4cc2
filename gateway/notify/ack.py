"""Is an emergency contact's SMS reply an explicit "I'm helping"?

An acknowledgement stops the SOS ladder, so nobody else is texted and the ambulance is not
asked again. A false "yes" is therefore far worse than a false "no" (the contact is told to
reply OK, and the ladder keeps going). So this is a whitelist, not a keyword search: the
whole reply must be made of known acknowledgement phrases and a little harmless filler
("now", "thanks", "in 5 min"). Anything else (a question, a negation, a reservation, a
name, a word we do not know) is not an acknowledgement.

A delay is harmless filler only while it is short: "coming in 4 hours" leaves the person
alone for 4 hours, so a delay over `MAX_DELAY_MIN` minutes is not an acknowledgement (the
ladder keeps texting others and, in the end, the ambulance again).
"""

from __future__ import annotations

import re

__all__ = ["is_ack"]

MAX_LEN = 160  # one SMS; a long reply is a conversation, not an "OK"
MAX_DELAY_MIN = 30  # "in 10 min" is on the way; "in 90 mins" is someone else's job

# Each phrase is a tuple of tokens; "#" matches a number of minutes up to MAX_DELAY_MIN.
_ACK: frozenset[tuple[str, ...]] = frozenset(
    tuple(p.split())
    for p in (
        "ok", "okay", "ack", "acknowledged", "yes", "yep", "yeah",
        "coming", "i'm coming", "im coming", "i am coming",
        "on my way", "omw", "on the way", "i'm on my way", "im on my way", "i am on my way",
        "helping", "i'm helping", "im helping", "i am helping", "i will help", "i'll help",
        "got it", "here", "i'm here", "im here", "i am here", "i'm with her", "i'm with him",
        "i'll be there", "i will be there", "will be there",
    )
)  # fmt: skip
_FILLER: frozenset[tuple[str, ...]] = frozenset(
    tuple(p.split())
    for p in (
        "now", "right now", "right away", "asap", "soon", "sure", "thanks", "thank you", "x",
        "there", "in #", "in # min", "in # mins", "in # minutes", "# min", "# mins", "# minutes",
        "in a minute", "in a min", "in a few minutes", "in a few mins", "in half an hour",
        "half an hour",
    )
)  # fmt: skip
_LONGEST = max(len(p) for p in _ACK | _FILLER)

# Never part of an acknowledgement, whatever else the reply says. The whitelist already
# rejects them; listing them keeps a future filler phrase from letting one through.
_REFUSALS = frozenset({
    "no", "not", "nope", "can't", "cant", "cannot", "can", "won't", "wont", "unable", "busy",
    "but", "however", "later", "else", "don't", "dont", "never", "sorry", "stop", "maybe", "if",
    # A long delay is not "I'm helping" (the ladder must go on texting).
    "tomorrow", "tonight", "hours", "hrs", "hr", "days", "morning", "evening", "afternoon",
})  # fmt: skip

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "`": "'"})
_TOKEN = re.compile(r"[a-z0-9']+")
_NUMBER_UNIT = re.compile(r"(\d)([a-z])")  # "10min" -> "10 min"


def _tokens(body: str) -> list[str] | None:
    """Lower-case word tokens, or None when the reply is a question or too long."""
    text = body.translate(_APOSTROPHES).lower().strip()
    if not text or len(text) > MAX_LEN or "?" in text:
        return None
    words = _TOKEN.findall(_NUMBER_UNIT.sub(r"\1 \2", text))
    return [w.strip("'") for w in words if w.strip("'")]


def _phrase_at(tokens: list[str], i: int, phrases: frozenset[tuple[str, ...]]) -> int:
    """Length of the longest phrase of `phrases` starting at tokens[i]; 0 for none."""
    for n in range(min(_LONGEST, len(tokens) - i), 0, -1):
        chunk = tokens[i : i + n]
        if tuple("#" if t.isdigit() else t for t in chunk) in phrases:
            # A number in a phrase is a delay in minutes: too long and it is not filler.
            if any(t.isdigit() and int(t) > MAX_DELAY_MIN for t in chunk):
                return 0
            return n
    return 0


def is_ack(body: str | None) -> bool:
    """True only for an explicit acknowledgement: "OK", "ok.", "On my way!", "omw",
    "coming", "I'm helping", "yes, coming now", "coming in 10 min". False for "ok but I can't
    come", "not ok", "no", "busy", "call someone else", "ok? what happened", a delay over
    MAX_DELAY_MIN ("omw in 90 mins", "coming in 2 hours", "tomorrow") and anything
    unrecognised."""
    tokens = _tokens(body or "")
    if not tokens or _REFUSALS.intersection(tokens):
        return False
    i, acked = 0, False
    while i < len(tokens):
        if n := _phrase_at(tokens, i, _ACK):
            acked = True
        elif not (n := _phrase_at(tokens, i, _FILLER)):
            return False  # a word we do not know: do not guess
        i += n
    return acked
