"""How much one dose is: "500 mg", "2 tablets of 500 mg", "2 x 500 mg tablets", "two 500mg
tablets", "500 mg tablets, take 2", "10 ml of 250 mg/5 ml", ".5 mg", "1,000 mg", and per time
("40 mg in the morning and 20 mg at lunchtime"). Each reading blanks what it read, and two
readings that disagree are a question, never a choice."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import time

from agents.medication.rx_text import (
    CLOCK,
    COUNT,
    FORMS,
    MASS,
    NUM,
    TOD_RE,
    UNIT_RE,
    UNITS,
    Scan,
    clock_time,
    count,
    form,
    mass,
    tod_time,
)
from agents.medication.rx_types import Dose

# Above these a count is more likely a pack size ("21 capsules") than one dose: asked.
MAX_COUNT = 10.0
MAX_COUNT_AFTER_STRENGTH = 4.0

_CONC = re.compile(rf"{NUM}\s*{MASS}\s*(?:/|per|in)\s*(\d+(?:\.\d+)?)?\s*(ml)\b", re.I)
_VOLUME = re.compile(rf"{NUM}\s*(ml)\b(?:\s+of\b)?", re.I)
_A = re.compile(rf"(?<![\w.]){COUNT}\s*(?:x|×|\*)\s*{NUM}\s*{MASS}\b(?:\s*{FORMS}\b)?", re.I)
_B = re.compile(rf"(?<![\w.]){COUNT}\s+{NUM}\s*{MASS}\s*{FORMS}\b", re.I)
_C = re.compile(rf"(?<![\w.]){COUNT}\s*{FORMS}\s*(?:of\s+|each\s+|x\s*)?{NUM}\s*{MASS}\b", re.I)
_D = re.compile(rf"{NUM}\s*{MASS}\s*(?:{FORMS})?\s*[,:;-]?\s*(?:take\s+)?{COUNT}\s*{FORMS}\b", re.I)
_SIMPLE = re.compile(rf"{NUM}\s*({UNIT_RE})\b(\s*{FORMS}\b)?", re.I)
_WORD = re.compile(r"\b(one|two|three|four|half a|a|an)\s+(tablets?|capsules?|puffs?|sachets?|"
                   r"drops?|caplets?|powders?)\b", re.I)  # fmt: skip
# "500 mg tablets, two twice daily": a bare count just before how often.
_BARE = re.compile(
    r"(?<![\w.])(?:take\s+)?(one|two|three|four|half|\d+(?:\.\d+)?)\s+(?=(?:once|twice|thrice|"
    r"three times|four times|daily|every|each|at\b|in the|bd|bid|tds|tid|qds|qid|od|om|on\b|"
    r"nocte|mane|prn|as (?:needed|required)|when (?:needed|required))\b)",
    re.I,
)


@dataclass(frozen=True, slots=True)
class Strength:
    amount: float  # per tablet (or per `per_ml` ml for a liquid)
    unit: str  # mg | mcg
    form: str | None
    per_ml: float | None = None


@dataclass
class DoseReading:
    dose: Dose | None = None
    question: str | None = None
    strength: Strength | None = None  # "500 mg tablets" with no count: the per-unit strength
    others: list[Dose] | None = None


def _counted(n: float, st: Strength, form_word: str | None) -> Dose:
    f = form(form_word) if form_word else (st.form or "tablet")
    return Dose(n * st.amount, st.unit, count=n, form=f)


def take_concentration(s: Scan) -> tuple[Strength | None, str | None]:
    """A liquid's strength ("250 mg/5 ml", "250mg/5mL", "120 mg in 5 ml", "50 mg/ml")."""
    m = _CONC.search(s.t)
    if m is None:
        return None, None
    amount, unit = mass(float(m.group(1).replace(",", "")), m.group(2))
    per = float(m.group(3) or 1)
    if per <= 0:
        return None, "What is the strength of the liquid (for example 250 mg in 5 ml)?"
    s.blank(m)
    return Strength(amount, unit, "ml", per_ml=per), None


def _strength_text(st: Strength) -> str:
    return (
        f"{st.amount:g} {st.unit}/{st.per_ml:g} ml"
        if st.per_ml != 1
        else f"{st.amount:g} {st.unit}/ml"
    )


def liquid_dose(s: Scan, st: Strength) -> DoseReading:
    vols = list(_VOLUME.finditer(s.t))
    if not vols:
        return DoseReading(question="How many ml is one dose?")
    amounts = {float(v.group(1).replace(",", "")) for v in vols}
    if len(amounts) > 1:
        return DoseReading(question="The prescription gives two different volumes; how many ml "
                                    "is one dose?")  # fmt: skip
    for v in vols:
        s.blank(v)
    ml = amounts.pop()
    per_ml = st.per_ml or 1.0
    return DoseReading(Dose(ml * st.amount / per_ml, st.unit, count=ml, form="ml",
                            strength=_strength_text(st)))  # fmt: skip


def take_counted(s: Scan) -> DoseReading:
    """Tablets times strength, in the four ways it is written."""
    for pat, kind in ((_A, "A"), (_B, "B"), (_C, "C"), (_D, "D")):
        m = pat.search(s.t)
        if m is None:
            continue
        g = m.groups()
        if kind == "D":
            value, unit, n_raw, form_word = g[0], g[1], g[3], g[4]
        elif kind == "C":
            n_raw, form_word, value, unit = g[0], g[1], g[2], g[3]
        else:
            n_raw, value, unit, form_word = g[0], g[1], g[2], g[3]
        n = count(n_raw)
        limit = MAX_COUNT_AFTER_STRENGTH if kind == "D" else MAX_COUNT
        if not 0 < n <= limit:
            return DoseReading(question=f"Is '{m.group(0).strip()}' one dose, or the number in the "
                                        "pack? How many is one dose?")  # fmt: skip
        amount, u = mass(float(value.replace(",", "")), unit)
        s.blank(m)
        return DoseReading(_counted(n, Strength(amount, u, None), form_word))
    return DoseReading()


