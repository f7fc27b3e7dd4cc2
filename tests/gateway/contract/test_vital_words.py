"""Every text a person reads is words and units (gateway/contract/vital_words.py).

Each function that words vitals for a person is marked @user_text; this test finds them by
reading the source (so a new one cannot be forgotten), renders each with every vital of the
table (gateway/contract/vitals.py, so a new vital cannot be forgotten either) and with the odd values
the contract and the stored JSON allow (None, NaN, infinities, a nested sleep dict, partial
or broken sleep, words, bools, lists), and fails on anything that reads as Python: braces,
brackets, None, nan, True/False, an object repr, quoted dict keys or a snake_case name."""

from __future__ import annotations

import ast
import html
import importlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agents.medication.prescription import parse_prescription
from agents.tools.sos_tools import NOTIFY_MAX, SMS_MAX
from gateway.contract.topics import Sleep
from gateway.contract.vital_words import (
    USER_TEXTS,
    evidence_words,
    leaks,
    sleep_words,
    value_words,
    vital_words,
)
from gateway.contract.vitals import VITALS
from gateway.household.model import Person
from gateway.monitor.profile import Profile
from tests.agents import household

ROOT = Path(__file__).resolve().parents[3]
NAN, INF = float("nan"), float("inf")

# --- the formatter ---------------------------------------------------------------------------


def test_sleep_is_hours_and_minutes_asleep_by_stage() -> None:
    night = {"deep": 75, "light": 238, "rem": 94, "awake": 44}
    assert value_words("sleep", night) == (
        "6 h 47 min asleep (deep 1 h 15 min, light 3 h 58 min, REM 1 h 34 min; awake 44 min)"
    )
    assert (
        value_words("sleep", Sleep(deep=60, light=30.4))
        == "1 h 30 min asleep (deep 1 h, light 30 min)"
    )
    assert sleep_words({"deep": NAN, "light": 20, "rem": "x"}) == "20 min asleep (light 20 min)"
    assert sleep_words({"deep": NAN}) == "unreadable"
    assert vital_words("sleep", None) == "sleep not measured"
    assert vital_words("sleep", {"awake": 10}) == "sleep: 0 min asleep (awake 10 min)"


def test_numbers_with_their_units_and_missing_values_in_words() -> None:
    assert vital_words("spo2", 91.0) == "oxygen saturation 91%"
    assert vital_words("respiratory_rate", 25) == "breathing rate 25 per minute"
    assert vital_words("temperature_c", 38.42) == "temperature 38.4 °C"
    assert vital_words("systolic_bp", 150) == "systolic blood pressure 150 mmHg"
    assert vital_words("steps", 1234.0) == "1234 steps"
    assert vital_words("heart_rate", None) == "heart rate not measured"
    assert vital_words("heart_rate", NAN) == "heart rate unreadable"
    assert vital_words("heart_rate", True) == "heart rate unreadable"
    assert vital_words("consciousness", "v") == "consciousness: responds to voice only"
    assert vital_words("on_supplemental_o2", True) == "on supplemental oxygen"
    assert vital_words("fall_detected", False) == "no fall detected"
    assert vital_words("battery", 12.5) == "battery 12.5%"
    assert evidence_words("heart_rate", {"value": 124, "class": "high", "normal": [50, 100]}) == (
        "heart rate 124 bpm (high, normal 50-100)"
    )
    full = {"value": 84, "class": "critical_low", "normal": [92, 100], "intervention": True}
    assert evidence_words("spo2", full, full=True) == (
        "oxygen saturation 84% (critical low; normal 92-100; intervention range)"
    )


def test_leaks_finds_python_and_passes_words() -> None:
    for bad in ("sleep {'deep': 75}", "heart rate None", "value nan", "[87, 90]",
                "<object at 0x7f>", "ok True", "spo2_low", "x ('a', 1)"):  # fmt: skip
        assert leaks(bad), bad
    for good in ("Alice's oxygen saturation 91% (low, normal 94-100). Don't wait.",
                 "NEWS2 7 (high, from partial readings)", "If you don't answer within 60 "
                 "seconds we will call for help."):  # fmt: skip
        assert leaks(good) == [], good


# --- every vital, every odd value --------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    vital: str
    value: Any
    info: Any  # the alert evidence entry for it


_NIGHT = {"deep": 75, "light": 238, "rem": 94, "awake": 44}
_ODD_VALUES: tuple[Any, ...] = (
    None, NAN, INF, -INF, 0, -3.0, 1e7, 87.25, "87", "abc", "", True, False, {}, [1, 2],
    (3,), _NIGHT, {"deep": NAN, "light": None}, {"deep": "x"}, Sleep(deep=30, rem=15),
    object(),
)  # fmt: skip
_CLASSES: tuple[Any, ...] = ("low", "critical_high", None, 3, {"x": 1})
_RANGES: tuple[Any, ...] = ([94, 100], (NAN, 5), None, {"low": 1, "high": 2}, "wide", [1])


