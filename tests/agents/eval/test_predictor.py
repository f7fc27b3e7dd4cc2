"""Teacher-forced evaluation of the live agent's policy and playbooks on generated
trajectories (all seven categories) and on the public examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.assistant.planner.policy import Policy
from agents.assistant.trajectory import validate_trajectory
from agents.eval.generate import CATEGORIES, generate
from agents.eval.predictor import AgentPredictor, flow_of, named_tool
from agents.eval.teacher_forced import evaluate
from agents.triage.classifier import Triage
from agents.triage.lazy import LazyTriage
from tests.harness import TRIAGE_CACHE

EXAMPLES = Path(__file__).resolve().parents[4] / "shared" / "eval" / "example-trajectories.json"


@pytest.fixture(scope="module")
def predictor(trained_triage: Triage) -> AgentPredictor:
    return AgentPredictor(Policy(LazyTriage(TRIAGE_CACHE)))


def test_generator_is_valid_varied_and_reproducible() -> None:
    a = generate(21, seed=5)
    assert a == generate(21, seed=5) and a != generate(21, seed=6)
    assert {t["category"] for t in a} == set(CATEGORIES)
    for t in a:
        validate_trajectory(t)
        tools = t["interaction_trajectory"][0]["value"]["tools"]
        assert len(tools) == len(set(tools)) >= 14
    names = {t["interaction_trajectory"][0]["value"]["user_details"]["name"] for t in a}
    assert len(names) > 10


def test_generated_trajectories_meet_the_targets(predictor: AgentPredictor) -> None:
    report = evaluate(generate(70, seed=11), predictor).to_dict()
    overall = report["overall"]
    assert report["errors"] == []
    assert overall["tool_acc"] == 1.0
    # The policy may ask one more clarifying question than the scripted reference when the
    # triage is still unsure after the first answer.
    assert overall["planner_next_tool_acc"] >= 0.99
    assert overall["values_acc_lenient"] >= 0.9
    # What the words mean, whatever the wording: the targets.
    assert overall["structured_values_acc"] == 1.0
    assert overall["facts_total"] > 100 and overall["facts_kept"] >= 0.95
    assert overall["symptom_recall"] >= 0.95
    assert overall["repr_residue_steps"] == 0
    for cat in ("hard_sos", "end_sos", "soft_sos"):
        block = report["per_category"][cat]
        assert block["tool_acc"] == 1.0 and block["values_acc"] == 1.0, cat


@pytest.mark.skipif(not EXAMPLES.exists(), reason="../shared/eval is not beside the repo")
def test_public_examples_pick_the_right_tools(predictor: AgentPredictor) -> None:
    report = evaluate(json.loads(EXAMPLES.read_text()), predictor).to_dict()
    assert report["overall"]["tool_acc"] == 1.0
    assert report["overall"]["planner_next_tool_acc"] == 1.0
    assert report["overall"]["structured_values_acc"] == 1.0
    assert report["overall"]["facts_kept"] >= 0.95
    assert report["overall"]["symptom_recall"] == 1.0
    assert report["overall"]["repr_residue_steps"] == 0
    # The condensed list, not the raw sentence, is what the first symptom tool gets.
    first = next(s for s in report["steps"] if s["state"] == 3 and s["trajectory"] == 0)
    said = first["prediction"]["parameters"]["symptoms"]
    assert "swollen fingers" in said and "for a long time" not in said


def test_flow_and_action_reading() -> None:
    assert flow_of("Soft SOS triggered. Abnormal Vitals: {'spo2': 87}") == "soft_sos"
    assert flow_of("Soft SOS unanswered: escalated to hard SOS") == "hard_sos"
    assert flow_of("SOS button pressed") == "hard_sos"
    assert flow_of("End SOS") == "end_sos"
    assert flow_of("I have a cough") == "appointment"
    assert named_tool("Use retrieve_past_complaints for similar joint complaints.") == (
        "retrieve_past_complaints"
    )
    assert named_tool("Offer the slot to the user.") == "get_input_from_user"
    assert named_tool("Save the appointment history.") == "save_appointment_history"
    assert named_tool("<END>") == "<END>"
