"""agents/llm/output.py: the pydantic output contracts, their grammars and their checks."""

from __future__ import annotations

import importlib.util
import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from agents.assistant.model_roles import (
    Narrative,
    SayReply,
    SymptomsReply,
    YesNoReply,
    plan_reply,
)
from agents.llm.output import OutputError, grammar_schema, parse_output
from agents.medication.prescription_model import RxReading
from gateway.base.errors import HealthGWError

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None
needs_llama = pytest.mark.skipif(not HAVE_LLAMA, reason="llama-cpp-python is not installed")


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(max_length=40)
    tool: Literal["notify_user", "<END>"]


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["plan"]
    count: int = Field(ge=1, le=3)


class Nested(BaseModel):
    model_config = ConfigDict(extra="forbid")
    inner: Inner
    symptoms: list[str] = Field(min_length=1, max_length=2)
    dose: float | None


def _grammar(schema: dict[str, Any]) -> str:
    from llama_cpp.llama_grammar import LlamaGrammar

    return str(LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)._grammar)


def test_parse_output_accepts_a_valid_plan() -> None:
    got = parse_output(Plan, {"reason": "ask the day", "tool": "notify_user"})
    assert got == Plan(reason="ask the day", tool="notify_user")


@pytest.mark.parametrize(
    "value",
    [
        {"reason": "x", "tool": "rm -rf"},  # not in the enum
        {"reason": "x" * 41, "tool": "<END>"},  # too long
        {"tool": "<END>"},  # missing required
        {"reason": "x", "tool": "<END>", "extra": 1},  # no other keys
        {"reason": 3, "tool": "<END>"},  # wrong type
        ["reason", "tool"],  # not an object
        None,
    ],
)
def test_parse_output_rejects(value: Any) -> None:
    with pytest.raises(OutputError):
        parse_output(Plan, value)


def test_parse_output_types_are_json_types_never_coerced() -> None:
    ok = {"inner": {"kind": "plan", "count": 2}, "symptoms": ["cough"], "dose": 5}
    assert parse_output(Nested, ok).dose == 5.0  # a JSON integer is a number
    assert parse_output(Nested, {**ok, "dose": None}).dose is None
    for bad in (
        {**ok, "inner": {"kind": "plan", "count": True}},  # true is not 1
        {**ok, "inner": {"kind": "plan", "count": "2"}},  # "2" is not a number
        {**ok, "inner": {"kind": "plan", "count": 4}},  # above the maximum
        {**ok, "dose": "5"},
        {**ok, "symptoms": []},
        {**ok, "symptoms": ["a", "b", "c"]},
    ):
        with pytest.raises(OutputError):
            parse_output(Nested, bad)


def test_output_error_is_a_healthgw_error() -> None:
    assert issubclass(OutputError, HealthGWError)


def test_plan_reply_narrows_the_tool_and_is_cached() -> None:
    cls = plan_reply(("notify_user", "<END>"))
    assert cls is plan_reply(("notify_user", "<END>"))
    schema = grammar_schema(cls)
    assert list(schema["properties"]) == ["reason", "tool"]
    assert schema["properties"]["tool"]["enum"] == ["notify_user", "<END>"]
    assert parse_output(cls, {"reason": "tell them", "tool": "<END>"}).tool == "<END>"
    with pytest.raises(OutputError):
        parse_output(cls, {"reason": "book it now", "tool": "confirm_appointment"})


@needs_llama
@pytest.mark.parametrize(
    "output",
    [plan_reply(("notify_user", "<END>")), SayReply, SymptomsReply, YesNoReply, Narrative,
     RxReading, Nested],
)  # fmt: skip
def test_every_contract_builds_a_grammar(output: type[BaseModel]) -> None:
    assert "root ::=" in _grammar(grammar_schema(output))


@needs_llama
def test_pydantic_schema_gives_the_hand_written_schemas_grammar() -> None:
    # What the prescription reader sent before it had a pydantic contract: titles, anyOf
    # with null for a list of types, and the rest build the very same grammar.
    hand_written = {
        "type": "object",
        "properties": {
            "medicine": {"type": "string", "minLength": 2, "maxLength": 40},
            "dose_amount": {"type": "number", "minimum": 0},
            "dose_unit": {"type": "string", "enum": ["mg", "g", "mcg", "ml", "tablet",
                                                       "capsule", "puff", "drop"]},
            "times_per_day": {"type": ["integer", "null"], "minimum": 1, "maximum": 6},
            "duration_days": {"type": ["integer", "null"], "minimum": 1, "maximum": 366},
        },
        "required": ["medicine", "dose_amount", "dose_unit", "times_per_day", "duration_days"],
        "additionalProperties": False,
    }  # fmt: skip
    assert _grammar(grammar_schema(RxReading)) == _grammar(hand_written)


def test_a_contract_without_a_json_schema_is_an_output_error() -> None:
    from collections.abc import Callable

    class NoSchema(BaseModel):
        call: Callable[[], None]

    with pytest.raises(OutputError):
        grammar_schema(NoSchema)