def _typical(name: str) -> Any:
    return {"sleep": _NIGHT, "consciousness": "C", "steps": 4200, "on_supplemental_o2": True,
            "fall_detected": True}.get(name, 91.5)  # fmt: skip


def cases() -> Iterator[Case]:
    """Every vital of the table (and one it does not know) with every odd value, each as an
    evidence entry with a class and normal range of some odd shape."""
    names = [v.name for v in VITALS] + ["glucose_mmol"]
    for name in names:
        for i, value in enumerate((_typical(name), *_ODD_VALUES)):
            info = {"value": value, "unit": "mmol/L" if name == "glucose_mmol" else None,
                    "class": _CLASSES[i % len(_CLASSES)],
                    "normal": _RANGES[i % len(_RANGES)],
                    "intervention": i % 2 == 0, "unconfirmed": i % 3 == 0}  # fmt: skip
            yield Case(name, value, info)
        yield Case(name, None, value_words)  # not even a mapping: an odd evidence entry


def _alice() -> Person:
    p = household().person("alice")
    assert p is not None
    return p


ALICE = _alice()
ODD_SCORES: dict[str, Any] = {
    "news2": {"total": NAN, "level": None, "parameters": {"spo2": 3, "supplemental_o2": NAN}},
    "meows": {"triggered": True, "red": ["heart_rate"], "yellow": [None]},
}


def _params(c: Case, **extra: Any) -> dict[str, Any]:
    return {"abnormal": {c.vital: c.info}, "advice": None, **ODD_SCORES, **extra}


def _report(c: Case) -> dict[str, Any]:
    stats = {k: c.value for k in ("min", "mean", "max", "out_of_range_pct")}
    return {
        "date": None, "person": "alice", "name": "Alice", "readings": NAN,
        "vitals": {c.vital: {"n": 1, **stats}},
        "sos": {"soft": {"count": 1, "times": [None, "2026-03-10T08:20:00+00:00"]}},
        "news2_max": {"value": c.value, "time": None},
        "device_gaps": {"count": 1, "total_minutes": NAN, "listed": [
            {"device": "watch", "start": None, "end": "x", "minutes": c.value}]},
        "sleep": {"total_minutes": c.value, "sessions": [
            {"start": "2026-03-10T23:00:00+00:00", "end": None, "minutes": NAN,
             "quality": c.value}]},
        "adherence": {"medications": {"metformin": {"scheduled": 2, "taken": 1, "missed": 1,
                                                    "skipped": 0, "rate": None}}},
        "vs_previous_7_days": {c.vital: {"diff": c.value, "baseline_mean": None, "sd": NAN,
                                         "days": 3, "flag": True}},
    }  # fmt: skip


