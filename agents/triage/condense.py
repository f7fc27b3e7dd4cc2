"""Condense a complaint into the short symptom list every appointment tool carries.

"I've been extremely fatigued with chills, body aches and a sore throat, it's becoming hard
to get through the day" -> "fatigue, chills, body aches, sore throat" (what the paper's
planner writes). Deterministic: the complaint is cut into clauses; each loses its subject,
intensifiers, articles and durations; a lone adjective becomes its noun ("fatigued" ->
"fatigue"), "fingers are swollen" becomes "swollen fingers"; a clause is kept only when it
holds a word the triage knowledge base uses to describe symptoms (so "it's becoming hard to
get through the day" goes). Nothing is invented: every word of the result is the user's or
the noun of the user's adjective. The local model may only polish the result
(agents.assistant.model_roles checks that a polish keeps every term, see `keeps_terms`).
"""

from __future__ import annotations

import re
from functools import lru_cache

from agents.triage.kb import CONDITIONS

_WORD = re.compile(r"[a-z][a-z']*")

# Words too common to say a clause is about a symptom, even though the knowledge base uses
# them ("it gets hard to breathe", "all day").
_GENERIC_WORDS = """a about after again ago all also always am an and any are around as at bad be
    because become becoming been before being bit but by can can't cannot come comes could day
    days do does doing don't done even ever every for from get gets getting go goes going
    got had hard has have having he her him his how i i'd i'll i'm i've if in into is it it's its
    just keep keeps kind know last lately like little long lot lots make makes making me month
    months more most much my myself need needs new no not now of off often on once one or other
    our out over past please pretty quite really recently right same see seem seems she since so
    some something sometimes sort start started still such take than that the their them then
    there these they thing things think this those through time times to too up us very want
    wanted was way we week weeks well went were what when where which while who why will with
    without work worse would year years yet you your"""
_GENERIC = frozenset(_GENERIC_WORDS.split())

# A lone adjective (or participle) -> the noun a symptom list uses.
ADJECTIVE_NOUNS = {
    "fatigued": "fatigue", "tired": "tiredness", "exhausted": "exhaustion",
    "dizzy": "dizziness", "lightheaded": "lightheadedness", "nauseous": "nausea",
    "nauseated": "nausea", "stiff": "stiffness", "weak": "weakness", "numb": "numbness",
    "itchy": "itching", "feverish": "fever", "breathless": "breathlessness",
    "bloated": "bloating", "constipated": "constipation", "shaky": "shakiness",
    "sleepy": "sleepiness", "drowsy": "drowsiness", "achy": "aches", "sweaty": "sweating",
    "wheezy": "wheezing", "anxious": "anxiety", "forgetful": "forgetfulness",
    "restless": "restlessness", "thirsty": "thirst", "confused": "confusion",
    "down": "feeling down",
}  # fmt: skip

_SPLIT = re.compile(
    r"[.;!?]+|,\s*|\s+\b(?:and|but|also|plus|along with|as well as)\b\s+"
    # "fatigued with chills": split after an adjective, not in "trouble with my memory"
    r"|(?<=ed|ly|sh|ck|ny|hy|zy|ky)\s+with\s+"
)
_LEADING = re.compile(
    r"^(?:(?:and|but|also|so|then|plus|lately|recently|now|well|um|hi|hello|doctor|oh|"
    r"i think|i guess|honestly|basically|sometimes|and now|for the past few days|"
    r"for (?:the )?(?:past|last) \w+ (?:days?|weeks?|months?|years?))\b[, ]*)+"
)
_SUBJECT = re.compile(
    r"^(?:i(?:'ve| have)? (?:been )?(?:having|getting|feeling|experiencing|noticing|"
    r"suffering from|dealing with)|i(?:'ve| have) (?:got|had|noticed)|"
    r"i(?:'m| am) (?:having|getting|feeling|experiencing|suffering from)|"
    r"i(?:'ve| have) been|i(?:'m| am)|i have|i get|i got|i keep (?:having|getting)|i keep|"
    r"i feel|i had|i notice|i noticed|i suffer from|there(?:'s| is| are| has been)|"
    r"(?:it|they)(?:'s| is| are| feel| feels| get| gets| look| looks)|it|they|my|"
    r"i(?:'ve| have)(?!\w)|i(?![\w']))\b\s*"
)
_INTENSIFIER = re.compile(
    r"\b(?:extremely|really|very|so|quite|pretty|super|terribly|awfully|incredibly|"
    r"a bit|a little|kind of|sort of|a lot of)\b\s*"
)
_ARTICLE = re.compile(r"^(?:a|an|the|some|bad|terrible|awful)\s+")
_TRAILING = re.compile(
    r"\s+(?:for (?:a long time|ages|a while|(?:the )?(?:past|last) (?:few |couple of )?"
    r"(?:\w+ )?(?:days?|weeks?|months?|years?)|(?:a |about |a few |several |\d+ |two |three )"
    r"(?:days?|weeks?|months?|years?))|lately|recently|these days|all the time|again|"
    r"now|too|as well|at all)$"
)
# "fingers are swollen" -> "swollen fingers"
_PART_STATE = re.compile(
    r"^([a-z' ]{2,30}?) (?:is|are|feel|feels|look|looks|got|get|gets|have been|has been|became)"
    r" ([a-z]+)$"
)
_FILLER = re.compile(r"^(?:i don't know|not sure|no|none|nothing|that's it|that's all)$")


