"""The pieces of a prescription line, each read by one recogniser that blanks what it read
(so a number is never read twice: "250 mg/5 ml" is a strength, not a 250 mg dose).
`agents.medication.prescription` puts them together; anything ambiguous becomes a question there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import time

# A number: "1,000" (thousands), ".5", "5.0", "10". Not part of "30/500" or a longer number.
NUM = r"(?<![\d.,/])(\d{1,3}(?:,\d{3})+(?![\d,])|\d*\.\d+|\d+)(?![\d])"
MASS = r"(mg|milligrams?|g|grams?|mcg|micrograms?|µg|ug)"
FORMS = r"(tablets?|tabs?|capsules?|caps?|caplets?|sachets?|puffs?|powders?)"
COUNT = r"(\d+(?:\.\d+)?|\.\d+|one|two|three|four|five|six|half(?: a)?|½|a|an)"
_COUNT_WORDS = {"one": 1.0, "two": 2.0, "three": 3.0, "four": 4.0, "five": 5.0, "six": 6.0,
                "half": 0.5, "half a": 0.5, "½": 0.5, "a": 1.0, "an": 1.0}  # fmt: skip
_FORM = {"tablet": "tablet", "tab": "tablet", "capsule": "capsule", "cap": "capsule",
         "caplet": "tablet", "sachet": "sachet", "puff": "puff", "powder": "powder"}  # fmt: skip

# Every unit a plain dose may be written in -> (unit kept, factor).
UNITS: dict[str, tuple[str, float]] = {
    "mg": ("mg", 1.0), "milligram": ("mg", 1.0), "milligrams": ("mg", 1.0),
    "g": ("mg", 1000.0), "gram": ("mg", 1000.0), "grams": ("mg", 1000.0),
    "mcg": ("mcg", 1.0), "µg": ("mcg", 1.0), "ug": ("mcg", 1.0), "microgram": ("mcg", 1.0),
    "micrograms": ("mcg", 1.0), "ml": ("ml", 1.0),
    "tablet": ("tablet", 1.0), "tablets": ("tablet", 1.0), "tab": ("tablet", 1.0),
    "tabs": ("tablet", 1.0), "capsule": ("capsule", 1.0), "capsules": ("capsule", 1.0),
    "cap": ("capsule", 1.0), "caps": ("capsule", 1.0), "caplet": ("tablet", 1.0),
    "caplets": ("tablet", 1.0), "sachet": ("sachet", 1.0), "sachets": ("sachet", 1.0),
    "powder": ("powder", 1.0), "powders": ("powder", 1.0),
    "puff": ("puff", 1.0), "puffs": ("puff", 1.0), "drop": ("drop", 1.0), "drops": ("drop", 1.0),
    "unit": ("unit", 1.0), "units": ("unit", 1.0),
}  # fmt: skip
UNIT_RE = "|".join(sorted((re.escape(u) for u in UNITS), key=len, reverse=True))

# Times of day named in words (the hub's defaults; the user confirms them).
TOD: tuple[tuple[str, time], ...] = (
    (r"in the morning|every morning|each morning|morning|mane|at breakfast|with breakfast",
     time(8)),
    (r"at lunch ?time|at lunch|with lunch|lunch ?time|at midday|midday|at noon|noon", time(12)),
    (r"in the afternoon|afternoon", time(16)),
    (r"at tea ?time|tea ?time", time(17)),
    (r"in the evening|evening|with (?:the )?evening meal|at dinner|with dinner", time(20)),
    (r"at night|at bedtime|bedtime|before bed|nocte", time(22)),
)  # fmt: skip
TOD_RE = "|".join(f"(?:{p})" for p, _ in TOD)
CLOCK = r"(\d{1,2})(?::|\.)(\d{2})\s*(am|pm)?|(\d{1,2})\s*(am|pm)|(noon|midnight)"


def num(s: str) -> float:
    return float(s.replace(",", ""))


def count(s: str) -> float:
    s = s.lower()
    return _COUNT_WORDS[s] if s in _COUNT_WORDS else float(s)


def form(s: str) -> str:
    return _FORM[s.lower().rstrip("s")] if s.lower().rstrip("s") in _FORM else s.lower()


def mass(value: float, unit: str) -> tuple[float, str]:
    u, factor = UNITS[unit.lower()]
    return value * factor, u


BLANK = "\u00a6"  # what a read span is replaced with


@dataclass
class Scan:
    """The text being read; recognisers blank what they read (positions stay the same)."""

    t: str
    spans: list[tuple[int, int]] = field(default_factory=list)

    def blank(self, m: re.Match[str]) -> None:
        # Not spaces: a number and a unit on either side of what was read must not join up
        # ("1,000 on Mondays g" is not 1000 g).
        self.t = self.t[: m.start()] + BLANK * (m.end() - m.start()) + self.t[m.end() :]
        self.spans.append((m.start(), m.end()))

    def first(self) -> int | None:
        """Where the first blanked dose-like span starts (the medicine is before it)."""
        return min((s for s, _ in self.spans), default=None)


def tod_time(phrase: str) -> time | None:
    for pat, at in TOD:
        if re.fullmatch(pat, phrase.strip(), re.I):
            return at
    return None


def clock_time(m: re.Match[str]) -> time | None:
    """A clock time from a CLOCK match; None when it is not a time of day (25:00, 13pm)."""
    if m.group(6):
        return time(12) if m.group(6).lower() == "noon" else time(0)
    h = int(m.group(1) or m.group(4))
    mi = int(m.group(2) or 0)
    ap = (m.group(3) or m.group(5) or "").lower()
    if mi > 59 or h > 23 or (ap and not 1 <= h <= 12):
        return None
    if ap == "pm" and h < 12:
        h += 12
    elif ap == "am" and h == 12:
        h = 0
    return time(h, mi)


def notation_warnings(text: str) -> list[str]:
    """Error-prone dose notations (ISMP List of Error-Prone Abbreviations, Symbols and Dose
    Designations; NHS/NPSA advice): read correctly here, but worth checking on the label."""
    out = []
    for m in re.finditer(rf"(?<![\d.])\.(\d+)\s*(?:{UNIT_RE})\b", text, re.I):
        out.append(
            f"'{m.group(0).strip()}' was read as 0.{m.group(1)}: a dose written without the "
            "leading zero is easily misread as ten times more. Please check it against the label."
        )
    for m in re.finditer(rf"(?<![\d.])(\d+\.\d*0)(?!\d)\s*(?:{UNIT_RE})\b", text, re.I):
        n = f"{float(m.group(1)):g}"
        missed = str(int(m.group(1).replace(".", "")))  # the point missed: 5.0 -> 50
        out.append(
            f"'{m.group(0).strip()}' was read as {n}: a trailing zero is easily misread as "
            f"{missed} if the point is missed. Please check it against the label."
        )
    return out


def decimal_comma(text: str) -> str | None:
    """'0,5 mg' could be 0.5 or 5: never guessed."""
    m = re.search(rf"(?<![\d,])\d+,\d{{1,2}}(?!\d)\s*(?:{UNIT_RE})\b", text, re.I)
    return m.group(0) if m else None


# A changing dose: never scheduled as if it were one dose ("to reduce fever" is not one).
TAPER = re.compile(
    r"\b(?:taper\w*|wean\w*|titrat\w*|sliding scale|then|dose reduction|"
    r"(?:reduc|decreas|increas)(?:e|es|ed|ing)\s+(?:the\s+)?(?:dose\s+)?(?:by|to|over|every|"
    r"each|gradually|slowly|weekly|daily)|(?:reducing|decreasing|increasing)\s+(?:dose|course|"
    r"regimen)|step(?:ping|ped)?\s+(?:down|up)|days? \d+\s*(?:-|–|to)\s*\d+|days? \d+\s*:|"
    r"week \d+\s*(?:-|–|to|:))",
    re.I,
)


def per_day_dose(s: Scan) -> str | None:
    """'6 g/day', '4 g per day' with no 'max': one dose, or the total for the day? Asked."""
    m = re.search(rf"{NUM}\s*({UNIT_RE})\s*(?:/|per)\s*(?:day|24 ?h(?:ours|rs)?)\b", s.t, re.I)
    return m.group(0) if m else None


_MAX_HEAD = r"\b(?:max(?:imum)?|not more than|no more than|up to)\s*(?:of\s*)?"
_PER_DAY = r"(?:\s*(?:/|per|a|in|every)\s*(?:day|24 ?h(?:ours|rs)?|24-hours?)\b)"


def take_max(s: Scan) -> tuple[float, str] | None:
    """'max 4 g/day' -> (4000, 'mg'); 'max 4 doses in 24 hours' -> (4, 'dose')."""
    m = re.search(rf"{_MAX_HEAD}{NUM}\s*({UNIT_RE}){_PER_DAY}", s.t, re.I)
    if m is not None:
        s.blank(m)
        return mass(num(m.group(1)), m.group(2))
    m = re.search(rf"{_MAX_HEAD}{NUM}\s*doses?{_PER_DAY}?", s.t, re.I)
    if m is None:
        return None
    s.blank(m)
    return num(m.group(1)), "dose"


_SHORT_DUR = re.compile(r"(?:\b(?:x|for)\s*)?(?<![\d/.])(\d{1,2})\s*/\s*(7|52|12)(?![\d/])")
_DURATION = re.compile(
    r"\b(?:for|x|×|during)\s*(\d+|a|one|two|three|four|five|six|seven|ten|fourteen)\s*"
    r"(day|days|week|weeks|month|months)\b",
    re.I,
)
_DUR_WORDS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
              "seven": 7, "ten": 10, "fourteen": 14}  # fmt: skip


def take_duration(s: Scan) -> int | None:
    """'for 7 days', 'x 2 weeks', and the shorthand '3/7' (days), '1/52' (weeks), '2/12'
    (months, counted as 30 days). Two durations are -1 (asked)."""
    first = _one_duration(s)
    if first is not None and _one_duration(s) is not None:
        return -1
    return first


def _one_duration(s: Scan) -> int | None:
    m = _SHORT_DUR.search(s.t)
    if m:
        n, per = int(m.group(1)), int(m.group(2))
        if 1 <= n <= {7: 28, 52: 52, 12: 12}[per]:
            s.blank(m)
            return n * {7: 1, 52: 7, 12: 30}[per]
    m = _DURATION.search(s.t)
    if m is None:
        return None
    s.blank(m)
    raw = m.group(1).lower()
    n = int(raw) if raw.isdigit() else _DUR_WORDS[raw]
    unit = m.group(2).lower()
    return n * (7 if unit.startswith("week") else 30 if unit.startswith("month") else 1)


_H_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "six": 6, "eight": 8, "twelve": 12}
_HN = r"(\d+|one|two|three|four|six|eight|twelve)"
_RANGE_H = re.compile(
    rf"\b(?:every|q)\s*{_HN}\s*(?:-|–|—|to)\s*{_HN}\s*(?:h\b|hrs?\b|hours?\b)"
    rf"|\b{_HN}\s*(?:-|–|—|to)\s*{_HN}\s*-?\s*hourly\b",
    re.I,
)
_EVERY_H = re.compile(
    rf"\b(?:every|q)\s*{_HN}\s*(?:h\b|hrs?\b|hours?\b)|\b(\d+)\s*-?\s*hourly\b", re.I
)
_MIN_GAP = re.compile(
    rf"\b(?:at least|leave|allow|no more often than every|not more often than every|"
    rf"(?:may )?(?:be )?repeat(?:ed)? after)\s*{_HN}"
    r"\s*(?:h\b|hrs?\b|hours?\b)\s*(?:apart|between doses|between each dose)?",
    re.I,
)


def _h(raw: str) -> float:
    return float(raw) if raw.isdigit() else float(_H_WORDS[raw.lower()])


def take_interval(s: Scan) -> tuple[float | None, float | None]:
    """(every, minimum gap) in hours. 'every 4-6 hours' is every 6 with a minimum of 4 (the
    shorter bound, the one a dose must never come sooner than)."""
    m = _RANGE_H.search(s.t)
    if m:
        a, b = [x for x in m.groups() if x]
        lo, hi = sorted((_h(a), _h(b)))
        s.blank(m)
        return hi, lo
    m = _EVERY_H.search(s.t)
    every = None
    if m:
        every = _h(m.group(1) or m.group(2))
        s.blank(m)
    g = _MIN_GAP.search(s.t)
    gap = None
    if g:
        gap = _h(g.group(1))
        s.blank(g)
    return every, gap if gap is not None else every


@dataclass
class Days:
    """Which days a medicine is taken on, as written."""

    weekdays: tuple[int, ...] = ()
    per_week: int | None = None  # "twice a week" -> 2
    every_n_days: int | None = None
    monthly: bool = False
    day_of_month: int | None = None
    period_word: bool = False  # "weekly", "monthly", "every 2 weeks": a frequency in itself
    unsupported: str | None = None

    @property
    def any(self) -> bool:
        return bool(self.weekdays or self.per_week or self.every_n_days or self.monthly)


_WD = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5,
       "sunday": 6, "mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3,
       "fri": 4, "sat": 5, "sun": 6}  # fmt: skip
_FULL_DAY = re.compile(r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b", re.I)
# Abbreviations only after "on", "every", "and", a comma...: "sun" alone is not a day.
_ABBR_DAY = re.compile(
    r"(?:\b(?:on|every|each|and|or)\s+|[,/(]\s*)(mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\b\.?",
    re.I,
)
_PER_WEEK = re.compile(
    r"\b(once|twice|two times|2 times|three times|3 times|thrice|1x|2x|3x)\s*"
    r"(?:a|per|every|each)?\s*-?\s*week(?:ly)?\b|\bweekly\b|\bevery week\b|\beach week\b",
    re.I,
)
_N_WEEKS = re.compile(
    r"\b(?:every\s*(other|second|alternate|2nd|two|2|three|3|four|4)\s*weeks?|fortnightly|"
    r"every fortnight|once a fortnight|(2|two)-weekly)\b",
    re.I,
)
_N_DAYS = re.compile(
    r"\b(?:every\s*(other|second|alternate|2nd|two|2|three|3)\s*days?|(?:on )?alternate days|"
    r"every (48|72) hours)\b",
    re.I,
)
_MONTHLY = re.compile(
    r"\b(?:once\s*(?:a|per|every|each)\s*month|once monthly|monthly|every month|each month)\b",
    re.I,
)
_LONGER = re.compile(
    r"\b(?:every\s*(?:2|3|6|12|two|three|six|twelve)\s*months|(?:3|6|three|six)-monthly|"
    r"quarterly|yearly|annually|once a year|every year|every \d+ years?)\b",
    re.I,
)
_DOM = re.compile(
    r"\b(?:on\s+)?(?:the\s+)?(\d{1,2})(?:st|nd|rd|th)?\s+(?:day\s+)?of\s+(?:each|every|the)"
    r"\s+month\b|\bon\s+(?:the\s+)?(\d{1,2})(?:st|nd|rd|th)\b|\bon day (\d{1,2})\b",
    re.I,
)
_N = {"other": 2, "second": 2, "alternate": 2, "2nd": 2, "two": 2, "2": 2, "three": 3, "3": 3,
      "four": 4, "4": 4, "48": 2, "72": 3}  # fmt: skip
_K = {"once": 1, "1x": 1, "twice": 2, "two times": 2, "2 times": 2, "2x": 2, "three times": 3,
      "3 times": 3, "thrice": 3, "3x": 3}  # fmt: skip


def take_days(s: Scan) -> Days:
    d = Days()
    if (m := _LONGER.search(s.t)) is not None:
        d.unsupported = m.group(0)
        s.blank(m)
    if (m := _N_WEEKS.search(s.t)) is not None:
        key = (m.group(1) or m.group(2) or "2").lower()
        d.every_n_days, d.period_word = 7 * _N.get(key, 2), True
        s.blank(m)
    elif (m := _N_DAYS.search(s.t)) is not None:
        d.every_n_days, d.period_word = _N[(m.group(1) or m.group(2) or "2").lower()], True
        s.blank(m)
    if (m := _MONTHLY.search(s.t)) is not None:
        d.monthly, d.period_word = True, True
        s.blank(m)
    if (m := _DOM.search(s.t)) is not None:
        d.day_of_month = int(m.group(1) or m.group(2) or m.group(3))
        d.monthly = True
        s.blank(m)
    if (m := _PER_WEEK.search(s.t)) is not None:
        d.per_week = _K.get((m.group(1) or "once").lower(), 1)
        d.period_word = True
        s.blank(m)
    days: list[int] = []
    if (m := re.search(r"\b(?:on\s+)?week\s?days\b", s.t, re.I)) is not None:
        days += [0, 1, 2, 3, 4]
        s.blank(m)
    if (m := re.search(r"\b(?:at|on)\s+(?:the\s+)?weekends?\b", s.t, re.I)) is not None:
        days += [5, 6]
        s.blank(m)
    for pat in (_FULL_DAY, _ABBR_DAY):
        while (m := pat.search(s.t)) is not None:
            days.append(_WD[next(g for g in m.groups() if g).lower().rstrip(".")])
            s.blank(m)
    d.weekdays = tuple(sorted(set(days)))
    return d


def take_times(s: Scan) -> list[time] | None:
    """Clock times ('at 6pm', 'at 18:00', 'at 8am and 8pm') or a list of named times ('in the
    morning and at night'). None when a clock time is not a time of day."""
    m = re.search(rf"\bat\s+(?:{CLOCK})(?:\s*(?:,|and|&)\s*(?:at\s+)?(?:{CLOCK}))*", s.t, re.I)
    if m is not None:
        out = []
        for c in re.finditer(CLOCK, m.group(0), re.I):
            t = clock_time(c)
            if t is None:
                return None
            out.append(t)
        s.blank(m)
        return out
    m = re.search(rf"\b(?:{TOD_RE})(?:\s*(?:,|and|&)\s*(?:{TOD_RE}))+", s.t, re.I)
    if m is not None:
        out = [t for p in re.split(r",|\band\b|&", m.group(0)) if (t := tod_time(p))]
        s.blank(m)
        return out
    return []
