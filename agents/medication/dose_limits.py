"""Medication-safety checks that need the person: maximum doses per ingredient over 24 hours
across every product (with a lower paracetamol limit for low weight, liver disease, heavy
alcohol use and frailty), NSAID cautions, medicines children must not have (aspirin under 16,
codeine under 12), and drugs taken once a week or month read as more often. The tables and
their sources are in `agents.medication.drugs` and docs/clinical.md §8.

A refusal means no schedule is made; a warning is shown before confirming and the family is
told when the schedule is confirmed (or an intake reported)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING

from agents.medication.drugs import (
    ANTICOAGULANTS,
    ASPIRIN_ANALGESIC_MG,
    CONDITION_SYNONYMS,
    KNOWN_SCHEDULES,
    LIMIT,
    NSAIDS,
    KnownSchedule,
)
from agents.medication.ingredients import (
    ingredients,
    max_doses,
    per_24h,
    strength_question,
    to_mg,
)
from agents.medication.rx_types import Prescription

if TYPE_CHECKING:
    from gateway.household.model import Person


def normalise_condition(c: str) -> str:
    key = re.sub(r"[\s\-]+", "_", c.strip().lower())
    if key.startswith("ckd"):  # "ckd stage 3", "ckd_4"
        return "ckd"
    return CONDITION_SYNONYMS.get(key, key)


@dataclass(frozen=True, slots=True)
class MedProfile:
    """What the checks need to know about the person (built from gateway.household.model.Person)."""

    age: int | None = None
    weight_kg: float | None = None
    conditions: frozenset[str] = frozenset()
    medications: tuple[str, ...] = ()

    @classmethod
    def of(
        cls, age: int | None = None, weight_kg: float | None = None,
        conditions: Iterable[str] = (), medications: Iterable[str] = (),
    ) -> MedProfile:  # fmt: skip
        return cls(age, weight_kg, frozenset(normalise_condition(c) for c in conditions),
                   tuple(m.lower() for m in medications))  # fmt: skip

    @classmethod
    def from_person(cls, p: Person, day: date) -> MedProfile:
        conds = [*p.conditions, *(["pregnancy"] if p.pregnant else [])]
        return cls.of(p.age_on(day), p.weight_kg, conds, p.medications)

    @property
    def pregnant(self) -> bool:
        return "pregnancy" in self.conditions

    def has(self, condition: str) -> bool:
        return condition in self.conditions

    def anticoagulant(self, extra: Iterable[str] = ()) -> str | None:
        for med in (*self.medications, *extra):
            for name in ANTICOAGULANTS:
                if re.search(rf"\b{name}\b", med.lower()):
                    return name
        return None


ADULT = MedProfile()


@dataclass(frozen=True, slots=True)
class PersonLimit:
    ingredient: str
    max_mg_day: float
    max_mg_dose: float | None
    reasons: tuple[str, ...]  # why it is lower than the usual adult maximum
    source: str

    def why(self, mg: float | None = None) -> str:
        """'the usual maximum of 4000 mg (source)' or 'this person's maximum of ... (reasons)'."""
        of = f" of {_fmt(self.max_mg_day if mg is None else mg)} mg"
        if self.reasons:
            return f"this person's maximum{of} ({'; '.join(self.reasons)})"
        return f"the usual maximum{of} ({self.source})"


LOWER_PARACETAMOL_MG = 3000.0  # chosen for liver disease, heavy alcohol use and frailty


def limit_for(ingredient: str, profile: MedProfile = ADULT) -> PersonLimit | None:
    lim = LIMIT.get(ingredient)
    if lim is None:
        return None
    day, dose, reasons = lim.max_mg_day, lim.max_mg_dose, []
    if ingredient == "paracetamol":
        w = profile.weight_kg
        if w is not None and w < 50:
            day, dose = min(day, 60 * w), min(dose or 1000, 15 * w)
            reasons.append(f"weight under 50 kg: at most 15 mg/kg a dose and 60 mg/kg a day, "
                           f"{15 * w:.0f} mg and {60 * w:.0f} mg (BNF paracetamol)")  # fmt: skip
        for cond, label in (("liver_disease", "liver disease"),
                            ("heavy_alcohol_use", "heavy alcohol use"), ("frail", "frailty")):  # fmt: skip
            if profile.has(cond):
                day = min(day, LOWER_PARACETAMOL_MG)
                reasons.append(f"{label}: at most 3 g a day (BNF paracetamol cautions; SmPC "
                               "paracetamol: 3 g a day with risk factors for liver toxicity; "
                               "NICE CKS analgesia)")  # fmt: skip
    return PersonLimit(ingredient, day, dose, tuple(reasons), lim.source)