@lru_cache(maxsize=1)
def symptom_vocabulary() -> frozenset[str]:
    """Words the knowledge base uses to describe symptoms, without the generic ones."""
    words: set[str] = set()
    for c in CONDITIONS:
        for fragment in c.symptoms:
            words.update(_WORD.findall(fragment.casefold().replace("’", "'")))
    return frozenset(w for w in words if w not in _GENERIC and len(w) > 1)


def _stem(word: str) -> str:
    """A crude stem, enough to match "knees"/"knee", "aches"/"aching", "stiff"/"stiffness"."""
    for suffix in ("ness", "ing", "ed", "es", "s", "y", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:5]


@lru_cache(maxsize=1)
def _cue_stems() -> frozenset[str]:
    return frozenset(_stem(w) for w in symptom_vocabulary()) | frozenset(
        _stem(n) for n in (*ADJECTIVE_NOUNS, *ADJECTIVE_NOUNS.values())
    )


def is_symptom(clause: str) -> bool:
    """Does the clause hold a word the knowledge base uses for symptoms?"""
    cues = _cue_stems()
    return any(w not in _GENERIC and _stem(w) in cues for w in _WORD.findall(clause))


def _clean(raw: str) -> str:
    low = raw.strip().strip("\"'()").strip().casefold()
    low = _LEADING.sub("", low)
    for _ in range(3):
        low = _SUBJECT.sub("", low).strip()
    low = _INTENSIFIER.sub("", low).strip()
    for _ in range(2):
        low = _TRAILING.sub("", low).strip()
        low = _ARTICLE.sub("", low).strip()
    low = re.sub(r"\bmy\b\s*", "", low)
    m = _PART_STATE.match(low)
    if m and m.group(2) not in _GENERIC:
        part = _ARTICLE.sub("", m.group(1).strip())
        low = f"{m.group(2)} {part}"
    low = ADJECTIVE_NOUNS.get(low, low)
    low = re.sub(r"\s+", " ", low).strip(" ,-")
    return re.sub(r"\bi\b", "I", low)


def condense_symptoms(text: str, *, limit: int = 200) -> str:
    """A short comma-separated list of the symptoms in `text` (see the module docstring)."""
    t = " ".join(text.replace("’", "'").split()).strip()
    kept: list[str] = []
    other: list[str] = []
    for raw in _SPLIT.split(t):
        if not raw or not raw.strip():
            continue
        c = _clean(raw)
        if not c or _FILLER.match(c.casefold()):
            continue
        bucket = kept if is_symptom(c.casefold()) else other
        if c not in bucket:
            bucket.append(c)
    # Nothing the knowledge base recognises: keep what was said rather than nothing.
    out = ", ".join(kept or other) or " ".join(text.split())
    if len(out) > limit:
        out = out[:limit].rsplit(" ", 1)[0].rstrip(",")
    return out


def terms(summary: str) -> list[str]:
    """The items of a symptom list ("fatigue, chills" -> ["fatigue", "chills"])."""
    return [t.strip() for t in summary.split(",") if t.strip()]


def keeps_terms(text: str, summary: str) -> bool:
    """Does `text` still name every term of `summary` (each of its content words, by stem)?
    The check a model's polish of a condensed list must pass."""
    have = {_stem(w) for w in _WORD.findall(text.casefold())}
    for term in terms(summary):
        words = [w for w in _WORD.findall(term.casefold()) if w not in _GENERIC] or _WORD.findall(
            term.casefold()
        )
        if not all(_stem(w) in have for w in words):
            return False
    return True
