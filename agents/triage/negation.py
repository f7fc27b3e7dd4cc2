"""Denied symptoms, taken out of a complaint before it is classified: "no chest pain, but my
ankles swell" is about the ankles, and "it doesn't burn when I pee" says nothing for a bladder
infection. The classifier is a bag of words and n-grams; left in, a denied symptom counts for it.

Narrow on purpose, because many complaints are negative in form: "I can't hear", "I'm not
sleeping", "no energy", "I don't enjoy anything", "it won't stop bleeding" are symptoms. A span
is dropped only when a denial ("no", "not", "never", "don't have", ...) is followed,
after at most a few filler words ("have", "any", "get", "feel"), by a word of DENIABLE: a
symptom one can have or not have. The span runs to the end of its clause (punctuation, "but",
"and", "just", ...), so "no nausea or vomiting" goes as one. Also dropped: "my stomach is fine",
"it's not my joints". "Without" is no denial: "I can't walk without pain" is pain.
"""

from __future__ import annotations

import re

# Symptoms (and risk habits) a person says they do NOT have. Not faculties ("energy",
# "appetite", "sleep"): "no energy" is a complaint.
DENIABLE = (
    r"pain|pains|painful|ache|aches|aching|hurt|hurts|hurting|sore|soreness|tender|"
    r"chest pains?|headaches?|migraines?|fevers?|temperature|feverish|chills|cough|coughing|"
    r"blood|bleeding|bloody|rash|rashes|spots|hives|itch|itching|itchy|swelling|swollen|"
    r"lumps?|bumps?|dizzy|dizziness|lightheaded|faint|fainting|nausea|nauseous|sick|"
    r"vomiting|vomit|throwing up|diarrh(?:o)?ea|runs|constipat\w*|burn|burns|burning|"
    r"sting|stings|stinging|discharge|numb|numbness|tingling|wheez\w*|breathless\w*|"
    r"short of breath|shortness of breath|trouble breathing|struggl\w* to breathe|"
    r"difficulty breathing|palpitations|racing heart|"
    r"weight loss|lost weight|depressed|depression|anxious|anxiety|suicidal|"
    r"smoke|smoked|smoking|smoker|drink|drinker|injur\w*|fall|falls|fell|"
    r"sore throat|runny nose|blocked nose|cold|flu|infection"
)
# What may sit between the denial and the symptom.
_FILLER = (
    r"(?:(?:have|has|had|get|gets|got|getting|feel|feels|felt|feeling|notice|noticed|"
    r"see|seen|any|a|an|the|much|real|really|actual|been|having|experience|experienced|"
    r"experiencing|in|of|at all|ever)\s+){0,3}"
)
_DENIAL = (
    r"(?:no|not|never|nor|don't|do not|doesn't|does not|didn't|did not|haven't|"
    r"have not|hasn't|has not|isn't|is not|aren't|are not|wasn't|was not|neither)"
)
_CLAUSE = (
    r"(?:[^.,;:!?]*?)(?=[.,;:!?]|\b(?:but|and|though|although|however|just|except|only|yet)\b|$)"
)

_DENIED = re.compile(rf"\b{_DENIAL}\s+{_FILLER}(?:{DENIABLE})\b{_CLAUSE}")
_BODY = (
    r"stomach|tummy|belly|chest|heart|head|back|joints?|knees?|skin|eyes?|ears?|throat|"
    r"breathing|lungs?|bowels?|bladder|waterworks|legs?|arms?|feet|hands?|sleep|appetite|"
    r"hearing|vision|eyesight|sight|sense of smell|smell|periods?|weight|mood"
)
_FINE = re.compile(
    rf"\b(?:(?:my|the|his|her)\s+)?(?:{_BODY})\s+(?:is|are|'s|'re|seems?|feels?)\s+"
    rf"(?:fine|ok|okay|normal|good|alright|all right)\b"
    rf"|\b(?:it isn't|it's not|it is not|that's not|that isn't|not)\s+(?:my|the|his|her)\s+"
    rf"(?:{_BODY})\b"
)


def drop_denied(text: str) -> str:
    """`text` (already lowercased) without the symptoms it denies, spaces collapsed."""
    out = _FINE.sub(" ", _DENIED.sub(" ", text))
    return " ".join(out.split())