@dataclass
class Review:
    questions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    refused: bool = False

    def refuse(self, message: str) -> None:
        self.questions.append(message)
        self.refused = True


def _names(medicine: str, schedule: KnownSchedule) -> bool:
    return any(re.search(rf"\b{re.escape(n)}\b", medicine.lower()) for n in schedule.names)


def _per_period(rx: Prescription, period: int) -> float:
    n = len(rx.times)
    if rx.every_n_days:
        return math.ceil(period / rx.every_n_days) * n
    if rx.day_of_month is not None:
        return n * math.ceil(period / 31)
    if rx.days_of_week:
        return len(rx.days_of_week) * n * period / 7
    return period * n


def known_schedule_refusal(rx: Prescription) -> str | None:
    """A medicine taken once a week (or month) scheduled more often, or as needed."""
    mg = to_mg(rx.dose)
    for ks in KNOWN_SCHEDULES:
        if not _names(rx.medicine, ks):
            continue
        if ks.doses_mg is not None and (mg is None or all(abs(mg - d) > 1e-6 for d in ks.doses_mg)):
            continue
        how = (
            "as needed"
            if rx.as_needed
            else rx.frequency + ("" if rx.every_day() else " (more than " + ks.label + ")")
        )
        if not rx.as_needed and _per_period(rx, ks.period_days) <= 1:
            return None
        return schedule_refusal(ks, f"{rx.medicine} {rx.dose.text()}", how)
    return None


def schedule_refusal(ks: KnownSchedule, what: str, how: str) -> str:
    example = "once a week on Monday" if ks.period_days == 7 else "once a month on the 1st"
    return (
        f"{what[:1].upper()}{what[1:]} is taken {ks.label}, but this reads as {how}. Danger: "
        f"{ks.danger} ({ks.source}). Nothing was scheduled. Please check the label and write "
        f"the day, for example '{what} {example}'."
    )


def named_schedule(text: str) -> KnownSchedule | None:
    """A medicine named in `text` that is taken once a week (or month) at every strength."""
    return next((ks for ks in KNOWN_SCHEDULES if ks.doses_mg is None and _names(text, ks)), None)


def child_refusal(ingredients_mg: Iterable[str], profile: MedProfile, *, taken: bool) -> list[str]:
    """Aspirin under 16 (Reye's syndrome) and codeine under 12 (morphine toxicity)."""
    if profile.age is None:
        return []
    out = []
    ings = set(ingredients_mg)
    after = ("Ask a doctor, pharmacist or NHS 111 for advice now." if taken else
             "Nothing was scheduled. If a specialist prescribed it (for example for Kawasaki "
             "disease), ask them or the pharmacist to set up the reminders.")  # fmt: skip
    if "aspirin" in ings and profile.age < 16:
        out.append("Aspirin must not be given to children under 16: it can cause Reye's "
                   f"syndrome (MHRA; BNF aspirin). {after}")  # fmt: skip
    if "codeine" in ings and profile.age < 12:
        out.append("Codeine must not be given to children under 12: some children turn it into "
                   "morphine too fast, which can stop their breathing (MHRA Drug Safety Update "
                   f"July 2013 and April 2015; BNF codeine). {after}")  # fmt: skip
    return out