def _visible(page: str) -> str:
    """What a reader of the HTML page sees: no style sheet, no tags, no inline images."""
    page = re.sub(r"<style>.*?</style>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


_RX = parse_prescription("Metformin 500 mg twice daily with food").prescription
assert _RX is not None
_TZ = ZoneInfo("Europe/London")
_TS = datetime(2026, 3, 10, 8, 0, tzinfo=_TZ).timestamp()


def _why(c: Case) -> str:
    from gateway.monitor import wording

    data = {"rules": ["spo2 below normal range", None], **_params(c), "anomaly_score": c.value}
    return wording.why(data, Profile.from_person(ALICE, date(2026, 3, 10)))


def _m(module: str) -> Any:
    return importlib.import_module(module)


S, W, Q = "agents.playbooks.soft_texts", "gateway.monitor.wording", "gateway.escalation.words"
# Each registered builder, rendered for one case; and the limit its text must keep within.
ADAPTERS: dict[str, tuple[Callable[[Case], str], int | None]] = {
    f"{S}.vital_text": (lambda c: _m(S).vital_text(c.vital, c.info), None),
    f"{S}.vitals_phrase": (lambda c: _m(S).vitals_phrase({c.vital: c.info}), None),
    f"{S}.soft_message": (
        lambda c: _m(S).soft_message({c.vital: c.info}, None, None), NOTIFY_MAX),
    f"{S}.family_text": (lambda c: _m(S).family_text(ALICE, _params(c)), SMS_MAX),
    f"{S}.clinician_text": (lambda c: _m(S).clinician_text(ALICE, _params(c)), SMS_MAX),
    f"{S}.unanswered_text": (
        lambda c: _m(S).unanswered_text(
            ALICE, {"summary": _m(W).summary({c.vital: c.info})}), SMS_MAX),
    f"{W}.why": (_why, None),
    f"{W}.implausible_words": (lambda c: _m(W).implausible_words(c.vital, c.value), None),
    f"{W}.summary": (lambda c: _m(W).summary({c.vital: c.info}), None),
    f"{Q}.alert_question": (lambda c: _m(Q).alert_question(60.0, "contacts"), NOTIFY_MAX),
    f"{Q}.implausible_question": (
        lambda c: _m(Q).implausible_question(
            _m(W).implausible_words(c.vital, c.value), 60.0, "none"), NOTIFY_MAX),
    f"{Q}.unconfirmed_question": (
        lambda c: _m(Q).unconfirmed_question(
            _m(W).implausible_words(c.vital, c.value), 170.0, "hard_sos"), NOTIFY_MAX),
    f"{Q}.fall_question": (lambda c: _m(Q).fall_question(30.0), NOTIFY_MAX),
    "agents.medication.family_alerts.missed_dose_text": (
        lambda c: _m("agents.medication.family_alerts").missed_dose_text(
            ALICE.name, "08:00", "co_codamol {30/500}"), SMS_MAX),
    "agents.medication.family_alerts.medication_warning_text": (
        lambda c: _m("agents.medication.family_alerts").medication_warning_text(
            ALICE.name, ["Ibuprofen with a stomach ulcer: ask your doctor."]), SMS_MAX),
    "agents.medication.reminders.reminder_detail": (
        lambda c: _m("agents.medication.reminders").reminder_detail(_RX, None, _TS, _TZ), None),
    "agents.medication.reminders.reminder_text": (
        lambda c: _m("agents.medication.reminders").reminder_text(
            _m("agents.medication.reminders").reminder_detail(_RX, 0, _TS, _TZ)), NOTIFY_MAX),
    "agents.reports.page.render_html": (
        lambda c: _visible(_m("agents.reports.page").render_html(_report(c), [], None)),
        None),
}  # fmt: skip

# The formatters a text builder calls: a function outside vital_words.py calling one of them
# words vitals for a person, so it must be registered (@user_text).
_FORMATTERS = {"value_words", "vital_words", "evidence_words", "sleep_words", "range_words",
               "label", "implausible_words", "summary", "vitals_phrase", "vital_text"}  # fmt: skip


def _source_builders() -> tuple[set[str], set[str]]:
    """(functions decorated @user_text, functions returning text that call a formatter
    without it), by qualified name, read from the source of gateway/ and agents/."""
    marked: set[str] = set()
    unmarked: set[str] = set()
    for pkg in ("gateway", "agents"):
        for f in sorted((ROOT / pkg).rglob("*.py")):
            module = ".".join(f.relative_to(ROOT).with_suffix("").parts)
            if module == "gateway.contract.vital_words":
                continue
            for node in ast.walk(ast.parse(f.read_text())):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                name = f"{module}.{node.name}"
                decorators = {d.id for d in node.decorator_list if isinstance(d, ast.Name)}
                if "user_text" in decorators:
                    marked.add(name)
                    continue
                calls = {
                    n.func.id
                    for n in ast.walk(node)
                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                }
                returns = ast.unparse(node.returns) if node.returns is not None else ""
                if calls & _FORMATTERS and returns.startswith("str"):
                    unmarked.add(name)
    return marked, unmarked


def test_every_text_builder_is_registered_and_rendered_here() -> None:
    marked, unmarked = _source_builders()
    assert not unmarked, f"word vitals for people but are not @user_text: {sorted(unmarked)}"
    assert marked == set(ADAPTERS), (
        f"@user_text builders without a rendering here: {sorted(marked - set(ADAPTERS))}; "
        f"renderings of no builder: {sorted(set(ADAPTERS) - marked)}"
    )
    for name in ADAPTERS:  # importing the module registers it, under the same name
        _m(name.rsplit(".", 1)[0])
        assert name in USER_TEXTS, name


def test_the_vitals_table_words_every_vital() -> None:
    for v in VITALS:
        assert v.label and not leaks(v.label), v.name
        assert vital_words(v.name, _typical(v.name)) != vital_words(v.name, None), v.name


@pytest.mark.parametrize("builder", sorted(ADAPTERS))
def test_every_builder_renders_every_vital_as_words(builder: str) -> None:
    render, limit = ADAPTERS[builder]
    seen = 0
    for c in cases():
        text = render(c)
        seen += 1
        assert isinstance(text, str) and text.strip(), (builder, c)
        assert leaks(text) == [], (builder, c.vital, repr(c.value), leaks(text), text)
        if limit is not None:
            assert len(text) <= limit, (builder, c.vital, len(text))
    assert seen >= len(VITALS) * len(_ODD_VALUES)


def test_every_vital_at_once_keeps_within_the_text_limits() -> None:
    s = _m(S)
    everything = {c.vital: c.info for c in cases() if c.value is _NIGHT or c.value == 87.25}
    assert set(everything) >= {v.name for v in VITALS}
    params = {"abnormal": everything, "advice": "Sit upright. " * 40, **ODD_SCORES}
    for text, limit in (
        (s.soft_message(everything, "Sit upright. " * 40, "high"), NOTIFY_MAX),
        (s.family_text(ALICE, params), SMS_MAX),
        (s.clinician_text(ALICE, params), SMS_MAX),
    ):
        assert len(text) <= limit and leaks(text) == [], (len(text), text)
    message = s.soft_message(everything, "Call 999.", "high")
    assert message.endswith("Call 999.")  # the advice survives a long list
    assert "6 h 47 min asleep (deep 1 h 15 min" in message
