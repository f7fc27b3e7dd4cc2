from __future__ import annotations

from typing import Any

import pytest

from agents.eval.metrics import (
    caller_scores,
    canonical_call,
    normalise_text,
    rouge_l,
    tokens,
    values_match,
)

# --- tokens -----------------------------------------------------------------------------------


def test_tokens_lowercase_and_split_on_punctuation() -> None:
    assert tokens("Dr. Omar Bello (Rheumatologist)") == ["dr", "omar", "bello", "rheumatologist"]
    assert tokens("") == []
    assert tokens("  ,;- ") == []


def test_tokens_keep_numbers_times_and_dates_whole() -> None:
    assert tokens("10:00-10:30, 16/03/2026") == ["10:00-10:30", "16/03/2026"]
    assert tokens("oxygen is 87%, temp 37.5") == ["oxygen", "is", "87", "temp", "37.5"]
    assert tokens("2026-03-16 09:00-12:00") == ["2026-03-16", "09:00-12:00"]
    assert tokens("user QWTR482913, id RHEU-204.") == ["user", "qwtr482913", "id", "rheu", "204"]


# --- ROUGE-L ----------------------------------------------------------------------------------


def test_rouge_l_empty_cases() -> None:
    assert rouge_l("", "") == 1.0
    assert rouge_l("...", "") == 1.0  # no tokens on either side
    assert rouge_l("", "something") == 0.0
    assert rouge_l("something", "") == 0.0


def test_rouge_l_values() -> None:
    assert rouge_l("the cat sat", "the cat sat") == 1.0
    assert rouge_l("The CAT, sat!", "the cat sat") == 1.0
    assert rouge_l("dog", "the cat sat") == 0.0
    # LCS "the sat" = 2; P = 2/3, R = 2/4 -> F = 4/7.
    assert rouge_l("the dog sat", "the cat has sat") == pytest.approx(4 / 7)
    # Order matters: LCS of reversed sequences is 1.
    assert rouge_l("c b a", "a b c") == pytest.approx(1 / 3)


# --- values_match -----------------------------------------------------------------------------


@pytest.mark.parametrize("lenient", [False, True])
def test_strings_normalised(lenient: bool) -> None:
    assert values_match("  Rheumatologist ", "rheumatologist", lenient=lenient)
    assert values_match("morning  knee\nstiffness", "Morning knee stiffness", lenient=lenient)
    assert not values_match("cardiologist", "rheumatologist", lenient=lenient)
    assert normalise_text("  A \t B  ") == "a b"


@pytest.mark.parametrize("lenient", [False, True])
def test_numbers_and_numeric_strings(lenient: bool) -> None:
    assert values_match(87, 87.0, lenient=lenient)
    assert values_match(0.1 + 0.2, 0.3, lenient=lenient)
    assert not values_match(87, 88, lenient=lenient)
    assert not values_match(87.01, 87, lenient=lenient)
    assert values_match("87", 87, lenient=lenient)
    assert values_match(" 51.5074 ", 51.5074, lenient=lenient)
    assert values_match(87, "87.0", lenient=lenient)
    assert not values_match("87 bpm", 87, lenient=lenient)
    assert not values_match("nan", 1, lenient=lenient)
    # Two strings compare as strings: ids and phone numbers keep zeros and "+".
    assert not values_match("0042", "42", lenient=lenient)
    assert not values_match("447700900123", "+447700900123", lenient=lenient)


@pytest.mark.parametrize("lenient", [False, True])
def test_bools_and_none(lenient: bool) -> None:
    assert values_match(True, True, lenient=lenient)
    assert values_match("true", True, lenient=lenient)
    assert not values_match(1, True, lenient=lenient)
    assert not values_match(True, 1, lenient=lenient)
    assert not values_match(False, True, lenient=lenient)
    assert values_match(None, None, lenient=lenient)
    assert not values_match(None, "", lenient=lenient)
    assert not values_match(0, None, lenient=lenient)


