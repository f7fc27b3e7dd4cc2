"""When a prescription is taken: the dosing codes (OD, BD, TDS, QDS, nocte, ...) with their
default local times, and the days ("once a week on Monday", "monthly on the 1st", "every 2
weeks", "alternate days") checked against the rest of the line. A weekly medicine with no day
given is asked about, never put on the day it happens to be confirmed (the safer choice:
docs/clinical.md §8)."""

from __future__ import annotations

import re
from datetime import time

from agents.medication import rx_text as tx
from agents.medication.rx_types import WEEKDAYS

# Local times used for each pattern (a hub default; the user confirms before scheduling).
MORNING, MIDDAY, AFTERNOON, EVENING, BEDTIME = time(8), time(12), time(16), time(20), time(22)
BEFORE_MEALS = (time(7, 30), time(12, 30), time(18, 30))
AFTER_MEALS = (time(8, 30), time(13, 30), time(19, 30))

# (pattern, frequency name, times) in priority order; two different ones matching is ambiguous.
FREQS: tuple[tuple[str, str, tuple[time, ...]], ...] = (
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
TIME_OF_DAY = {"at bedtime", "every morning"}
BY_COUNT = {1: "once daily", 2: "twice daily", 3: "three times daily", 4: "four times daily"}
PRN = re.compile(
    r"\b(prn|p\.r\.n\.?|as needed|as required|when needed|if needed|when required)\b", re.I
)


def freq(s: tx.Scan) -> list[tuple[str, tuple[time, ...]]]:
    found = []
    for pat, name, times in FREQS:
        ms = list(re.finditer(pat, s.t, re.I))
        if ms:
            found.append((name, times))
        for m in ms:
            s.blank(m)
    if len(found) > 1:  # "twice daily" also matches "daily": the more specific one wins
        found = [f for f in found if f[0] != "once daily"]
    return found


def meal_times(times: tuple[time, ...], instructions: tuple[str, ...]) -> tuple[time, ...]:
    if "before breakfast" in instructions and len(times) == 1:
        return (time(7, 30),)
    for label, meals in (("after meals", AFTER_MEALS), ("before meals", BEFORE_MEALS)):
        if label in instructions and len(times) <= 3:
            return meals if len(times) == 3 else (meals[0], meals[2])[: len(times)]
    return times


_WEEK_LABEL = {1: "once a week", 2: "twice a week", 3: "three times a week"}
_N_LABEL = {2: "every other day", 3: "every 3 days", 14: "every 2 weeks", 21: "every 3 weeks",
            28: "every 4 weeks"}  # fmt: skip


def days_of(
    d: tx.Days, times: tuple[time, ...], frequency: str, names: set[str], as_needed: bool,
    every: float | None, questions: list[str],
) -> tuple[tuple[time, ...], str]:  # fmt: skip
    """Which days, checked against the rest: a weekly medicine with no day is asked, never
    given the day it happens to be confirmed on (see docs/clinical.md §8)."""
    ask = questions.append
    if d.unsupported:
        ask(
            f"'{d.unsupported}' schedules are not set up automatically: please ask the "
            "pharmacist or practice to remind you, or enter each dose date."
        )
        return times, frequency
    if as_needed or every is not None:
        ask("The prescription gives both set days and another frequency; how often exactly?")
    elif d.period_word and names - TIME_OF_DAY:
        ask(
            "The prescription says both daily and weekly (or monthly); which is it? Some "
            "medicines, such as methotrexate, are taken once a week and are dangerous daily."
        )
    which = " and ".join(WEEKDAYS[x] for x in d.weekdays)
    if d.monthly:
        if d.weekdays or d.per_week or d.every_n_days:
            ask(
                "The prescription gives both a day of the week and a monthly schedule; which is it?"
            )
        elif d.day_of_month is None:
            ask("On which day of the month should it be taken (for example on the 1st)?")
        elif not 1 <= d.day_of_month <= 28:
            ask("Days 29-31 are not in every month: on which day from the 1st to the 28th "
                "should it be taken?")  # fmt: skip
        label = "once a month"
    elif d.every_n_days:
        n = d.every_n_days
        if n >= 7 and len(d.weekdays) != 1:
            ask(f"On which day of the week should it be taken ({_N_LABEL.get(n, '')}, for "
                "example on Monday)?")  # fmt: skip
        elif n < 7 and d.weekdays:
            ask(f"It says {_N_LABEL.get(n, 'every few days')} and also {which}; which is it?")
        label = _N_LABEL.get(n, f"every {n} days")
    else:
        k = d.per_week
        if k is not None and not d.weekdays:
            ask("On which day of the week should it be taken (for example every Monday)?" if k == 1
                else f"On which {k} days of the week should it be taken?")  # fmt: skip
        elif k is not None and len(d.weekdays) != k:
            ask(f"It says {_WEEK_LABEL.get(k, f'{k} times a week')} but names {which}; which "
                "days exactly?")  # fmt: skip
        n = len(d.weekdays)
        label = _WEEK_LABEL.get(n, f"{n} days a week")
    if not times:
        times = (MORNING,)
    if len(times) > 1:
        return times, BY_COUNT.get(len(times), frequency)
    return times, frequency if frequency in TIME_OF_DAY else label


def more_often(t: str, period: int) -> str | None:
    """How a line that could not be read still says 'more often than `period` days' (for a
    weekly drug: 'twice a week' with no days given is refused, not asked about)."""
    s = tx.Scan(t)
    d = tx.take_days(s)
    every, _ = tx.take_interval(s)
    daily = [n for n, _ in freq(s) if n not in TIME_OF_DAY or not d.period_word]
    if PRN.search(t):
        return "as needed"
    if every is not None or daily:
        return f"{daily[0] if daily else 'every few hours'}"
    if (d.per_week or 0) > 1 or len(d.weekdays) > 1:
        return "more than once a week"
    if d.every_n_days and d.every_n_days < period:
        return f"every {d.every_n_days} days"
    if period > 7 and (d.per_week or d.weekdays):
        return "weekly"
    return None
