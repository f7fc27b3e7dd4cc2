"""Prescription text -> a medication schedule, deterministically.

Handles the common dosing codes (OD, BD/BID, TDS/TID, QID/QDS, QHS/nocte, OM, PRN, qNh,
"every 8 hours", "twice daily", "before breakfast", "after meals"), doses ("500 mg",
"1 g", "2 tablets", "10 ml"), durations ("for 30 days", "x 7 days", "for 2 weeks") and stated
maximums ("max 4 g/day"). Anything it cannot read with certainty becomes a question for the
user, never a guessed schedule. Known over-the-counter maximum daily doses are checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import time
from typing import Any

# Local times used for each pattern (a hub default; the user confirms before scheduling).
MORNING, MIDDAY, AFTERNOON, EVENING, BEDTIME = time(8), time(12), time(16), time(20), time(22)
BEFORE_MEALS = (time(7, 30), time(12, 30), time(18, 30))
AFTER_MEALS = (time(8, 30), time(13, 30), time(19, 30))

# Maximum total per 24 h for adults, over-the-counter labelling (mg). A schedule or a stated
# maximum above these is warned about and the family is told.
OTC_MAX_MG_PER_DAY: dict[str, float] = {
    "paracetamol": 4000,
    "acetaminophen": 4000,
    "ibuprofen": 1200,
    "aspirin": 4000,
    "naproxen": 660,
    "diphenhydramine": 300,
    "loratadine": 10,
    "cetirizine": 10,
}

_UNITS = {
    "mg": ("mg", 1.0),
    "milligram": ("mg", 1.0),
    "milligrams": ("mg", 1.0),
    "g": ("mg", 1000.0),
    "gram": ("mg", 1000.0),
    "grams": ("mg", 1000.0),
    "mcg": ("mcg", 1.0),
    "µg": ("mcg", 1.0),
    "ug": ("mcg", 1.0),
    "ml": ("ml", 1.0),
    "tablet": ("tablet", 1.0),
    "tablets": ("tablet", 1.0),
    "tab": ("tablet", 1.0),
    "tabs": ("tablet", 1.0),
    "capsule": ("capsule", 1.0),
    "capsules": ("capsule", 1.0),
    "cap": ("capsule", 1.0),
    "caps": ("capsule", 1.0),
    "puff": ("puff", 1.0),
    "puffs": ("puff", 1.0),
    "drop": ("drop", 1.0),
    "drops": ("drop", 1.0),
    "unit": ("unit", 1.0),
    "units": ("unit", 1.0),
}
_UNIT_RE = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
_DOSE = re.compile(rf"(\d+(?:\.\d+)?)\s*({_UNIT_RE})\b", re.I)
_WORD_NUM = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "a": 1, "an": 1}


@dataclass(frozen=True, slots=True)
class Dose:
    amount: float
    unit: str  # mg | mcg | ml | tablet | capsule | puff | drop | unit

    def text(self) -> str:
        a = int(self.amount) if float(self.amount).is_integer() else self.amount
        return f"{a} {self.unit}" + (
            "s"
            if self.unit in ("tablet", "capsule", "puff", "drop", "unit") and self.amount != 1
            else ""
        )


@dataclass(frozen=True, slots=True)
class Prescription:
    medicine: str
    dose: Dose
    times: tuple[time, ...]  # local times of day; empty for as-needed (PRN)
    frequency: str  # "once daily", "twice daily", ..., "every 8 hours", "as needed"
    duration_days: int | None
    instructions: tuple[str, ...]
    as_needed: bool = False
    max_per_day: Dose | None = None
    min_interval_h: float | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Prescription:
        """Back from `as_dict` (what is stored with a proposal)."""
        mx = d.get("max_per_day")
        return cls(
            medicine=d["medicine"],
            dose=Dose(float(d["dose"]["amount"]), d["dose"]["unit"]),
            times=tuple(time.fromisoformat(t) for t in d["times"]),
            frequency=d["frequency"],
            duration_days=d.get("duration_days"),
            instructions=tuple(d.get("instructions") or ()),
            as_needed=bool(d.get("as_needed")),
            max_per_day=Dose(float(mx["amount"]), mx["unit"]) if mx else None,
        )

    def per_day(self) -> int | None:
        return None if self.as_needed else len(self.times)

    def as_dict(self) -> dict[str, Any]:
        return {
            "medicine": self.medicine,
            "dose": {"amount": self.dose.amount, "unit": self.dose.unit},
            "times": [t.strftime("%H:%M") for t in self.times],
            "frequency": self.frequency,
            "duration_days": self.duration_days,
            "instructions": list(self.instructions),
            "as_needed": self.as_needed,
            "max_per_day": (
                {"amount": self.max_per_day.amount, "unit": self.max_per_day.unit}
                if self.max_per_day
                else None
            ),
        }

    def summary(self) -> str:
        """What the user is shown to confirm before anything is scheduled."""
        when = (
            "as needed" + (f", at most {self.max_per_day.text()} a day" if self.max_per_day else "")
            if self.as_needed
            else f"{self.frequency} at {', '.join(t.strftime('%H:%M') for t in self.times)}"
        )
        dur = f" for {self.duration_days} days" if self.duration_days else ""
        instr = f" ({'; '.join(self.instructions)})" if self.instructions else ""
        return f"{self.medicine.title()} {self.dose.text()}, {when}{dur}{instr}."


@dataclass(frozen=True, slots=True)
class ParseResult:
    prescription: Prescription | None
    questions: tuple[str, ...] = ()  # ask these; nothing is scheduled until they are answered
    warnings: tuple[str, ...] = field(default=())  # e.g. over a known maximum daily dose

    @property
    def ok(self) -> bool:
        return self.prescription is not None and not self.questions


def _norm(text: str) -> str:
    t = text.replace("×", "x").replace("’", "'")
    return " ".join(t.split())


# (pattern, frequency name, times) in priority order; the first pattern that matches wins,
# and two different ones matching is ambiguous.
_FREQS: tuple[tuple[str, str, tuple[time, ...]], ...] = (
    (r"\b(qid|qds|q\.i\.d\.?|four times (a|per) day|four times daily|4 times (a|per) day|4x ?(a )?day)\b",
     "four times daily", (MORNING, MIDDAY, AFTERNOON, EVENING)),
    (r"\b(tds|tid|t\.i\.d\.?|t\.d\.s\.?|three times (a|per) day|three times daily|thrice daily|3 times (a|per) day|3x ?(a )?day)\b",
     "three times daily", (MORNING, time(14), EVENING)),
    (r"\b(bd|bid|b\.i\.d\.?|b\.d\.?|twice (a|per) day|twice daily|two times (a|per) day|2 times (a|per) day|2x ?(a )?day)\b",
     "twice daily", (MORNING, EVENING)),
    (r"\b(qhs|nocte|at bedtime|at night|before bed|before sleep)\b", "at bedtime", (BEDTIME,)),
    (r"\b(om|mane|every morning|in the morning)\b", "every morning", (MORNING,)),
    (r"\b(od|o\.d\.?|qd|once (a|per) day|once daily|daily|every day|each day|1x ?(a )?day)\b",
     "once daily", (MORNING,)),
)  # fmt: skip
_EVERY_H = re.compile(
    r"\b(?:every|q)\s*(\d+|one|two|three|four|six|eight|twelve)\s*(?:h\b|hrs?\b|hours?\b)|\b(\d+)\s*-?\s*hourly\b",
    re.I,
)
_H_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "six": 6, "eight": 8, "twelve": 12}
_PRN = re.compile(
    r"\b(prn|p\.r\.n\.?|as needed|as required|when needed|if needed|when required)\b", re.I
)
_DURATION = re.compile(
    r"\b(?:for|x|×|during)\s*(\d+|a|one|two|three|four|five|six|seven|ten|fourteen)\s*(day|days|week|weeks|month|months)\b",
    re.I,
)
_DUR_WORDS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
              "seven": 7, "ten": 10, "fourteen": 14}  # fmt: skip
_MAX = re.compile(
    rf"\b(?:max(?:imum)?|not more than|no more than|up to)\s*(?:of\s*)?(\d+(?:\.\d+)?)\s*({_UNIT_RE})\s*(?:/|per|a|in)\s*(?:day|24 ?h(?:ours)?|24-hours?)\b",
    re.I,
)
_INSTRUCTIONS: tuple[tuple[str, str], ...] = (
    (r"\bbefore breakfast\b", "before breakfast"),
    (r"\b(after meals?|after food|pc)\b", "after meals"),
    (r"\b(before meals?|before food|ac)\b", "before meals"),
    (r"\bwith (food|meals?)\b", "with food"),
    (r"\bwith (a full glass of )?water\b", "with water"),
    (r"\bon an empty stomach\b", "on an empty stomach"),
    (r"\bdo not crush\b", "do not crush"),
)


def _freq(text: str) -> tuple[list[tuple[str, tuple[time, ...]]], float | None]:
    found: list[tuple[str, tuple[time, ...]]] = []
    for pat, name, times in _FREQS:
        if re.search(pat, text, re.I):
            found.append((name, times))
    every: float | None = None
    m = _EVERY_H.search(text)
    if m:
        raw = m.group(1) or m.group(2)
        every = float(_H_WORDS.get(raw.lower(), 0) if not raw.isdigit() else int(raw))
    return found, every


def _every_times(hours: float) -> tuple[time, ...]:
    n = int(24 // hours)
    start_min = 8 * 60 if hours >= 6 else 6 * 60
    return tuple(
        time(((start_min + int(i * hours * 60)) // 60) % 24, (start_min + int(i * hours * 60)) % 60)
        for i in range(n)
    )


def _medicine(text: str, dose_start: int) -> str:
    head = text[:dose_start].strip(" ,:-")
    head = re.sub(r"^(take|tab\.?|tablet|cap\.?|capsule|rx:?)\s+", "", head, flags=re.I)
    filler = {"take", "tab", "tablet", "tablets", "cap", "capsule", "capsules", "give", "use",
              "of", "the", "a", "an", "rx", "inhale", "apply"}  # fmt: skip
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z\-]+", head) if w.lower() not in filler]
    return " ".join(words[-2:]).lower() if words else ""


def _to_mg(d: Dose) -> float | None:
    return d.amount if d.unit == "mg" else None


def parse_prescription(text: str) -> ParseResult:
    """Parse one prescription line. See the module docstring; never guesses."""
    t = _norm(text)
    questions: list[str] = []
    warnings: list[str] = []
    if len(t) < 3 or len(t) > 500:
        return ParseResult(None, ("Please type the prescription as written, for example "
                                  "'Metformin 500 mg twice daily for 30 days'.",))  # fmt: skip
    maxm = _MAX.search(t)
    body = t[: maxm.start()] + t[maxm.end() :] if maxm else t
    dm = _DOSE.search(body)
    dose: Dose | None = None
    medicine = ""
    if dm:
        unit, factor = _UNITS[dm.group(2).lower()]
        dose = Dose(float(dm.group(1)) * factor, unit)
        medicine = _medicine(body, dm.start())
    else:
        wm = re.search(
            r"\b(one|two|three|a|an)\s+(tablet|tablets|capsule|capsules|puff|puffs)\b", body, re.I
        )
        if wm:
            unit, _ = _UNITS[wm.group(2).lower()]
            dose = Dose(float(_WORD_NUM[wm.group(1).lower()]), unit)
            medicine = _medicine(body, wm.start())
    if not medicine:
        questions.append("Which medicine is it? Please give its name as on the label.")
    if dose is None:
        questions.append(
            f"How much {medicine or 'of it'} is one dose (for example 500 mg or 1 tablet)?"
        )

    max_per_day: Dose | None = None
    if maxm:
        unit, factor = _UNITS[maxm.group(2).lower()]
        max_per_day = Dose(float(maxm.group(1)) * factor, unit)

    as_needed = bool(_PRN.search(body))
    found, every = _freq(body)
    names = {n for n, _ in found}
    # "twice daily" also matches "daily": the more specific one wins.
    if len(names) > 1 and "once daily" in names:
        found = [f for f in found if f[0] != "once daily"]
        names.discard("once daily")
    times: tuple[time, ...] = ()
    frequency = ""
    min_interval: float | None = None
    if every is not None:
        if not 1 <= every <= 24 or 24 % every:
            questions.append(
                f"Every {every:g} hours does not fit a day evenly; at which times should it be taken?"
            )
        elif names and not as_needed:
            questions.append("The prescription gives two different frequencies; how often exactly?")
        else:
            min_interval = every
            frequency = f"every {every:g} hours"
            times = () if as_needed else _every_times(every)
    elif len(names) > 1:
        questions.append("The prescription gives two different frequencies; how often exactly?")
    elif found:
        frequency, times = found[0]
    elif not as_needed:
        questions.append("How often should it be taken (for example once a day, twice a day, "
                         "or every 8 hours)?")  # fmt: skip

    instructions = tuple(label for pat, label in _INSTRUCTIONS if re.search(pat, body, re.I))
    if times and "before breakfast" in instructions and len(times) == 1:
        times = (time(7, 30),)
    elif times and "after meals" in instructions and len(times) <= 3:
        times = (
            AFTER_MEALS[: len(times)]
            if len(times) == 3
            else (AFTER_MEALS[0], AFTER_MEALS[2])[: len(times)]
        )
    elif times and "before meals" in instructions and len(times) <= 3:
        times = (
            BEFORE_MEALS[: len(times)]
            if len(times) == 3
            else (BEFORE_MEALS[0], BEFORE_MEALS[2])[: len(times)]
        )
    if as_needed:
        frequency = "as needed" + (
            f", at least {min_interval:g} hours apart" if min_interval else ""
        )
        times = ()

    duration: int | None = None
    dur = _DURATION.search(body)
    if dur:
        n = int(dur.group(1)) if dur.group(1).isdigit() else _DUR_WORDS[dur.group(1).lower()]
        unit_d = dur.group(2).lower()
        duration = n * (7 if unit_d.startswith("week") else 30 if unit_d.startswith("month") else 1)
        if not 1 <= duration <= 366:
            questions.append("For how many days should it be taken?")
            duration = None

    if questions or dose is None:
        return ParseResult(None, tuple(questions), tuple(warnings))

    rx = Prescription(
        medicine=medicine,
        dose=dose,
        times=times,
        frequency=frequency,
        duration_days=duration,
        instructions=instructions,
        as_needed=as_needed,
        max_per_day=max_per_day,
        min_interval_h=min_interval,
    )
    warnings += over_the_counter_warnings(rx)
    return ParseResult(rx, (), tuple(warnings))


def _otc_limit(medicine: str) -> tuple[str, float] | None:
    for name, limit in OTC_MAX_MG_PER_DAY.items():
        if name in medicine.lower():
            return name, limit
    return None


def over_the_counter_warnings(rx: Prescription) -> list[str]:
    """A schedule (or a stated maximum) above the known OTC maximum daily dose."""
    found = _otc_limit(rx.medicine)
    if found is None:
        return []
    name, limit = found
    out: list[str] = []
    per_dose = _to_mg(rx.dose)
    if per_dose is not None and rx.per_day():
        total = per_dose * (rx.per_day() or 0)
        if total > limit:
            out.append(
                f"{name}: {total:g} mg a day is more than the usual maximum of {limit:g} mg."
            )
    if rx.max_per_day is not None and _to_mg(rx.max_per_day) is not None:
        stated = _to_mg(rx.max_per_day) or 0
        if stated > limit:
            out.append(
                f"{name}: the stated maximum of {stated:g} mg a day is above the usual {limit:g} mg."
            )
    return out


def intake_warning(medicine: str, taken_mg_today: float) -> str | None:
    """A reported total intake today above the known OTC maximum (told to the family)."""
    found = _otc_limit(medicine)
    if found is None or taken_mg_today <= found[1]:
        return None
    return f"{found[0]}: {taken_mg_today:g} mg taken today is more than the usual maximum of {found[1]:g} mg."
