"""Vital values in words and units: the one formatter behind every text a person reads (the
wearer's notifications and questions, the family's and the care line's texts, an alert's
"why", the daily report). A value is never shown as Python: a dict, a list, None, NaN or a
string of the wrong kind becomes words ("not measured", "unreadable"), never its repr.

    value_words("sleep", {"deep": 75, "light": 238, "rem": 94, "awake": 44})
    -> "6 h 47 min asleep (deep 1 h 15 min, light 3 h 58 min, REM 1 h 34 min; awake 44 min)"
    vital_words("spo2", 91.0) -> "oxygen saturation 91%"
    evidence_words("heart_rate", {"value": 124, "class": "high", "normal": [50, 100]})
    -> "heart rate 124 bpm (high, normal 50-100)"

Pure and table-driven (gateway/contract/vitals.py): the gateway, the agents and the tests share it, and
a new vital is worded by its row. `leaks` names what must never reach a person (the test of
every text builder, tests/gateway/contract/test_vital_words.py, and the report's narrative check use it)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from gateway.contract.vitals import BY_NAME, SLEEP_STAGES, VITALS

NOT_MEASURED = "not measured"
UNREADABLE = "unreadable"

# Units said as words after the number; "%" is written against it ("94%").
_SPOKEN_UNITS = {"/min": "per minute", "breaths/min": "per minute", "rpm": "per minute"}
_TIGHT_UNITS = frozenset({"%"})
_STAGE_WORDS = {"deep": "deep", "light": "light", "rem": "REM"}
_ASLEEP = tuple(s for s in SLEEP_STAGES if s != "awake")
# ACVPU as a person says it.
_CONSCIOUSNESS = {
    "A": "alert",
    "C": "newly confused",
    "V": "responds to voice only",
    "P": "responds to pain only",
    "U": "unresponsive",
}
# NEWS2 names its parameters a little differently ("supplemental_o2").
_BY_NEWS2 = {v.news2: v.name for v in VITALS if v.news2 is not None}
# What reads as code, not words: brackets, quotes, angle brackets, backticks.
# An apostrophe inside a word ("don't", "O'Brien") is words; a quote around one is code.
_CODE_CHARS = re.compile(r"[{}\[\]<>\"`\\]|(?<![A-Za-z])'|'(?![A-Za-z])")


def words_only(text: str) -> str:
    """`text` with whatever reads as code removed ("heart_rate" -> "heart rate")."""
    return " ".join(_CODE_CHARS.sub(" ", text.replace("_", " ")).split())


def label(name: str) -> str:
    """What every text calls a vital (a NEWS2 parameter name works too)."""
    v = BY_NAME.get(name) or BY_NAME.get(_BY_NEWS2.get(name, ""))
    return v.label if v is not None else words_only(name)


def number(value: Any) -> float | None:
    """A finite real number, or None (None, NaN, infinities, bools, dicts, words)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        x = float(value)
    elif isinstance(value, str):
        try:
            x = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return x if math.isfinite(x) else None


def num_text(x: float, decimals: int = 1) -> str:
    """124.0 -> "124", 38.42 -> "38.4", -0.0 -> "0"."""
    r = round(x, decimals)
    if r == int(r):
        return str(int(r))
    return f"{r:.{decimals}f}".rstrip("0")


def unit_words(name: str) -> str:
    """A vital's unit as a text writes it ("bpm", "%", "per minute"); "" when it has none."""
    v = BY_NAME.get(name)
    unit = v.unit if v is not None else None
    return _SPOKEN_UNITS.get(unit, words_only(unit)) if unit else ""


def with_unit(x: float, unit: str | None, decimals: int = 1) -> str:
    n = num_text(x, decimals)
    if not unit:
        return n
    if unit in _TIGHT_UNITS:
        return f"{n}{unit}"
    return f"{n} {_SPOKEN_UNITS.get(unit, words_only(unit))}"


def duration(minutes: float) -> str:
    """Minutes as a person says them: "44 min", "2 h", "7 h 31 min"."""
    m = max(0, round(minutes))
    h, rest = divmod(m, 60)
    if h == 0:
        return f"{rest} min"
    return f"{h} h" if rest == 0 else f"{h} h {rest} min"


def _stages(value: Any) -> Mapping[str, Any] | None:
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)  # the contract's Sleep model itself
    if callable(dump):
        out = dump()
        return out if isinstance(out, Mapping) else None
    return None


def sleep_words(value: Any) -> str:
    """Stage minutes -> "7 h 31 min asleep (deep 1 h 15 min, light ..., REM ...; awake 44 min)".
    Unreadable stages are left out; none readable is "unreadable"."""
    if value is None:
        return NOT_MEASURED
    stages = _stages(value)
    if stages is None:
        alone = number(value)  # a bare number: minutes asleep
        return UNREADABLE if alone is None else f"{duration(alone)} asleep"
    known = {s: number(stages.get(s)) for s in SLEEP_STAGES}
    if all(m is None for m in known.values()):
        return UNREADABLE
    asleep = sum(m for s in _ASLEEP if (m := known[s]) is not None)
    parts = [f"{_STAGE_WORDS[s]} {duration(m)}" for s in _ASLEEP if (m := known[s])]
    inner = ", ".join(parts)
    awake = known["awake"]
    if awake:
        inner += ("; " if inner else "") + f"awake {duration(awake)}"
    head = f"{duration(asleep)} asleep"
    return f"{head} ({inner})" if inner else head


