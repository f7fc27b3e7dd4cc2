"""From what a medicine is called and one dose of it to mg of each ingredient: brand names
and combination products come from `agents.medication.drugs.PRODUCTS` (co-codamol 30/500 x 2 is
60 mg codeine + 1000 mg paracetamol), plain names from the ingredient synonyms. A name that
could be several products, or a dose that cannot be turned into mg, is a question for a
prescription; for an intake already taken, the smallest certain amount is counted."""

from __future__ import annotations

import math
import re

from agents.medication.drugs import INGREDIENT_SYNONYMS, PRODUCTS, Product
from agents.medication.rx_types import Dose, Prescription

_UNIT_FORMS = {"tablet", "capsule", "sachet", "powder", "caplet"}
_COUNT_WORDS = {"one": 1.0, "two": 2.0, "three": 3.0, "four": 4.0, "half": 0.5, "a": 1.0,
                "an": 1.0}  # fmt: skip


def canon(text: str) -> str:
    """Lower-case, '30 mg/500 mg' -> '30/500', '&' kept, runs of spaces collapsed."""
    t = text.lower().replace("×", "x")
    t = re.sub(r"(\d+(?:\.\d+)?)(?:\s*mg)?\s*/\s*(\d+(?:\.\d+)?)(?:\s*mg)?(?!\s*ml)", r"\1/\2", t)
    return " ".join(t.split())


def _has(text: str, phrase: str) -> bool:
    return re.search(rf"(?<![\w/-]){re.escape(phrase)}(?![\w/-])", text) is not None


def match_products(name: str) -> list[Product]:
    """The products `name` names: one, several (a bare family name such as 'co-codamol' or
    'calpol'), or none. The longest matching name wins ('nurofen plus' is not 'nurofen')."""
    t = canon(name)
    best: list[tuple[int, Product]] = []
    for p in PRODUCTS:
        for alias in (p.name, *p.aliases):
            if _has(t, alias):
                best.append((len(alias), p))
    if best:
        top = max(n for n, _ in best)
        return list(dict.fromkeys(p for n, p in best if n == top))
    fams = [p for p in PRODUCTS if _has(t, p.family)]
    if not fams:
        return []
    longest = max(len(p.family) for p in fams)
    return [p for p in fams if len(p.family) == longest]


def generic_ingredients(name: str) -> list[str]:
    t = canon(name)
    return [k for k, syns in INGREDIENT_SYNONYMS.items() if any(_has(t, s) for s in syns)]


def known_name_in(text: str) -> str | None:
    """A product or ingredient named anywhere in `text` (when the parser found no name)."""
    prods = match_products(text)
    if len(prods) == 1:
        return prods[0].name
    if prods:
        return prods[0].family
    gens = generic_ingredients(text)
    return gens[0] if len(gens) == 1 else None


def to_mg(d: Dose) -> float | None:
    return d.amount if d.unit == "mg" else d.amount / 1000 if d.unit == "mcg" else None


def _units(p: Product, dose: Dose) -> float | None:
    """How many tablets/sachets (or ml) of product `p` one dose is."""
    same = dose.unit == p.form or (p.form in _UNIT_FORMS and dose.unit in _UNIT_FORMS)
    if same:
        return dose.amount
    if dose.count is not None and (
        dose.form == p.form or (p.form in _UNIT_FORMS and dose.form in _UNIT_FORMS)
    ):
        return dose.count
    return None


def _choices(prods: list[Product]) -> str:
    names = [p.name for p in prods]
    return ", ".join(names[:-1]) + " or " + names[-1]


def ingredients(medicine: str, dose: Dose) -> tuple[dict[str, float], str | None]:
    """mg of each ingredient in one dose, or a question when that cannot be known."""
    prods = match_products(medicine)
    mg = to_mg(dose)
    if prods:
        ings = {i for p in prods for i, _ in p.per_unit}
        if mg is not None and len(ings) == 1 and all(len(p.per_unit) == 1 for p in prods):
            return {ings.pop(): mg}, None  # "Calpol 250 mg/5 ml, 10 ml": the mg is the answer
        if len(prods) > 1:
            return {}, (f"Which {prods[0].family} is it: {_choices(prods)}? The strength is "
                        "on the box.")  # fmt: skip
        p = prods[0]
        n = _units(p, dose)
        if n is None:
            what = "ml" if p.form == "ml" else f"{p.form}s"
            return {}, f"How many {what} of {p.name} is one dose?"
        return {i: per * n for i, per in p.per_unit}, None
    gens = generic_ingredients(medicine)
    if len(gens) > 1:
        return {}, "It names more than one medicine: which product and strength is it?"
    if len(gens) == 1 and mg is not None:
        return {gens[0]: mg}, None
    return {}, None


