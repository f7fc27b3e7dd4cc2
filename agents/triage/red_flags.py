"""Crisis wording in what a person writes: thoughts of suicide or self-harm, about themselves or
someone they write for ("my daughter has been cutting her arms").

Deterministic on purpose: the appointment planner (agents.assistant.planner.policy) checks every message with this
before anything else and, on a match, takes the crisis route (tell the person where to get help
now, store what was said, book nothing). The classifier is never asked, and the model never
decides, whether something is a crisis.

Recall matters more than precision here: a false alarm costs a message with crisis lines, a miss
can cost a life. Only two things are discounted:
  * an explicit denial right before the phrase, in the same clause ("I'm not suicidal",
    "no thoughts of hurting myself", "I would never harm myself"); "can't" is not a denial
    ("I can't stop thinking about ending my life");
  * accidents, by requiring intent for ambiguous verbs ("I hurt myself playing football" is not
    a match; "I hurt myself on purpose" is).
"""

from __future__ import annotations

import functools
import re

_SELF = r"(?:myself|himself|herself|themselves|themself)"
_POSS = r"(?:my|his|her|their)"
_BODY = r"(?:arms?|wrists?|legs?|thighs?|skin|stomach)"

_SUICIDE = (
    r"suicid\w*",
    rf"(?:kill|killing|killed|end|ending|take|taking) (?:{_SELF}|{_POSS} (?:own )?life)",
    r"(?:end|ending) it all",
    r"(?:want|wanting|going|gonna|plan|planning|thinking (?:about|of)|thoughts of) (?:to )?"
    r"(?:end|ending) (?:it|things|everything)",
    r"(?:be |been |am |i'm |is |are |were )?better off (?:dead|without me|without (?:him|her|them))",
    r"(?:want|wants|wanted|wanting|wish|wishes) (?:to be|i was|i were|(?:he|she) (?:was|were)) dead",
    r"(?:want|wants|wanting|wish|wishes) to die",
    r"wish (?:i|he|she) (?:could )?(?:die|wasn't here|was not here|weren't here|wasn't alive|"
    r"had never been born)",
    r"(?:don't|doesn't|do not|does not) want to (?:live|be alive|be here|wake up) ?(?:any ?more)?",
    r"(?:not sure|don't know if|don't know whether) (?:i|he|she) want\w* to (?:live|be alive|go on)",
    r"no (?:reason|point) (?:to|in) (?:live|living|going on)",
    r"(?:life|it) (?:is|isn't|is not|'s not) (?:not )?worth living",
    r"how many (?:pills|tablets|paracetamol) (?:it would take|would it take|to take|to kill)",
    r"overdos\w*",
    r"(?:stockpil\w*|sav\w* up|hoard\w*) (?:my |his |her |their )?(?:\w+ )?"
    r"(?:pills|tablets|medication|medicines?)",
    rf"hang {_SELF}",
    r"jump (?:off|in front of) (?:a|the) (?:bridge|building|train|roof)",
)

_SELF_HARM = (
    r"self[- ]?harm\w*",
    r"self[- ]?injur\w*",
    rf"(?:hurt|hurting|harm|harming|cut|cutting|burn|burning|injure|injuring|hit|hitting) "
    rf"{_SELF} (?:on purpose|deliberately|intentionally)",
    rf"(?:thoughts?|thinking|think) (?:of|about) (?:hurting|harming|cutting|injuring|burning) "
    rf"{_SELF}",
    rf"(?:want|wants|wanting|urges?) to (?:hurt|harm|cut|injure|burn) {_SELF}",
    rf"cutting (?:{_SELF}|{_POSS} {_BODY})",
    rf"(?:been|keeps?|kept|started) (?:cutting|burning|scratching) (?:{_SELF}|{_POSS} {_BODY})",
)

_CRISIS = re.compile(r"\b(?:" + "|".join(_SUICIDE + _SELF_HARM) + r")\b")

# A denial just before the phrase, in the same clause. Not "can't"/"couldn't": "I can't stop
# thinking about killing myself" denies nothing.
_DENIAL = re.compile(
    r"\b(?:no|not|never|without|nor|don't|doesn't|didn't|haven't|hasn't|isn't|aren't|wasn't|"
    r"won't|wouldn't|denies|denied)\b"
)
_CLAUSE_END = re.compile(r"[.,;:!?]|\bbut\b|\bthough\b|\bhowever\b")
DENIAL_WINDOW = 3  # words before the phrase a denial may sit in


# Chat often drops apostrophes ("i dont want to live"): put them back so one pattern serves both.
_NO_APOSTROPHE = re.compile(
    r"\b(don|doesn|didn|can|couldn|wouldn|shouldn|won|isn|aren|wasn|weren|haven|hasn|hadn)t\b"
    r"|\b(i)(m|ve|d)\b"
)


def _apostrophe(m: re.Match[str]) -> str:
    if m.group(1):
        return f"{m.group(1)}'t"
    return f"{m.group(2)}'{m.group(3)}"


def norm_chat(text: str) -> str:
    """Casefolded, curly quotes straightened, spaces collapsed, chat's dropped apostrophes
    restored ("i dont" -> "i don't"): the form every red-flag pattern is written for."""
    t = text.replace("\u2019", "'").replace("\u2018", "'").casefold()
    return _NO_APOSTROPHE.sub(_apostrophe, " ".join(t.split()))


def _denied(text: str, start: int) -> bool:
    before = text[:start]
    cut = [m.end() for m in _CLAUSE_END.finditer(before)]
    clause = before[cut[-1] :] if cut else before
    words = clause.split()[-DENIAL_WINDOW:]
    return bool(_DENIAL.search(" ".join(words)))


# The planner asks about every message at every step of a conversation: the same few texts.
@functools.lru_cache(maxsize=4096)
def crisis(text: str) -> str | None:
    """The first crisis phrase in `text` that is not denied, or None."""
    t = norm_chat(text)
    for m in _CRISIS.finditer(t):
        if not _denied(t, m.start()):
            return m.group(0)
    return None