def take_simple(s: Scan) -> DoseReading:
    """The remaining plain doses. "500 mg tablets" (a strength followed by its form) is a
    strength; a bare count ("two twice daily") then multiplies it."""
    doses: list[Dose] = []
    strengths: list[Strength] = []
    for m in list(_SIMPLE.finditer(s.t)):
        amount, unit = mass(float(m.group(1).replace(",", "")), m.group(2))
        if m.group(3) and unit in ("mg", "mcg"):
            strengths.append(Strength(amount, unit, form(m.group(3).strip())))
        else:
            doses.append(Dose(amount, unit))
        s.blank(m)
    for m in list(_WORD.finditer(s.t)):
        unit = UNITS[m.group(2).lower()][0]
        doses.append(Dose(count(m.group(1)), unit))
        s.blank(m)
    bare = _BARE.search(s.t)
    st = strengths[0] if len({(x.amount, x.unit) for x in strengths}) == 1 else None
    if len({(x.amount, x.unit) for x in strengths}) > 1:
        return DoseReading(question="The prescription gives two different strengths; how much is "
                                    "one dose?")  # fmt: skip
    counts = [d for d in doses if d.unit in ("tablet", "capsule") and st is not None]
    masses = [d for d in doses if d not in counts]
    if st is not None and counts:
        doses = [_counted(d.amount, st, d.unit) for d in counts] + masses
    elif st is not None and bare is not None and not masses:
        n = count(bare.group(1))
        if not 0 < n <= MAX_COUNT_AFTER_STRENGTH:
            return DoseReading(question="How many tablets is one dose?")
        s.blank(bare)
        doses = [Dose(st.amount, st.unit) if n == 1 else _counted(n, st, st.form)]
    elif st is not None and not doses:
        doses = [Dose(st.amount, st.unit)]  # "Metformin 500 mg tablets twice daily": one tablet
    if not doses:
        return DoseReading(strength=st)
    first, rest = doses[0], doses[1:]
    return DoseReading(first, strength=st, others=rest)


def strength_of(s: Scan) -> Strength | None:
    """The per-tablet strength when per-time doses are written as counts ("500 mg tablets: 1
    in the morning and 2 at night"): the one plain mass left in the text."""
    ms = list(_SIMPLE.finditer(s.t))
    found = {mass(float(m.group(1).replace(",", "")), m.group(2)) for m in ms}
    found = {f for f in found if f[1] in ("mg", "mcg")}
    if len(ms) != len(found) or len(found) != 1:
        return None
    amount, unit = found.pop()
    for m in ms:
        s.blank(m)
    f = ms[0].group(3)
    return Strength(amount, unit, form(f.strip()) if f else None)


@dataclass(frozen=True, slots=True)
class TimedDose:
    amount: float
    unit: str | None  # None: "2 at night" (the unit is the one written before it)
    at: time


_PAIR = re.compile(
    rf"(?<![\w.]){COUNT}\s*(?P<u>{UNIT_RE})?\b\s*(?:to be taken\s+)?"
    rf"(?P<when>{TOD_RE}|at\s+(?:\d{{1,2}}(?:[:.]\d{{2}})?\s*(?:am|pm)?|noon|midnight))",
    re.I,
)


def _when(phrase: str) -> time | None:
    c = re.fullmatch(rf"at\s+(?:{CLOCK})", phrase.strip(), re.I)
    if c is not None:
        return clock_time(re.search(CLOCK, phrase, re.I))  # type: ignore[arg-type]
    return tod_time(phrase)


def take_timed_doses(s: Scan) -> list[TimedDose]:
    """'40 mg in the morning and 20 mg at lunchtime', '1 tablet at 8am and 2 at 8pm'. Only two
    or more make a per-time schedule; one is left for the other recognisers."""
    found = []
    for m in _PAIR.finditer(s.t):
        if m.group(1).lower() in ("a", "an"):
            continue  # "once a day at night"
        at = _when(m.group("when"))
        if at is None:
            continue
        u = m.group("u")
        unit, factor = UNITS[u.lower()] if u else (None, 1.0)
        found.append((m, TimedDose(count(m.group(1)) * factor, unit, at)))
    if len(found) < 2:
        return []
    for m, _ in found:
        s.blank(m)
    return [td for _, td in found]


def timed(timed: list[TimedDose], conc: Strength | None,
           st: Strength | None) -> list[Dose] | None:  # fmt: skip
    """Per-time doses; a count or a volume becomes mg when the strength is written."""
    out: list[Dose] = []
    unit: str | None = None
    for td in timed:
        unit = td.unit or unit
        if unit is None:
            unit = "ml" if conc else ("tablet" if st else None)
        if unit is None:
            return None
        if unit == "ml" and conc is not None:
            per = conc.per_ml or 1.0
            out.append(Dose(td.amount * conc.amount / per, conc.unit, count=td.amount, form="ml",
                            strength=_strength_text(conc)))  # fmt: skip
        elif unit in ("tablet", "capsule") and st is not None:
            out.append(Dose(td.amount * st.amount, st.unit, count=td.amount, form=unit))
        else:
            out.append(Dose(td.amount, unit))
    return out
