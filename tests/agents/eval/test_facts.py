"""Fact-level scoring: structured values exact, free-text facts the history holds kept,
symptom terms recalled, no repr residue; and the per-step list of the report."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agents.eval.facts import HistoryFacts, fact_scores, kept, missing_terms
from agents.eval.teacher_forced import evaluate

EXAMPLES = Path(__file__).resolve().parents[4] / "shared" / "eval" / "example-trajectories.json"
UID = "QWTR482913"
FOUND = {"specialist_id": "RHEU-204", "name": "Dr. Omar Bello (Rheumatologist)",
         "available_slot": {"date": "2026-03-16", "time": "09:30-10:00"}}  # fmt: skip
HISTORY: list[dict[str, Any]] = [
    {"from": "system", "value": {"user_details": {
        "user_id": UID, "name": "Nadia Haddad", "timestamp": "2026-03-14T18:20:00"}}},
    {"from": "user", "value": "Soft SOS triggered. Abnormal Vitals: {'spo2': 87}"},
    {"from": "planner", "value": {"reason": "Ask Which", "action": "Offer 42 slots."}},
    {"from": "caller", "value": {"tool": "get_available_specialists", "parameters": {}}},
    {"from": "observation", "value": {"result": FOUND}},
]  # fmt: skip


def call(tool: str, **params: Any) -> dict[str, Any]:
    return {"tool": tool, "parameters": params}


def test_history_facts_come_from_names_ids_and_numbers() -> None:
    h = HistoryFacts.of(HISTORY)
    assert {"Omar", "Bello", "Rheumatologist", "Nadia", "Haddad"} <= h.names
    assert "Which" not in h.names  # the planner's words and questions are not facts
    assert {"RHEU-204", UID} <= h.ids
    assert {"9:30", "10:00"} <= h.times and {87.0, 16.0} <= h.values
    assert 42.0 not in h.values
    ref = "Dr. Omar Bello (Rheumatologist) is free on Monday 16 March at 09:30. Ref RHEU-204?"
    assert h.facts_in(ref) == ["RHEU-204", "Bello", "Omar", "Rheumatologist", "9:30", "16"]


def test_facts_are_compared_by_value() -> None:
    assert kept("87", "oxygen at 87 %") and kept("9:30", "at 09:30") and kept("16", "16/03")
    assert not kept("87", "oxygen at 870") and not kept("9:30", "at 19:30")
    assert kept("Bello", "dr. bello") and not kept("Bello", "Bellonia")


def test_a_paraphrase_with_every_fact_passes_and_a_lost_fact_is_named() -> None:
    ref = call("get_input_from_user", user_id=UID,
               questions="Dr. Omar Bello (Rheumatologist) has a slot on Monday 16 March at "
               "09:30. Do you want it?")  # fmt: skip
    good = call("get_input_from_user", user_id=UID,
                questions="Dr. Omar Bello (Rheumatologist) is free on Monday 16 March at "
                "9:30. Shall I book it?")  # fmt: skip
    fs = fact_scores(good, ref, HISTORY)
    assert (fs.facts_total, fs.facts_kept, fs.failed) == (5, 5, [])
    assert fs.structured_checked and fs.structured_ok
    lost = call("get_input_from_user", user_id=UID, questions="Dr. Bello is free on Monday.")
    fs = fact_scores(lost, ref, HISTORY)
    assert fs.facts_kept == 1 and fs.failed == ["facts questions: missing Omar, Rheumatologist, 9:30, 16"]  # fmt: skip


def test_structured_values_are_exact_and_a_wrong_tool_keeps_nothing() -> None:
    ref = call("confirm_appointment", user_id=UID, specialist_id="RHEU-204",
               appointment_time_date="09:30-10:00, 16/03/2026")  # fmt: skip
    wrong = call("confirm_appointment", user_id=UID, specialist_id="RHEU-205",
                 appointment_time_date="09:30-10:00, 16/03/2026")  # fmt: skip
    fs = fact_scores(wrong, ref, HISTORY)
    assert not fs.structured_ok and fs.failed == ['structured specialist_id: "RHEU-205"']
    mixed = call("get_available_specialists", user_id=UID, questions="When?")
    assert not fact_scores(mixed, ref, HISTORY).structured_ok


def test_symptom_terms_are_recalled_by_stem() -> None:
    ref = "fatigue, chills, body aches, sore throat"
    assert missing_terms("fatigued, chills, aches in the body, a sore throat", ref) == (4, [])
    assert missing_terms("fatigue, body aches, sore throat", ref) == (4, ["chills"])
    assert missing_terms("knees ache every morning, stiffness, swollen fingers",
                         "morning knee stiffness, swollen fingers") == (2, [])  # fmt: skip


def test_repr_residue_is_flagged() -> None:
    ref = call("notify_user", user_id=UID, message="Your oxygen is 87%.")
    bad = call("notify_user", user_id=UID, message="Your vitals: {'spo2': 87}")
    fs = fact_scores(bad, ref, HISTORY)
    assert fs.residue and "repr residue in message" in fs.failed
    assert not fact_scores(call("notify_user", user_id=UID, message="87%"), ref, HISTORY).residue


class Mixer:
    """The issue's defect: the named tool with another tool's parameters."""

    def plan(self, history: Sequence[Mapping[str, Any]]) -> Mapping[str, str]:
        return {"reason": "", "action": ""}

    def predict_tool(self, history: Sequence[Mapping[str, Any]]) -> str:
        return "<END>"

    def call(self, history: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
        if "specialist" in str(history[-1]["value"]["action"]):
            return call("get_available_specialists", user_id=UID, questions="When?")
        raise RuntimeError("no")


def test_the_report_lists_every_step_with_what_failed() -> None:
    trajs = json.loads(EXAMPLES.read_text())
    report = evaluate(trajs, Mixer()).to_dict()
    steps = report["steps"]
    n_states = sum(
        s["from"] in ("planner", "caller") for t in trajs for s in t["interaction_trajectory"]
    )
    assert len(steps) == n_states
    search = next(s for s in steps if s["kind"] == "caller" and s["state"] == 9)
    assert search["reference"]["tool"] == "get_available_specialists"
    assert search["prediction"]["parameters"] == {"user_id": UID, "questions": "When?"}
    assert search["failed"][0] == "param names"
    assert any(f.startswith("structured specialization") for f in search["failed"])
    assert any(f.startswith("symptoms symptoms: missing") for f in search["failed"])
    raised = next(s for s in steps if s["kind"] == "caller" and s["state"] == 3)
    assert raised["prediction"] is None and raised["failed"][0] == "error: RuntimeError"
    first_plan = steps[0]
    assert first_plan["failed"] == ["next tool"]
    assert first_plan["reference"]["next_tool"] == "retrieve_past_complaints"
    assert report["overall"]["structured_values_acc"] == 0.0
    assert report["overall"]["facts_kept"] == 0.0