def value_words(name: str, value: Any, unit: Any = None) -> str:
    """A vital's value in words and its unit ("91%", "38.4 °C", "18 per minute", "yes").
    `unit` is used only for a vital the table does not know."""
    if value is None:
        return NOT_MEASURED
    if name == "sleep":
        return sleep_words(value)
    if name == "consciousness":
        return _CONSCIOUSNESS.get(str(value).strip().upper(), UNREADABLE)
    v = BY_NAME.get(name)
    if v is not None and v.column == "INTEGER" and v.tsdb == "bool":  # yes/no vitals
        return ("yes" if value else "no") if isinstance(value, bool | int) else UNREADABLE
    x = number(value)
    if x is None:
        return UNREADABLE
    u = v.unit if v is not None else (unit if isinstance(unit, str) else None)
    return with_unit(x, u, decimals=0 if name == "steps" else 1)


def vital_words(name: str, value: Any, unit: Any = None) -> str:
    """The vital and its value as a phrase: "heart rate 124 bpm", "1200 steps",
    "sleep: 7 h 31 min asleep (...)", "on supplemental oxygen", "a fall detected"."""
    words = value_words(name, value, unit)
    if words in (NOT_MEASURED, UNREADABLE):
        return f"{label(name)} {words}"
    if name == "steps":
        return words  # "1234 steps"
    if name in ("sleep", "consciousness"):
        return f"{name}: {words}"  # "sleep: 7 h 31 min asleep (...)"
    if name == "on_supplemental_o2":
        return "on supplemental oxygen" if words == "yes" else "breathing room air"
    if name == "fall_detected":
        return "a fall detected" if words == "yes" else "no fall detected"
    return f"{label(name)} {words}"


def range_words(r: Any) -> str | None:
    """A normal range: [94, 100] or {"low": 94, "high": 100} -> "normal 94-100"."""
    if isinstance(r, Mapping):
        r = (r.get("low"), r.get("high"))
    if isinstance(r, list | tuple) and len(r) == 2:
        lo, hi = number(r[0]), number(r[1])
        if lo is not None and hi is not None:
            return f"normal {num_text(lo)}-{num_text(hi)}"
        return None
    if isinstance(r, str) and words_only(r):
        return f"normal {words_only(r)}"
    return None


def evidence_words(name: str, info: Any, *, full: bool = False, notes: Iterable[str] = ()) -> str:
    """One entry of an alert's evidence ({value, class, normal or range, unit, ...}) as
    "oxygen saturation 87% (low, normal 94-100)". `full` (the alert's "why") adds the
    intervention range, an unconfirmed jump and `notes`, separated by semicolons."""
    if not isinstance(info, Mapping):
        return vital_words(name, info)
    phrase = vital_words(name, info.get("value"), info.get("unit"))
    cls = info.get("class")
    detail = [words_only(cls) if isinstance(cls, str) else None]
    detail.append(range_words(info.get("range", info.get("normal"))))
    if full:
        detail.append("intervention range" if info.get("intervention") else None)
        detail.append("sudden change, not yet confirmed" if info.get("unconfirmed") else None)
        usual = range_words(info.get("usual"))  # the person's own baseline (monitor/baseline.py)
        detail.append(usual.replace("normal", "their usual", 1) if usual else None)
        detail.extend(words_only(n) for n in notes)
    shown = [d for d in detail if d]
    return f"{phrase} ({('; ' if full else ', ').join(shown)})" if shown else phrase


# The registry of text builders: every function that words vitals for a person is marked
# @user_text, and tests/gateway/contract/test_vital_words.py renders each with every vital of the table.
USER_TEXTS: dict[str, Callable[..., str]] = {}

F = TypeVar("F", bound=Callable[..., str])


def user_text(fn: F) -> F:
    """Mark `fn` as a builder of text a person reads (registered by module and name)."""
    USER_TEXTS[f"{fn.__module__}.{fn.__qualname__}"] = fn
    return fn


def and_list(items: Iterable[str]) -> str:
    xs = list(items)
    if len(xs) <= 1:
        return "".join(xs)
    return ", ".join(xs[:-1]) + " and " + xs[-1]


# --- what must never reach a person ----------------------------------------------------------

_LEAKS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("brace", re.compile(r"[{}]")),
    ("square bracket", re.compile(r"[\[\]]")),
    ("None", re.compile(r"\bNone\b")),
    ("NaN", re.compile(r"\bnan\b", re.I)),
    ("infinity", re.compile(r"\binf(inity)?\b", re.I)),
    ("Python bool", re.compile(r"\b(True|False)\b")),
    ("object repr", re.compile(r"<[A-Za-z_][\w.]*( object)?[ >]|\bat 0x[0-9a-f]+", re.I)),
    ("quoted key or item", re.compile(r"'[^'\s]*'\s*[:,)]|\(\s*'|:\s*'[^']*'")),
    ("identifier", re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b")),
)


def leaks(text: str) -> list[str]:
    """What in `text` reads as a Python value rather than words: braces, brackets, None, NaN,
    a bool, an object repr, a quoted dict key, a snake_case name. [] when clean."""
    return [what for what, pattern in _LEAKS if pattern.search(text)]