def strength_question(medicine: str, dose: Dose) -> str | None:
    """A known ingredient dosed in tablets with no strength cannot be checked: asked."""
    gens = generic_ingredients(medicine)
    if not match_products(medicine) and gens and to_mg(dose) is None and dose.unit in _UNIT_FORMS:
        return f"What strength are the {medicine} {dose.unit}s (for example 500 mg)?"
    return None


def _add(into: dict[str, float], more: dict[str, float], k: float = 1.0) -> None:
    for i, v in more.items():
        into[i] = into.get(i, 0.0) + v * k


def per_24h(rx: Prescription) -> dict[str, float]:
    """mg of each ingredient in 24 hours: a dose day's doses for a regular schedule (a weekly
    medicine counts on its day); for as-needed, the stated maximum, else the most the minimum
    interval allows, else one dose."""
    out: dict[str, float] = {}
    if not rx.as_needed:
        for d in rx.doses():
            _add(out, ingredients(rx.medicine, d)[0])
        return out
    one = ingredients(rx.medicine, rx.dose)[0]
    if rx.max_per_day is not None:
        stated = ingredients(rx.medicine, rx.max_per_day)[0]
        if stated:
            return stated
    _add(out, one, max_doses(rx))
    return out


def max_doses(rx: Prescription) -> int:
    """As needed: the most doses 24 hours can hold at the minimum interval (every 4 h: 6)."""
    if rx.min_interval_h:
        return math.ceil(24 / rx.min_interval_h)
    return 1


_INTAKE_COUNT = re.compile(
    r"^\s*(\d+(?:\.\d+)?(?=\s|x|×)|(?:one|two|three|four|half|a|an)(?=\s))\s*(?:x|×)?\s*"
    r"(?:(tablets?|capsules?|caplets?|sachets?|powders?|ml)\b\s*(?:of\s+)?)?|"
    r"\s*(?:x|×)\s*(\d+)\s*$",
    re.I,
)


def intake_ingredients(medication: str, mg: float) -> tuple[dict[str, float], str | None]:
    """mg of each ingredient in a reported intake. A combination product needs a count in the
    text ("2 x co-codamol 30/500"); without one, `mg` is read as its main ingredient. A name
    that could be several products counts the smallest of them (what was surely taken) and
    says so."""
    m = _INTAKE_COUNT.search(medication)
    n: float | None = None
    unit: str | None = None
    if m and (m.group(1) or m.group(3)):
        raw = (m.group(1) or m.group(3)).lower()
        n = _COUNT_WORDS.get(raw) or float(raw)
        unit = (m.group(2) or "").lower().rstrip("s") or None
    prods = match_products(medication)
    if not prods:
        gens = generic_ingredients(medication)
        return ({gens[0]: mg}, None) if len(gens) == 1 else ({}, None)
    single = (
        all(len(p.per_unit) == 1 for p in prods) and len({p.per_unit[0][0] for p in prods}) == 1
    )
    if single:
        return {prods[0].per_unit[0][0]: mg}, None
    amounts: list[dict[str, float]] = []
    for p in prods:
        if n is not None and (unit is None or unit == p.form or p.form in _UNIT_FORMS):
            units = n
        else:
            main = max(v for _, v in p.per_unit)
            units = mg / main
        amounts.append({i: per * units for i, per in p.per_unit})
    if len(amounts) == 1:
        return amounts[0], None
    common = set.intersection(*(set(a) for a in amounts))
    least = {i: min(a[i] for a in amounts) for i in common}
    return least, f"{prods[0].family}: which one was not said, so the smallest amount was counted"
