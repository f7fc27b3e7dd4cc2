"""Prescription text -> a medication schedule, deterministically.

Reads the common dosing codes (OD, BD/BID, TDS/TID, QID/QDS, QHS/nocte, OM, PRN, qNh, "every 8
hours", "every 4-6 hours", "twice daily", "before breakfast", "after meals"), clock times ("at
6pm", "at 8am and 8pm"), days ("once a week on Monday", "every Monday", "monthly on the 1st",
"every 2 weeks", "alternate days"), doses ("500 mg", "1 g", ".5 mg", "2 tablets of 500 mg",
"10 ml of 250 mg/5 ml", "40 mg in the morning and 20 mg at lunchtime"), brand and combination
products ("co-codamol 30/500"), durations ("for 30 days", "x 7 days", "3/7", "1/52", "2/12") and
stated maximums ("max 4 g/day").

Anything it cannot read with certainty becomes a question, never a guessed schedule: a
changing dose (taper), two different doses or frequencies, a weekly medicine with no day. The
safety checks (`agents.medication.dose_limits`) then refuse what must not be scheduled (daily
methotrexate, aspirin under 16) and warn above maximum doses, with the person's profile and
their other prescriptions when given.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import time

from agents.medication import rx_dose
from agents.medication import rx_text as tx
from agents.medication.dose_limits import (
    MedProfile,
    limit_for,
    named_schedule,
    review,
    schedule_refusal,
)
from agents.medication.drugs import KNOWN_SCHEDULES, LIMITS
from agents.medication.ingredients import intake_ingredients, known_name_in, match_products
from agents.medication.rx_schedule import (
    BY_COUNT,
    PRN,
    TIME_OF_DAY,
    days_of,
    freq,
    meal_times,
    more_often,
)
from agents.medication.rx_types import CRON_DAYS, WEEKDAYS, Dose, ParseResult, Prescription

__all__ = ["CRON_DAYS", "OTC_MAX_MG_PER_DAY", "WEEKDAYS", "Dose", "MedProfile", "ParseResult",
           "Prescription", "intake_warning", "over_the_counter_warnings", "parse_prescription"]  # fmt: skip

# Adult maximum per 24 h (mg), from agents.medication.drugs (kept for callers of the old name).
OTC_MAX_MG_PER_DAY: dict[str, float] = {
    **{lim.ingredient: lim.max_mg_day for lim in LIMITS},
    "acetaminophen": 4000.0,
}

_INSTRUCTIONS: tuple[tuple[str, str], ...] = (
    (r"\bbefore breakfast\b", "before breakfast"),
    (r"\b(after meals?|after food|pc)\b", "after meals"),
    (r"\b(before meals?|before food|ac)\b", "before meals"),
    (r"\bwith (food|meals?)\b", "with food"),
    (r"\bwith (a full glass of )?water\b", "with water"),
    (r"\bon an empty stomach\b", "on an empty stomach"),
    (r"\bdo not crush\b", "do not crush"),
)
_PAIR_STRENGTH = re.compile(
    r"(?<=[a-z])\s+(\d+(?:\.\d+)?)\s*(?:mg)?\s*/\s*(\d+(?:\.\d+)?)\s*(?:mg)?(?![\d.]|\s*ml)", re.I
)
_FILLER = {"take", "tab", "tablet", "tablets", "cap", "capsule", "capsules", "give", "use", "of",
           "the", "a", "an", "rx", "inhale", "apply", "every", "on", "each", "once", "and", "inject",
           "injection", "oral", "solution", "suspension", "liquid", "sachet", "sachets", "with",
           "in", "at", "per", "max", "before", "after", "meals", "food", "hours", "day", "days",
           "week", "weeks", "daily", "weekly", "monthly", "prn", "od", "bd", "tds", "qds", "qid",
           "tid", "bid", "om", "nocte", "mane", "morning", "night", "apart", "least", "for", "x",
           "puff", "puffs", "units", "unit", "ml", "mg", "mcg", "g"}  # fmt: skip
# No single oral dose is above 20 g (macrogol 13.8 g, colestyramine 8 g): "g" for "mg" is.
MAX_PLAUSIBLE_MG = 20_000.0
TAPER_Q = ("This looks like a changing dose (a taper, a step up or down, or 'then ...'). A changing "
           "dose is not scheduled automatically: please enter each step as its own prescription "
           "with its own number of days, exactly as the prescriber wrote it.")  # fmt: skip


def _norm(text: str) -> str:
    t = text.replace("×", "x").replace("’", "'").replace("–", "-").replace("—", "-")
    return " ".join(t.split())


def _every_times(hours: float) -> tuple[time, ...]:
    n = int(24 // hours)
    start = 8 * 60 if hours >= 6 else 6 * 60
    mins = [(start + int(i * hours * 60)) % (24 * 60) for i in range(n)]
    return tuple(time(m // 60, m % 60) for m in mins)


def _medicine(head: str) -> str:
    prods = match_products(head)
    if len(prods) == 1:
        return prods[0].name
    if prods:
        return prods[0].family
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9\-]*", head) if w.lower() not in _FILLER]
    # One-letter words are noise, except a vitamin's letter ("vitamin d").
    words = [w for i, w in enumerate(words)
             if len(w) > 1 or (i and words[i - 1].lower() == "vitamin")]  # fmt: skip
    return " ".join(words[-2:]).lower() if words else ""


def _known_name(text: str) -> str | None:
    for ks in KNOWN_SCHEDULES:
        for n in ks.names:
            if re.search(rf"\b{re.escape(n)}\b", text, re.I):
                return n
    return known_name_in(text)


def _read(t: str) -> tuple[Prescription | None, list[str], list[str]]:
    """The text alone -> a schedule, or the questions that must be answered first."""
    s = tx.Scan(t)
    questions: list[str] = []
    warnings = tx.notation_warnings(t)
    if (dc := tx.decimal_comma(t)) is not None:
        questions.append(f"Is '{dc}' a decimal? Please write the dose with a point (0.5 mg) "
                         "exactly as on the label.")  # fmt: skip
    if re.search(r"\bmg\s*/\s*kg\b", t, re.I):
        questions.append("The dose is per kg of body weight: please give the dose in mg as "
                         "the prescriber calculated it.")  # fmt: skip
    if tx.TAPER.search(t):
        return None, [TAPER_Q, *questions], warnings
    mx = tx.take_max(s)
    duration = tx.take_duration(s)
    if (pd := tx.per_day_dose(s)) is not None:
        questions.append(f"Is '{pd}' one dose, or the total for the day? Please write one dose "
                         "and how often (for example 1 g four times a day).")  # fmt: skip
    as_needed = bool(PRN.search(s.t))
    days = tx.take_days(s)
    every, gap = tx.take_interval(s)
    mark = len(s.spans)
    conc, q = rx_dose.take_concentration(s)
    pair = _PAIR_STRENGTH.search(s.t)
    # "30/500", not "1/2" nor a duration ("2/12", when a first one was already read)
    if pair is not None and float(pair.group(2)) >= 5 and pair.group(2) not in ("7", "12", "52"):
        s.blank(pair)
    else:
        pair = None
    timed = rx_dose.take_timed_doses(s)
    explicit = tx.take_times(s)
    dose_list: list[Dose] = []
    dose_asked = False
    reading = rx_dose.DoseReading(question=q)
    if timed:
        st = None if conc else rx_dose.strength_of(s)
        got = rx_dose.timed(timed, conc, st)
        if got is None:
            questions.append("How much is each dose (for example 1 tablet or 20 mg)?")
            dose_asked = True
        dose_list = got or []
    elif conc is not None:
        reading = rx_dose.liquid_dose(s, conc)
    elif q is None:
        reading = rx_dose.take_counted(s)
        if reading.dose is None and reading.question is None:
            reading = rx_dose.take_simple(s)
    if reading.question:
        questions.append(reading.question)
        dose_asked = True
    rest = rx_dose.take_simple(s) if (timed or reading.dose) else rx_dose.DoseReading()
    same = (reading.dose.amount, reading.dose.unit) if reading.dose else None
    extra = [d for d in [*(reading.others or []), *([rest.dose] if rest.dose else []),
                         *(rest.others or [])] if (d.amount, d.unit) != same]  # fmt: skip
    if extra:
        questions.append("The prescription gives two different doses; how much is one dose?")
    dose = dose_list[0] if dose_list else reading.dose
    dose_spans = s.spans[mark:]
    start = min((a for a, _ in dose_spans), default=None)
    if start is None:  # no dose read: the name is still before the first number
        start = next((m.start() for m in re.finditer(r"\d", s.t)), None)
    medicine = _medicine(s.t[:start]) if start is not None else ""
    if pair is not None and medicine and start is not None and pair.start() <= start + 1:
        medicine = f"{medicine} {pair.group(1)}/{pair.group(2)}"
        if match_products(medicine):
            medicine = match_products(medicine)[0].name
    medicine = medicine or (_known_name(t) or "")
    if not medicine:
        questions.append("Which medicine is it? Please give its name as on the label.")
    if dose is None and not dose_asked:
        questions.append(f"How much {medicine or 'of it'} is one dose (for example 500 mg or "
                         "1 tablet)?")  # fmt: skip
    for d in dose_list or ([dose] if dose else []):
        if d.unit == "mg" and d.amount > MAX_PLAUSIBLE_MG:  # "500 g" typed for "500 mg"
            questions.append(f"Is {d.amount / 1000:g} g ({d.amount:g} mg) really one dose? "
                             "Please check the unit (mg or g).")  # fmt: skip
            break

    found = freq(s)
    left = re.search(r"(?<![\w.,/])\d+(?:[.,/]\d+)*(?![\w.,/])", s.t)
    if left and not questions and explicit is not None:
        questions.append(f"What does '{left.group(0)}' mean in the prescription? Please write it "
                         "out (for example '2 tablets' or 'for 7 days').")  # fmt: skip
    names = {n for n, _ in found}
    times: tuple[time, ...] = ()
    frequency = ""
    min_interval: float | None = None
    if explicit is None:
        questions.append("At which time of day should it be taken (for example at 18:00)?")
        explicit = []
    n_given = len(timed) or len(explicit)
    if n_given:
        if every is not None:
            questions.append("The prescription gives two different frequencies; how often exactly?")
        multi = [n for n in names if n not in TIME_OF_DAY]
        if (
            len(names) > 1
            or (multi and BY_COUNT.get(n_given) != multi[0])
            or (names & TIME_OF_DAY and n_given > 1)
        ):
            questions.append("The prescription gives a number of doses a day that does not match "
                             "the times written; how often exactly, and at which times?")  # fmt: skip
        ats = [td.at for td in timed] or explicit
        order = sorted(range(n_given), key=lambda i: ats[i])  # in the order of the day
        times = tuple(ats[i] for i in order)
        if dose_list:
            dose_list = [dose_list[i] for i in order]
            dose = dose_list[0]
        if len(set(times)) != len(times):
            questions.append("Two doses are at the same time; at which times should it be taken?")
        frequency = (next(iter(names)) if names and n_given == 1 else
                     BY_COUNT.get(n_given, f"{n_given} times daily"))  # fmt: skip
    elif every is not None:
        ok = 1 <= every <= 24 and (as_needed or 24 % every == 0)
        if not ok:
            questions.append(f"Every {every:g} hours does not fit a day evenly; at which times "
                             "should it be taken?")  # fmt: skip
        elif names and not as_needed:
            questions.append("The prescription gives two different frequencies; how often exactly?")
        else:
            min_interval = gap
            frequency = f"every {every:g} hours" + (
                f" (at least {gap:g} hours apart)" if gap is not None and gap < every else ""
            )
            times = () if as_needed else _every_times(every)
    elif gap is not None:
        min_interval = gap
    if not n_given and every is None:
        if len(names) > 1:
            questions.append("The prescription gives two different frequencies; how often exactly?")
        elif found:
            frequency, times = found[0]
        elif not as_needed and not days.any and not days.unsupported:
            questions.append("How often should it be taken (for example once a day, twice a day, "
                             "or every 8 hours)?")  # fmt: skip

    instructions = tuple(label for pat, label in _INSTRUCTIONS if re.search(pat, t, re.I))
    if days.any or days.unsupported:
        times, frequency = days_of(days, times, frequency, names, as_needed, every, questions)
    if times and not n_given:
        times = meal_times(times, instructions)
    if as_needed:
        frequency = "as needed" + (
            f", at least {min_interval:g} hours apart" if min_interval else ""
        )
        times = ()
    if duration is not None and not 1 <= duration <= 366:
        questions.append("For how many days should it be taken?")
    if questions or dose is None:
        return None, questions, warnings
    time_doses = tuple(dose_list) if len(set(dose_list)) > 1 else ()
    rx = Prescription(
        medicine=medicine, dose=dose, times=times, frequency=frequency, duration_days=duration,
        instructions=instructions, as_needed=as_needed,
        max_per_day=_max(mx, dose), min_interval_h=min_interval,
        time_doses=time_doses, days_of_week=days.weekdays if not days.monthly else (),
        day_of_month=days.day_of_month, every_n_days=days.every_n_days,
    )  # fmt: skip
    return rx, [], warnings


def _max(mx: tuple[float, str] | None, dose: Dose) -> Dose | None:
    """A stated maximum; 'max 4 doses' is 4 of this dose."""
    if mx is None:
        return None
    n, unit = mx
    if unit != "dose":
        return Dose(n, unit)
    if dose.count is not None and dose.form is not None:
        return Dose(n * dose.amount, dose.unit, count=n * dose.count, form=dose.form,
                    strength=dose.strength)  # fmt: skip
    return Dose(n * dose.amount, dose.unit)


def parse_prescription(
    text: str, profile: MedProfile | None = None, others: Sequence[Prescription] = ()
) -> ParseResult:
    """Parse one prescription line and check it (see the module docstring). `profile` and
    `others` (the person's active prescriptions) sharpen the checks; never guesses."""
    t = _norm(text)
    if len(t) < 3 or len(t) > 500:
        return ParseResult(None, ("Please type the prescription as written, for example "
                                  "'Metformin 500 mg twice daily for 30 days'.",))  # fmt: skip
    rx, questions, warnings = _read(t)
    if rx is None and (ks := named_schedule(t)) and (how := more_often(t, ks.period_days)):
        return ParseResult(None, (schedule_refusal(ks, ks.names[0], how),), tuple(warnings), True)
    if rx is None:
        return ParseResult(None, tuple(questions), tuple(warnings))
    rv = review(rx, profile, others)
    if rv.questions:
        return ParseResult(None, tuple(rv.questions), tuple(warnings + rv.warnings), rv.refused)
    return ParseResult(rx, (), tuple(warnings + rv.warnings))


def over_the_counter_warnings(rx: Prescription) -> list[str]:
    """A schedule (or a stated maximum) above a known adult maximum (no profile)."""
    return review(rx).warnings


def intake_warning(medicine: str, taken_mg_today: float) -> str | None:
    """A reported total intake above a known adult maximum (no profile)."""
    for ing, mg in intake_ingredients(medicine, taken_mg_today)[0].items():
        lim = limit_for(ing)
        if lim is not None and mg > lim.max_mg_day:
            return (f"{ing}: {mg:g} mg taken today is more than the usual maximum of "
                    f"{lim.max_mg_day:g} mg.")  # fmt: skip
    return None
