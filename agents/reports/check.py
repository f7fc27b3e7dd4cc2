"""The narrative check: the local model's prose about a report is kept only if every number,
time and date it states is in the report (numbers by value, in words or digits)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import TYPE_CHECKING, Any

from gateway.contract.vital_words import leaks

if TYPE_CHECKING:  # imported where used: the gateway loads pandas only to make a report
    pass

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_ORD = r"(?:st|nd|rd|th)"
_DATE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b"),
    re.compile(
        rf"\b(?P<d>\d{{1,2}}){_ORD}?(?:\s+of)?\s+(?:{_MONTHS})\.?(?:,?\s+(?P<y>\d{{4}}))?\b", re.I
    ),
    re.compile(rf"\b(?:{_MONTHS})\.?\s+(?P<d>\d{{1,2}}){_ORD}?(?:,?\s+(?P<y>\d{{4}}))?\b", re.I),
    re.compile(rf"\b(?:{_WEEKDAYS}),?\s+(?:the\s+)?(?P<d>\d{{1,2}}){_ORD}?\b", re.I),
    re.compile(rf"\b(?:{_MONTHS})\.?,?\s+(?P<y>\d{{4}})\b", re.I),
)
_TIME_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?<![\w.:])(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ap>[ap])\.?m\b\.?", re.I),
    re.compile(r"(?<![\w.:])(?P<h>\d{1,2}):(?P<m>\d{2})(?::\d{2})?(?![\d:])"),
)
_NUMBER = re.compile(
    r"(?<![\w.])[-+−]?(?P<n>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<pct>\s*(?:%|percent\b|per\s+cent\b))?",
    re.I,
)


@dataclass(frozen=True)
class _Num:
    value: float
    decimals: int
    percent: bool


@dataclass
class _Parsed:
    numbers: list[_Num] = field(default_factory=list)
    times: list[tuple[int, int]] = field(default_factory=list)
    dates: list[tuple[int | None, int | None, int | None]] = field(default_factory=list)


def _blank(text: str, m: re.Match[str]) -> str:
    return text[: m.start()] + " " * (m.end() - m.start()) + text[m.end() :]


def _parse(text: str) -> _Parsed:
    """Dates and times first (blanked out of the text), then the remaining numbers."""
    out = _Parsed()
    for pat in _DATE_PATTERNS:
        while (m := pat.search(text)) is not None:
            g = m.groupdict()
            y = int(g["y"]) if g.get("y") else None
            mo = int(g["m"]) if g.get("m") else None
            dd = int(g["d"]) if g.get("d") else None
            out.dates.append((y, mo, dd))
            text = _blank(text, m)
    for pat in _TIME_PATTERNS:
        while (m := pat.search(text)) is not None:
            h, mi = int(m["h"]), int(m["m"] or 0)
            ap = (m.groupdict().get("ap") or "").lower()
            if ap == "p" and h < 12:
                h += 12
            elif ap == "a" and h == 12:
                h = 0
            out.times.append((h, mi))
            text = _blank(text, m)
    for m in _NUMBER.finditer(text):
        if not m["pct"] and re.match(_ORD + r"\b", text[m.end("n") :], re.I):
            continue  # "2nd dose": an ordinal, a counting word
        raw = m["n"].replace(",", "")
        decimals = len(raw.split(".")[1]) if "." in raw else 0
        out.numbers.append(_Num(float(raw), decimals, bool(m["pct"])))
    return out


def numbers_in(text: str) -> list[float]:
    """The quantities stated in `text`, in order: integers, decimals (``1,200`` is 1200),
    percentages (``88%`` -> 88.0), signs dropped. Dates ("10 March 2026", "Tuesday the 10th",
    "2026-03-10"), clock times ("08:20", "8pm") and ordinals ("2nd") are not quantities and are left out;
    digits glued to letters ("SpO2", "NEWS2") are not numbers; number words ("two",
    "twice") are not parsed."""
    return [n.value for n in _parse(text).numbers]


def _walk(obj: Any, key_text: list[str]) -> Iterator[Any]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            key_text.append(str(k))
            yield from _walk(v, key_text)
    elif isinstance(obj, list | tuple):
        for v in obj:
            yield from _walk(v, key_text)
    else:
        yield obj


def _report_facts(report: dict[str, Any]) -> tuple[list[float], set[tuple[int, int]], set[date]]:
    numbers: list[float] = []
    times: set[tuple[int, int]] = set()
    dates: set[date] = set()
    keys: list[str] = []
    for leaf in _walk(report, keys):
        if isinstance(leaf, bool) or leaf is None:
            continue
        if isinstance(leaf, int | float):
            if not math.isnan(leaf):
                numbers.append(abs(float(leaf)))
            continue
        if not isinstance(leaf, str):
            continue
        try:
            dt = datetime.fromisoformat(leaf)
        except ValueError:
            parsed = _parse(leaf)
            numbers += [n.value for n in parsed.numbers]
            times |= set(parsed.times)
            continue
        if len(leaf) <= 10:  # a date
            dates.add(dt.date())
            continue
        times.add((dt.hour, dt.minute))
        if dt.time() != time(0):  # the next midnight (day_end) does not name the next day
            dates.add(dt.date())
    for k in keys:
        numbers += [n.value for n in _parse(k).numbers]
    return numbers, times, dates


def _matches(n: _Num, facts: list[float]) -> bool:
    tol = 0.5 * 10.0 ** (-n.decimals) + 1e-9
    for v in facts:
        if abs(v - n.value) <= tol:
            return True
        if n.percent and abs(v * 100.0 - n.value) <= tol:  # rate 0.667 stated as 66.7%
            return True
    return False


def narrative_ok(narrative: str, report: dict[str, Any]) -> bool:
    """True only if every number the narrative states is in the report.

    A stated number with k decimals matches a report number v when v rounds to it at k
    decimals (|v - n| <= 0.5 x 10^-k): "83" and "83.3" both match a mean of 83.3, "85" does
    not match 88. Signs are ignored (a diff of -3.2 may be told as "3.2 lower"); a
    percentage also matches a fraction in the report (66.7% ~ rate 0.667). Dates count only
    when they name a date in the report (the day itself, the baseline window): a day-of-month
    stated as a date ("10 March", "Tuesday the 10th") and a bare year equal to the report's
    are fine, but a bare "10" is a quantity and must be in the data; clock times must be times in the
    report; number words ("two", "twice") are not checked. Text that reads as data ("None",
    "nan", braces, a snake_case field name: gateway/vital_words.leaks) is never kept.
    """
    if leaks(narrative):  # "None", "nan", a dict or a field name: the data, not words
        return False
    facts, times, dates = _report_facts(report)
    try:
        day = date.fromisoformat(str(report.get("date")))
    except ValueError:
        day = None
    years = {d.year for d in dates}
    days_of_month = {d.day for d in dates}
    parsed = _parse(narrative)
    for y, mo, dd in parsed.dates:
        if y is not None and y not in years:
            return False
        if dd is not None and dd not in days_of_month:
            return False
        if y is not None and mo is not None and dd is not None:
            try:
                if date(y, mo, dd) not in dates:
                    return False
            except ValueError:
                return False
    if any(t not in times for t in parsed.times):
        return False
    for n in parsed.numbers:
        if day is not None and not n.percent and n.decimals == 0 and n.value == day.year:
            continue
        if not _matches(n, facts):
            return False
    return True
