"""Fact-level scoring of one caller step: does the prediction mean what the reference means?

The paper's ValuesAcc asks for the reference's exact words; two right messages worded apart
score 0. These checks keep the meaning and nothing else:

- structured values (every parameter that is not free text or symptoms: ids, phone numbers,
  specialisation, flags, slots, schedules, timestamps, locations) must match exactly
  (`metrics.values_match`, not lenient);
- free text (message, questions, text) must keep every fact of the reference that the
  history holds: numbers by value ("87%" = "87"), times ("09:30" = "9:30"), ids and phone
  numbers, and the words of names (the user's, a specialist's or contact's `name`). A number or name the
  reference has but the history does not is the reference's own invention, not a fact;
- symptoms (symptoms, current_symptoms) must recall every term of the reference's list: a
  term ("morning knee stiffness") is recalled when each of its content words is in the
  prediction, by a crude stem;
- no repr residue: no predicted string carries a Python repr ("{'spo2': 87}", "None").

Independent of the agent's own code (agents.triage.condense has its own term check): the
yardstick is not the thing measured.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.eval.metrics import values_match

FREE_TEXT = frozenset({"message", "questions", "text"})
SYMPTOMS = frozenset({"symptoms", "current_symptoms"})

_TIME = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?![\d:])")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])")
_ID = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9][A-Za-z0-9_-]{2,63}$|^\+?\d{7,15}$")
_NAME_WORD = re.compile(r"\b[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)*\b")
_NOT_NAMES = frozenset({"Dr", "Mr", "Mrs", "Ms", "The", "Your", "You", "Soft", "Hard", "End"})
_WORD = re.compile(r"[a-z][a-z']*")
_STOP_WORDS = """a an the and or of in on at to for with my i i'm i've me it its is are was be been
    have has had get got feel feeling when after before from by very really some all time
    times lately recently look looks seem seems keep keeps"""
_STOP = frozenset(_STOP_WORDS.split())
_REPR = re.compile(
    r"\{'|'\}|\['|'\]|\{\"|\"\}|\bNone\b|\bTrue\b|\bFalse\b|object at 0x|\\n|\{\}|\[\]"
)


def _keyed(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(the key it is under, string) for every string in a JSON value."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _keyed(v, str(k))
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _keyed(v, key)


def _strings(value: Any) -> Iterator[str]:
    return (s for _, s in _keyed(value))


def _number(text: str) -> float:
    return float(text)


def numbers(text: str) -> tuple[set[str], set[float]]:
    """(times as "H:MM", other numbers by value) in `text`; dates count by their parts."""
    times = {f"{int(m.group(1))}:{m.group(2)}" for m in _TIME.finditer(text)}
    rest = _TIME.sub(" ", text)
    return times, {_number(m.group(0)) for m in _NUMBER.finditer(rest.replace("/", " "))}


@dataclass(frozen=True, slots=True)
class HistoryFacts:
    """What the history holds: ids, name words, times and numbers."""

    ids: frozenset[str]
    names: frozenset[str]
    times: frozenset[str]
    values: frozenset[float]

    @classmethod
    def of(cls, history: Sequence[Mapping[str, Any]]) -> HistoryFacts:
        ids: set[str] = set()
        names: set[str] = set()
        texts: list[str] = []
        for state in history:
            kind, value = state.get("from"), state.get("value")
            if kind == "planner":
                continue  # the planner's own words are not facts
            if kind == "user":
                texts.append(str(value))  # its numbers (vitals), not its words
                continue
            for key, s in _keyed(value):
                texts.append(s)
                if _ID.match(s.strip()):
                    ids.add(s.strip())
                elif key == "name" or key.endswith("_name"):  # a person's or specialist's
                    names.update(w for w in _NAME_WORD.findall(s) if w not in _NOT_NAMES)
        times, values = numbers(" ".join(texts).replace("-", " "))
        return cls(frozenset(ids), frozenset(names), frozenset(times), frozenset(values))

    def facts_in(self, text: str) -> list[str]:
        """The facts of `text` the history holds, as the strings to look for."""
        out: list[str] = []
        rest = text
        for i in sorted(self.ids, key=len, reverse=True):
            if i.casefold() in rest.casefold():
                out.append(i)
                rest = re.sub(re.escape(i), " ", rest, flags=re.I)
        out += sorted(w for w in set(_NAME_WORD.findall(rest)) if w in self.names)
        times, values = numbers(rest)
        out += sorted(t for t in times if t in self.times)
        out += [_fmt(v) for v in sorted(values) if v in self.values]
        return out


def _fmt(v: float) -> str:
    return str(int(v)) if v == int(v) else str(v)


def kept(fact: str, text: str) -> bool:
    """Is `fact` (as `HistoryFacts.facts_in` gives it) in `text`?"""
    if _TIME.fullmatch(fact):
        return fact in numbers(text)[0]
    if _NUMBER.fullmatch(fact):
        return _number(fact) in numbers(text)[1]
    if _ID.match(fact):
        return fact.casefold() in text.casefold()
    return re.search(rf"\b{re.escape(fact)}\b", text, re.I) is not None


def _stem(word: str) -> str:
    for suffix in ("ness", "ing", "ed", "es", "s", "y", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)][:5]
    return word[:5]


def missing_terms(pred: str, ref: str) -> tuple[int, list[str]]:
    """(number of terms in the reference list, the terms the prediction does not recall)."""
    have = {_stem(w) for w in _WORD.findall(pred.casefold())}
    terms = [t.strip() for t in ref.split(",") if t.strip()]
    missing = []
    for term in terms:
        words = [w for w in _WORD.findall(term.casefold()) if w not in _STOP]
        if not all(_stem(w) in have for w in words):
            missing.append(term)
    return len(terms), missing


@dataclass(slots=True)
class FactScore:
    structured_checked: bool = False
    structured_ok: bool = True
    facts_total: int = 0
    facts_kept: int = 0
    symptom_terms: int = 0
    symptom_terms_recalled: int = 0
    residue: bool = False
    failed: list[str] = field(default_factory=list)


def fact_scores(
    pred: Mapping[str, Any], ref: Mapping[str, Any], history: Sequence[Mapping[str, Any]]
) -> FactScore:
    """The fact-level checks of one predicted call (see the module docstring); `failed`
    names each failed check and what it missed, for a reader."""
    out = FactScore()
    p_params = pred.get("parameters") if isinstance(pred, Mapping) else None
    p = p_params if isinstance(p_params, Mapping) else {}
    r = ref["parameters"]
    tool_ok = isinstance(pred, Mapping) and pred.get("tool") == ref.get("tool")
    held: HistoryFacts | None = None
    for key, r_val in r.items():
        p_val = p.get(key)
        if key in FREE_TEXT and isinstance(r_val, str):
            held = held or HistoryFacts.of(history)
            facts = held.facts_in(r_val)
            text = p_val if isinstance(p_val, str) and tool_ok else ""
            lost = [f for f in facts if not kept(f, text)]
            out.facts_total += len(facts)
            out.facts_kept += len(facts) - len(lost)
            if lost:
                out.failed.append(f"facts {key}: missing {', '.join(lost)}")
        elif key in SYMPTOMS and isinstance(r_val, str):
            text = p_val if isinstance(p_val, str) and tool_ok else ""
            n, lost = missing_terms(text, r_val)
            out.symptom_terms += n
            out.symptom_terms_recalled += n - len(lost)
            if lost:
                out.failed.append(f"symptoms {key}: missing {'; '.join(lost)}")
        else:
            out.structured_checked = True
            if not (tool_ok and key in p and values_match(p_val, r_val, lenient=False)):
                out.structured_ok = False
                out.failed.append(f"structured {key}: {json.dumps(p_val, default=str)}")
    bad = [k for k, v in p.items() if any(_REPR.search(s) for s in _strings(v))]
    if bad:
        out.residue = True
        out.failed.append(f"repr residue in {', '.join(sorted(bad))}")
    return out