@pytest.mark.parametrize("lenient", [False, True])
def test_nested_dicts_and_lists(lenient: bool) -> None:
    ref: dict[str, Any] = {
        "symptoms": "cough",
        "user_schedule": {"date": "2026-03-16", "time_range": "09:00-12:00"},
        "location": {"latitude": 51.5, "longitude": -0.12},
        "list": [1, "a", {"x": 2}],
    }
    pred: dict[str, Any] = {
        "symptoms": "Cough",
        "user_schedule": {"date": "2026-03-16", "time_range": "09:00-12:00"},
        "location": {"latitude": "51.5", "longitude": -0.12, "accuracy": 5},  # extra nested key
        "list": [1.0, "A", {"x": "2"}],
    }
    assert values_match(pred, ref, lenient=lenient)
    wrong_time = {**pred, "user_schedule": {"date": "2026-03-16", "time_range": "12:00-17:00"}}
    assert not values_match(wrong_time, ref, lenient=lenient)
    missing = {**pred, "location": {"latitude": 51.5}}
    assert not values_match(missing, ref, lenient=lenient)
    assert not values_match({**pred, "list": [1, "a"]}, ref, lenient=lenient)
    assert not values_match({**pred, "list": ["a", 1, {"x": 2}]}, ref, lenient=lenient)
    assert not values_match("not a dict", ref, lenient=lenient)
    assert not values_match({"0": 1}, [1], lenient=lenient)


def test_lenient_free_text() -> None:
    ref = "I have noted your joint symptoms. Tell me whenever you would like me to book."
    close = "I noted your joint symptoms; tell me when you would like me to book."
    assert not values_match(close, ref, lenient=False)
    assert values_match(close, ref, lenient=True)
    assert not values_match("Your appointment is booked.", ref, lenient=True)


def test_lenient_does_not_apply_to_short_strings_times_and_dates() -> None:
    # Fewer than 4 tokens: compared exactly even when lenient.
    ref = "10:00-10:30, 16/03/2026"
    assert values_match("10:00-10:30,  16/03/2026", ref, lenient=True)
    assert not values_match("10:00-10:30, 17/03/2026", ref, lenient=True)
    assert not values_match("10:30-11:00, 16/03/2026", ref, lenient=True)
    assert not values_match("2026-03-17", "2026-03-16", lenient=True)
    assert not values_match("2026-03-14T18:21:00", "2026-03-14T18:20:00", lenient=True)
    assert not values_match("knee pain", "morning knee pain", lenient=True)


# --- caller_scores ----------------------------------------------------------------------------

REF: dict[str, Any] = {
    "tool": "store_symptoms",
    "parameters": {
        "user_id": "QWTR482913",
        "symptoms": "morning knee stiffness, swollen fingers and aching wrists",
        "timestamp": "2026-03-14T18:20:00",
    },
}


def test_caller_perfect() -> None:
    s = caller_scores(REF, REF)
    assert (s.tool_ok, s.param_ok, s.values_ok_exact, s.values_ok_lenient) == (True,) * 4
    assert s.rouge_l == 1.0


def test_caller_paraphrased_free_text_is_lenient_only() -> None:
    pred = {
        "tool": "store_symptoms",
        "parameters": {**REF["parameters"], "symptoms": "stiff knees in the morning, swollen "
                       "fingers and aching wrists"},
    }  # fmt: skip
    s = caller_scores(pred, REF)
    assert s.tool_ok and s.param_ok
    assert not s.values_ok_exact
    assert s.values_ok_lenient
    assert 0.5 < s.rouge_l < 1.0


def test_caller_wrong_tool_values_not_judged() -> None:
    pred = {"tool": "notify_user", "parameters": REF["parameters"]}
    s = caller_scores(pred, REF)
    assert not s.tool_ok
    assert s.param_ok
    assert not s.values_ok_exact and not s.values_ok_lenient


def test_caller_extra_or_missing_parameter() -> None:
    extra = {"tool": "store_symptoms", "parameters": {**REF["parameters"], "note": None}}
    s = caller_scores(extra, REF)
    assert s.tool_ok and not s.param_ok and not s.values_ok_exact and not s.values_ok_lenient
    params: dict[str, Any] = dict(REF["parameters"])
    del params["timestamp"]
    s = caller_scores({"tool": "store_symptoms", "parameters": params}, REF)
    assert s.tool_ok and not s.param_ok and not s.values_ok_exact


def test_caller_malformed_prediction_scores_wrong() -> None:
    for pred in ({}, {"tool": "store_symptoms"}, {"tool": "store_symptoms", "parameters": "x"}):
        s = caller_scores(pred, REF)
        assert not s.param_ok and not s.values_ok_exact and not s.values_ok_lenient
    assert caller_scores("nonsense", REF).tool_ok is False  # type: ignore[arg-type]


def test_canonical_call_sorts_keys() -> None:
    a = {"tool": "t", "parameters": {"b": 1, "a": 2}}
    b = {"parameters": {"a": 2, "b": 1}, "tool": "t"}
    assert canonical_call(a) == canonical_call(b)
    assert canonical_call(a) == '{"parameters": {"a": 2, "b": 1}, "tool": "t"}'
