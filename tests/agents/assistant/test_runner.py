"""The assistant loop: booking needs the user's yes to that exact slot, the model never picks
the tool, and a run with the real local model still books correctly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents.assistant.model_roles import Roles
from agents.assistant.planner.policy import Policy
from agents.assistant.planner.types import CONFIRM, Plan, View
from agents.eval.scenarios import EVAL_NOW, Scenario, SimulatedUser, _build
from agents.llm.engine import LocalModel
from agents.llm.model_path import model_to_load
from agents.triage.classifier import Triage
from agents.triage.lazy import LazyTriage
from gateway.base.clock import ManualClock
from gateway.base.settings import Settings
from tests.harness import TRIAGE_CACHE
from tests.llm_double import ScriptedModel

SC = Scenario.model_validate(
    {
        "id": "t1",
        "utterance": "I get chest pain when I climb the stairs",
        "details": ["Tuesday morning"],
        "accept": True,
        "expect": {"specialization": "cardiologist", "booked": True},
    }
)


class EagerPolicy(Policy):
    """A broken planner that tries to book right after the offer, whatever the answer."""

    def next(self, v: View, **kw: Any) -> Plan:
        plan = super().next(v, **kw)
        if plan.purpose == "store" and any(c.tool == "get_available_specialists" for c in v.calls):
            found = next(c for c in v.calls if c.tool == "get_available_specialists").result
            slot = found["available_slot"]
            a, b = slot["time"].split("-")
            d = slot["date"]
            text = f"{a}-{b}, {d[8:10]}/{d[5:7]}/{d[:4]}"
            if not any(c.tool == CONFIRM for c in v.calls):
                return Plan(
                    CONFIRM, "book anyway", "Confirm.", {"user_id": v.user_id,
                    "specialist_id": found["specialist_id"], "appointment_time_date": text},
                    "confirm", frozenset({CONFIRM}),
                )  # fmt: skip
        return plan


async def test_no_booking_without_the_users_yes(tmp_path: Path, trained_triage: Triage) -> None:
    triage = LazyTriage(TRIAGE_CACHE)
    a = _build(triage, None, tmp_path, ManualClock(EVAL_NOW.timestamp()))
    a.policy = EagerPolicy(triage)
    declined = SC.model_copy(update={"accept": False})
    out = await a.run("evaluser", SC.utterance, SimulatedUser(declined))
    states = out.trajectory["interaction_trajectory"]
    conf = [
        i for i, s in enumerate(states) if s["from"] == "caller" and s["value"]["tool"] == CONFIRM
    ]
    assert conf, "the broken policy did try to book"
    assert states[conf[0] + 1]["value"]["error"]["type"] == "ToolPermissionError"
    assert out.booked is False


async def test_the_model_words_but_never_picks_the_tool(
    tmp_path: Path, trained_triage: Triage
) -> None:
    # Every planner answer names another tool: the schema's enum refuses it (the double
    # validates like the real grammar), so the policy's tool runs anyway.
    model = ScriptedModel(default={"reason": "I will book it now.", "tool": "confirm_appointment"})
    await model.start()
    a = _build(LazyTriage(TRIAGE_CACHE), model, tmp_path, ManualClock(EVAL_NOW.timestamp()))
    out = await a.run("evaluser", SC.utterance, SimulatedUser(SC))
    tools = [
        s["value"]["tool"]
        for s in out.trajectory["interaction_trajectory"]
        if s["from"] == "caller"
    ]
    assert tools[:3] == [
        "retrieve_past_complaints",
        "get_input_from_user",
        "get_available_specialists",
    ]
    assert out.booked and out.specialization == "cardiologist"


@pytest.mark.slow
async def test_real_model_run_books_the_right_specialist(
    tmp_path: Path, trained_triage: Triage
) -> None:
    s = Settings()  # HEALTHGW_MODEL_PATH / _SHA256, else the bundled model
    chosen = model_to_load(s.model_path, s.model_sha256)
    if chosen is None:
        pytest.skip("no local model installed")
    model = LocalModel(chosen.path, sha256=chosen.sha256)
    await model.start()
    try:
        roles = Roles(model, timeout_s=10)
        assert await roles.warm_up()
        a = _build(LazyTriage(TRIAGE_CACHE), model, tmp_path, ManualClock(EVAL_NOW.timestamp()))
        a.roles = roles
        out = await a.run("evaluser", SC.utterance, SimulatedUser(SC))
        assert out.booked and out.specialization == "cardiologist"
        assert sum(s["calls"] for s in roles.summary().values()) > 0
    finally:
        await model.stop()
