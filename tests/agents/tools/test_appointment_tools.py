"""The appointment tools through the registry: validation, confirmation, booking, audit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents.assistant.memory import LongTermMemory
from agents.tools.appointment_tools import AppointmentToolDeps, register_appointment_tools
from agents.tools.registry import (
    REDACTED,
    ToolContext,
    ToolPermissionError,
    ToolRegistry,
    ToolUpstreamError,
    ToolValidationError,
)
from gateway.base.clock import ManualClock
from gateway.base.db import Database
from gateway.household.model import load_household

ROOT = Path(__file__).resolve().parents[3]
NOW = 1_773_651_600.0  # 2026-03-16 09:00 UTC, a Monday


@pytest.fixture
def env(tmp_path: Path) -> Any:
    hh = load_household(ROOT / "examples" / "household.yaml")
    clock = ManualClock(NOW)
    audit: list[dict[str, Any]] = []
    reg = ToolRegistry(audit=audit.append, clock=clock)
    mem = LongTermMemory(Database(tmp_path / "m.db"), clock_now=clock.now)
    register_appointment_tools(
        reg, AppointmentToolDeps(hh, mem, clock, classify=lambda s: "cardiologist")
    )
    return reg, mem, audit


async def yes(tool: str, args: Any) -> bool:
    return True


async def no(tool: str, args: Any) -> bool:
    return False


def ctx(**kw: Any) -> ToolContext:
    return ToolContext(actor="assistant", person="dad", **kw)


async def test_search_and_book_a_free_slot(env: Any) -> None:
    reg, _, audit = env
    found = await reg.call(
        "get_available_specialists",
        {"symptoms": "chest tightness", "specialization": "cardiologist",
         "user_schedule": {"date": "2026-03-17", "time_range": "09:00-12:00"}},
        ctx=ctx(),
    )  # fmt: skip
    assert found["specialist_id"] == "CARD-101"
    assert found["name"] == "Dr. Priya Nair (Cardiologist)"
    assert found["available_slot"] == {"date": "2026-03-17", "time": "09:00-09:30"}  # Tue hours
    args = {
        "user_id": "dad",
        "specialist_id": "CARD-101",
        "appointment_time_date": "09:00-09:30, 17/03/2026",
    }
    assert await reg.call("confirm_appointment", args, ctx=ctx(confirm=yes)) is True
    # The slot is gone for the next search, and nobody else can book it.
    again = await reg.call(
        "get_available_specialists",
        {"symptoms": "x", "specialization": "cardiologist",
         "user_schedule": {"date": "2026-03-17", "time_range": "09:00-12:00"}},
        ctx=ctx(),
    )  # fmt: skip
    assert again["available_slot"]["time"] == "09:30-10:00"
    with pytest.raises(ToolUpstreamError):
        await reg.call("book_appointment", {**args, "user_id": "grandma"},
                       ctx=ToolContext(actor="assistant", person="grandma", confirm=yes))  # fmt: skip
    # PHI is redacted in the audit; every call is there.
    search = next(a for a in audit if a["tool"] == "get_available_specialists")
    assert search["args"]["symptoms"] == REDACTED and search["ok"]
    assert [a["tool"] for a in audit].count("get_available_specialists") == 2


async def test_booking_needs_the_users_confirmation(env: Any) -> None:
    reg, mem, _ = env
    args = {
        "user_id": "dad",
        "specialist_id": "CARD-101",
        "appointment_time_date": "09:00-09:30, 17/03/2026",
    }
    with pytest.raises(ToolPermissionError):
        await reg.call("confirm_appointment", args, ctx=ctx())
    with pytest.raises(ToolPermissionError):
        await reg.call("confirm_appointment", args, ctx=ctx(confirm=no))
    assert mem.taken() == set()


@pytest.mark.parametrize(
    ("tool", "params", "field"),
    [
        (
            "confirm_appointment",
            {"user_id": "dad", "specialist_id": "CARD-101", "appointment_time_date": "tomorrow"},
            "appointment_time_date",
        ),
        (
            "store_symptoms",
            {"user_id": "dad", "symptoms": "x", "timestamp": "yesterday-ish"},
            "timestamp",
        ),
        (
            "get_available_specialists",
            {"symptoms": "x", "specialization": "wizard", "user_schedule": {"date": "2026-03-17"}},
            "specialization",
        ),
        (
            "get_available_specialists",
            {"symptoms": "x", "user_schedule": {"date": "2026-02-30"}},
            "user_schedule.date",
        ),
        ("retrieve_past_complaints", {"user_id": "dad", "symptoms": "x", "extra": 1}, "extra"),
    ],
)
async def test_bad_arguments_name_the_field(
    env: Any, tool: str, params: dict[str, Any], field: str
) -> None:
    reg, _, _ = env
    with pytest.raises(ToolValidationError) as e:
        await reg.call(tool, params, ctx=ctx(confirm=yes))
    assert field in e.value.fields


async def test_a_run_acts_only_for_its_person(env: Any) -> None:
    reg, _, _ = env
    with pytest.raises(ToolPermissionError):
        await reg.call("get_appointment_history", {"user_id": "grandma"}, ctx=ctx())


async def test_past_slots_cannot_be_booked(env: Any) -> None:
    reg, _, _ = env
    args = {
        "user_id": "dad",
        "specialist_id": "CARD-101",
        "appointment_time_date": "09:00-09:30, 01/01/2026",
    }
    with pytest.raises(ToolValidationError):
        await reg.call("confirm_appointment", args, ctx=ctx(confirm=yes))


async def test_memory_tools_round_trip(env: Any) -> None:
    reg, _, _ = env
    c = ctx()
    assert await reg.call(
        "store_symptoms",
        {"user_id": "dad", "symptoms": "knee pain on stairs", "timestamp": "2026-03-01T10:00:00"},
        ctx=c,
    )
    past = await reg.call(
        "retrieve_past_complaints", {"user_id": "dad", "symptoms": "my knee hurts"}, ctx=c
    )
    assert past == [{"date": "2026-03-01", "symptoms": "knee pain on stairs"}]
    assert await reg.call(
        "save_appointment_history",
        {
            "user_id": "dad",
            "symptoms": "knee",
            "specialist_id": "GP-001",
            "appointment_time_date": "10:00-10:15, 18/03/2026",
        },
        ctx=c,
    )
    hist = await reg.call("get_appointment_history", {"user_id": "dad"}, ctx=c)
    assert hist[0]["specialist_id"] == "GP-001" and hist[0]["status"] == "recorded"
    fu = await reg.call(
        "follow_up_with_user",
        {
            "user_id": "dad",
            "current_symptoms": "knee",
            "past_complaints": past,
            "preferred_contact_method": "sms",
        },
        ctx=c,
    )
    assert fu["method"] == "sms" and "check in" in fu["next_steps"]


async def test_search_without_specialization_uses_triage(env: Any) -> None:
    reg, _, _ = env
    found = await reg.call(
        "get_available_specialists",
        {"symptoms": "chest tightness", "user_schedule": {"date": "2026-03-19"}},
        ctx=ctx(),
    )
    assert found["specialist_id"] == "CARD-101"


async def test_asking_needs_a_conversation(env: Any) -> None:
    reg, _, _ = env
    with pytest.raises(ToolPermissionError):
        await reg.call("get_input_from_user", {"user_id": "dad", "questions": "When?"}, ctx=ctx())

    async def ask(q: str, kind: str) -> str:
        return f"{kind}: answer"

    got = await reg.call(
        "get_input_from_user",
        {"user_id": "dad", "questions": "Shall I book it?"},
        ctx=ctx(ask=ask, prompt_id="yes_no"),
    )
    assert got == "yes_no: answer"
