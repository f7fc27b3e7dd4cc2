"""The caller fills the parameters of exactly the tool the planner named, from that tool's
own argument model, or refuses with a typed error; it never mixes two tools."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents.assistant.caller import TOOL_ARGS, Caller, CallerError, validated
from agents.assistant.memory import LongTermMemory
from agents.assistant.planner.policy import Policy
from agents.assistant.planner.types import View
from agents.eval.predictor import TOOLS, AgentPredictor
from agents.tools.appointment_tools import AppointmentToolDeps, register_appointment_tools
from agents.tools.registry import ToolRegistry
from agents.triage.classifier import Triage
from agents.triage.lazy import LazyTriage
from gateway.base.clock import ManualClock
from gateway.base.db import Database
from gateway.base.errors import HealthGWError
from gateway.household.model import load_household
from tests.harness import TRIAGE_CACHE

ROOT = Path(__file__).resolve().parents[3]
UID = "QWTR482913"
SAID = (
    "I've been extremely fatigued with chills, body aches and a sore throat, it's becoming "
    "hard to get through the day"
)
SYMPTOMS = "fatigue, chills, body aches, sore throat"


@pytest.fixture(scope="module")
def policy(trained_triage: Triage) -> Policy:
    return Policy(LazyTriage(TRIAGE_CACHE))


def start() -> list[dict[str, Any]]:
    return [
        {"from": "system", "value": {"user_details": {
            "user_id": UID, "name": "Nadia Haddad", "timestamp": "2026-03-14T18:20:00"}}},
        {"from": "user", "value": SAID},
    ]  # fmt: skip


def step(states: list[dict[str, Any]], action: str, tool: str, params: Any, result: Any) -> None:
    states += [
        {"from": "planner", "value": {"reason": "r", "action": action}},
        {"from": "caller", "value": {"tool": tool, "parameters": params}},
        {"from": "observation", "value": {"result": result}},
    ]


def planner(action: str) -> dict[str, Any]:
    return {"from": "planner", "value": {"reason": "The reference's step.", "action": action}}


def test_the_contract_is_the_registrys(tmp_path: Path) -> None:
    assert set(TOOL_ARGS) == set(TOOLS)
    clock = ManualClock(1_773_651_600.0)
    reg = ToolRegistry(clock=clock)
    mem = LongTermMemory(Database(tmp_path / "m.db"), clock_now=clock.now)
    hh = load_household(ROOT / "examples" / "household.yaml")
    register_appointment_tools(reg, AppointmentToolDeps(hh, mem, clock, classify=lambda s: "gp"))
    for name in reg.names():
        assert TOOL_ARGS[name] is reg.spec(name).args_model, name


def test_the_planners_tool_gets_its_own_parameters(policy: Policy) -> None:
    # The case: the reference planner searches where our policy would first ask for
    # the user's schedule. The call must be the search, with the search's parameters only.
    h = start()
    step(h, "Use retrieve_past_complaints.", "retrieve_past_complaints",
         {"user_id": UID, "symptoms": SYMPTOMS}, [])  # fmt: skip
    assert AgentPredictor(policy).predict_tool(h) == "get_input_from_user"
    h.append(planner("Use get_available_specialists to find a general physician."))
    call = AgentPredictor(policy).call(h)
    assert call["tool"] == "get_available_specialists"
    params = call["parameters"]
    assert set(params) == {"symptoms", "specialization", "user_schedule"}
    assert params["symptoms"] == SYMPTOMS
    # No schedule was asked: the documented default, tomorrow in working hours.
    assert params["user_schedule"] == {"date": "2026-03-15", "time_range": "09:00-17:00"}
    validated("get_available_specialists", params)


def test_first_symptoms_are_condensed_for_every_symptom_tool(policy: Policy) -> None:
    v = View.from_states(start())
    caller = Caller(policy)
    for tool in ("retrieve_past_complaints", "store_symptoms", "get_available_specialists"):
        assert caller.params(tool, v)["symptoms"] == SYMPTOMS, tool


def test_what_cannot_be_filled_is_refused_with_a_typed_error(policy: Policy) -> None:
    caller = Caller(policy)
    v = View.from_states(start())
    for tool in ("confirm_appointment", "save_appointment_history", "search_ambulance",
                 "send_message", "notify_user", "no_such_tool"):  # fmt: skip
        with pytest.raises(CallerError) as exc:
            caller.params(tool, v)
        assert isinstance(exc.value, HealthGWError)
        assert "fatigue" not in str(exc.value)  # names the fields, never the values
    h = [*start(), planner("Call confirm_appointment.")]
    with pytest.raises(CallerError):
        AgentPredictor(policy).call(h)


def test_a_mixed_call_does_not_validate() -> None:
    with pytest.raises(CallerError) as exc:
        validated("get_available_specialists", {"user_id": UID, "questions": "When?",
                  "symptoms": "x", "user_schedule": {"date": "2026-03-15"}})  # fmt: skip
    assert set(exc.value.fields) == {"questions", "user_id"}


def test_after_an_offer_the_named_tools_use_its_slot(policy: Policy) -> None:
    h = start()
    step(h, "Use retrieve_past_complaints.", "retrieve_past_complaints",
         {"user_id": UID, "symptoms": SYMPTOMS}, [])  # fmt: skip
    found = {"specialist_id": "GP-101", "name": "Dr. Omar Bello (General Physician)",
             "available_slot": {"date": "2026-03-16", "time": "10:00-10:30"}}  # fmt: skip
    step(h, "Use get_available_specialists.", "get_available_specialists",
         {"symptoms": SYMPTOMS, "specialization": "general physician",
          "user_schedule": {"date": "2026-03-16", "time_range": "09:00-12:00"}}, found)  # fmt: skip
    caller = Caller(policy)
    v = View.from_states(h)
    q = caller.params("get_input_from_user", v)["questions"]
    assert "Dr. Omar Bello" in q and "10:00" in q
    step(h, "Offer the slot.", "get_input_from_user", {"user_id": UID, "questions": q}, "Yes")
    v = View.from_states(h)
    assert caller.params("confirm_appointment", v) == {
        "user_id": UID, "specialist_id": "GP-101", "appointment_time_date": "10:00-10:30, 16/03/2026"}  # fmt: skip
    saved = caller.params("save_appointment_history", v)
    assert saved["symptoms"] == SYMPTOMS and saved["specialist_id"] == "GP-101"
    step(h, "Call confirm_appointment.", "confirm_appointment",
         caller.params("confirm_appointment", v), True)  # fmt: skip
    msg = caller.params("notify_user", View.from_states(h))["message"]
    assert "Dr. Omar Bello" in msg and "booked" in msg