_NSAID_CONDITIONS: tuple[tuple[str, str], ...] = (
    ("ckd", "kidney disease: NSAIDs can make kidney function worse (NICE CKS NSAIDs - "
            "prescribing issues; BNF NSAIDs: renal impairment)"),
    ("hypertension", "high blood pressure: NSAIDs can raise blood pressure (NICE CKS NSAIDs - "
                     "prescribing issues)"),
    ("heart_failure", "heart failure: NSAIDs cause fluid retention and can make it worse "
                      "(NICE CKS NSAIDs - prescribing issues; BNF NSAIDs; MHRA Drug Safety "
                      "Update June 2013, diclofenac)"),
    ("pregnancy", "pregnancy: NSAIDs should be avoided unless a doctor advises, and not in the "
                  "third trimester (BNF NSAIDs: pregnancy; NICE CKS NSAIDs - prescribing issues)"),
    ("peptic_ulcer", "stomach ulcer or bleeding: NSAIDs must not be taken with an active ulcer "
                     "(BNF NSAIDs: contraindications)"),
)  # fmt: skip


def _is_nsaid_dose(ingredient: str, mg: float | None) -> bool:
    if ingredient not in NSAIDS:
        return False
    return ingredient != "aspirin" or (mg is not None and mg >= ASPIRIN_ANALGESIC_MG)


def nsaid_flags(
    name: str, per_dose: dict[str, float], profile: MedProfile, others: Sequence[str] = (),
    other_nsaids: Sequence[str] = (),
) -> list[str]:  # fmt: skip
    """Cautions for an NSAID (aspirin only at analgesic doses; low-dose aspirin is flagged
    with an anticoagulant only)."""
    nsaids = [i for i, mg in per_dose.items() if _is_nsaid_dose(i, mg)]
    out: list[str] = []
    anticoag = profile.anticoagulant(others)
    if not nsaids:
        if "aspirin" in per_dose and anticoag:
            what = name if name == "aspirin" else f"{name} (aspirin)"
            out.append(f"{what} with {anticoag} (an anticoagulant): a higher risk of serious "
                       "bleeding (BNF interactions: aspirin with anticoagulants). Ask the GP or "
                       "pharmacist.")  # fmt: skip
        return out
    what = f"{name} ({', '.join(nsaids)}, an NSAID)" if name not in nsaids else f"{name} (an NSAID)"
    for cond, why in _NSAID_CONDITIONS:
        if profile.has(cond):
            out.append(f"{what} with {why}. Ask the GP or pharmacist.")
    if anticoag:
        out.append(f"{what} with {anticoag} (an anticoagulant): a higher risk of serious "
                   "bleeding (BNF interactions: NSAIDs with anticoagulants; NICE CKS NSAIDs - "
                   "prescribing issues). Ask the GP or pharmacist.")  # fmt: skip
    if profile.age is not None and profile.age >= 65:
        out.append(f"{what} at 65 or over: a higher risk of stomach bleeding and kidney and heart "
                   "side effects; a stomach-protecting medicine may be needed (NICE CKS NSAIDs "
                   "- prescribing issues). Ask the GP or pharmacist.")  # fmt: skip
    if other_nsaids:
        out.append(f"{what} with {', '.join(other_nsaids)}: two NSAIDs must not be taken "
                   "together (BNF NSAIDs; NICE CKS NSAIDs - prescribing issues).")  # fmt: skip
    return out


def _fmt(x: float) -> str:
    return f"{round(x, 1):g}"


def _dose_warnings(rx: Prescription, profile: MedProfile) -> list[str]:
    out = []
    for d in dict.fromkeys(rx.doses() or (rx.dose,)):
        for ing, mg in ingredients(rx.medicine, d)[0].items():
            lim = limit_for(ing, profile)
            if lim and lim.max_mg_dose is not None and mg > lim.max_mg_dose + 1e-6:
                out.append(f"{ing}: {_fmt(mg)} mg in one dose is more than "
                           f"{lim.why(lim.max_mg_dose)} for one dose.")  # fmt: skip
    return out


def review(
    rx: Prescription, profile: MedProfile | None = None, others: Sequence[Prescription] = ()
) -> Review:
    """Every check on one proposed schedule, with the person's other active prescriptions."""
    prof = profile or ADULT
    r = Review()
    if (msg := known_schedule_refusal(rx)) is not None:
        r.refuse(msg)
        return r
    one, question = ingredients(rx.medicine, rx.dose)
    question = question or strength_question(rx.medicine, rx.dose)
    if question:
        r.questions.append(question)
        return r
    for msg in child_refusal(one, prof, taken=False):
        r.refuse(msg)
    if r.refused:
        return r
    own = per_24h(rx)
    theirs: dict[str, float] = {}
    names: dict[str, list[str]] = {}
    for o in others:
        for ing, mg in per_24h(o).items():
            theirs[ing] = theirs.get(ing, 0.0) + mg
            names.setdefault(ing, []).append(o.medicine)
    for ing, mg in own.items():
        lim = limit_for(ing, prof)
        if lim is None:
            continue
        limit = lim.max_mg_day
        if rx.as_needed:
            r.warnings += _as_needed(rx, ing, one.get(ing, 0.0), mg, theirs.get(ing, 0.0),
                                     names.get(ing, []), lim)  # fmt: skip
        elif mg > limit + 1e-6:
            r.warnings.append(f"{ing}: {_fmt(mg)} mg a day is more than {lim.why()}.")
        elif mg + theirs.get(ing, 0.0) > limit + 1e-6:
            r.warnings.append(f"{ing}: {_fmt(mg + theirs[ing])} mg in 24 hours together with "
                              f"{', '.join(names[ing])} is more than {lim.why()}.")  # fmt: skip
    r.warnings += _dose_warnings(rx, prof)
    other_nsaids = sorted({o.medicine for o in others
                           if any(_is_nsaid_dose(i, v) for i, v in
                                  ingredients(o.medicine, o.dose)[0].items())})  # fmt: skip
    r.warnings += nsaid_flags(rx.medicine, one, prof, [o.medicine for o in others], other_nsaids)
    if prof.age is not None and prof.age < 16 and "paracetamol" in one and prof.weight_kg is None:
        r.warnings.append("paracetamol for a child: the dose depends on age and weight, and no "
                          "weight is recorded, so only the adult maximum was checked (BNFC "
                          "paracetamol).")  # fmt: skip
    return r


def _as_needed(
    rx: Prescription, ing: str, one: float, most: float, theirs: float, names: list[str],
    lim: PersonLimit,
) -> list[str]:  # fmt: skip
    """As needed: the stated maximum, else the most the minimum interval allows (`most`),
    against the limit, with what the other prescriptions already give (`theirs`)."""
    limit = lim.max_mg_day
    out = []
    if rx.max_per_day is not None and most > limit + 1e-6:
        out.append(f"{ing}: the stated maximum of {_fmt(most)} mg a day is above {lim.why()}.")
    if theirs + most <= limit + 1e-6 or one <= 0:
        return out
    if theirs:
        room = max(0, int((limit - theirs) // one))
        out.append(f"{ing}: {', '.join(names)} already give {_fmt(theirs)} mg a day; with "
                   f"{lim.why()}, at most {room} doses of {rx.medicine} in 24 hours.")  # fmt: skip
    elif rx.max_per_day is None:
        out.append(f"{ing}: taken as often as allowed ({max_doses(rx)} doses in 24 hours) that "
                   f"is {_fmt(most)} mg, more than {lim.why()}: no more than "
                   f"{int(limit // one)} doses in 24 hours.")  # fmt: skip
    return out


def intake_review(
    medication: str, per_dose: dict[str, float], totals: dict[str, float],
    sources: dict[str, list[str]], profile: MedProfile | None = None,
    others: Sequence[str] = (),
) -> list[str]:  # fmt: skip
    """Warnings for a reported intake: every ingredient in it whose total over the last 24
    hours (every product, reported or scheduled) is over the person's limit; NSAID cautions;
    a child given aspirin or codeine."""
    prof = profile or ADULT
    out = child_refusal(per_dose, prof, taken=True)
    for ing in per_dose:
        lim = limit_for(ing, prof)
        total = totals.get(ing, 0.0)
        if lim is None or total <= lim.max_mg_day + 1e-6:
            continue
        srcs = sorted(set(sources.get(ing, [])))
        frm = f" (from {', '.join(srcs)})" if len(srcs) > 1 else ""
        out.append(f"{ing}: {_fmt(total)} mg in the last 24 hours{frm} is more than {lim.why()}.")
    out += nsaid_flags(medication, per_dose, prof, others)
    return out
