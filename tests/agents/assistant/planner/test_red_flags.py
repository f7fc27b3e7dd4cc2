"""The policy's two deterministic ways out before any booking, and "unsure means ask": a 999 red
flag (agents/triage/emergency.py) in any message, and weak or split evidence after a question."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents.assistant.language import EMERGENCY_MESSAGE, EMERGENCY_MESSAGE_WATCH, UNSURE_NOTE
from agents.assistant.planner.policy import Policy
from agents.assistant.planner.types import View
from tests.agents.assistant.planner.test_policy import FOUND, UID, play, run_to_end, traj
from tests.agents.fakes import FakeTriage


def test_a_red_flag_in_the_opener_gets_999_advice_and_nothing_is_booked() -> None:
    steps = play(
        Policy(FakeTriage()),
        "can I book a cardiologist, crushing chest pain for 20 minutes going into my left arm",
        ["yes"],
    )
    assert [tool for tool, _ in steps] == ["store_symptoms", "notify_user"]
    assert steps[1][1]["message"] == EMERGENCY_MESSAGE


def test_a_red_flag_in_an_answer_ends_the_booking_there() -> None:
    tools = run_to_end("I feel off", ["my dad's face has dropped on one side and he's slurring"])
    assert tools == ["get_input_from_user", "store_symptoms", "notify_user"]


def test_someone_with_a_watch_is_offered_its_sos_button() -> None:
    steps = play(
        Policy(FakeTriage(), watch_wearers=frozenset({UID})),
        "my lips and tongue are swelling up after a wasp sting",
        [],
    )
    assert steps[-1] == ("notify_user", {"user_id": UID, "message": EMERGENCY_MESSAGE_WATCH})
    assert "press SOS" in EMERGENCY_MESSAGE_WATCH and "SOS" not in EMERGENCY_MESSAGE


def test_a_look_alike_is_booked_as_usual() -> None:
    tools = run_to_end(
        "I get chest pain on the stairs that goes off when I rest", ["monday", "yes"]
    )
    assert "confirm_appointment" in tools


@dataclass(frozen=True)
class Split:
    specialty: str = "cardiologist"
    vague: bool = False
    confidence: float = 0.34

    @property
    def ranked(self) -> tuple[tuple[str, float], ...]:
        return (("cardiologist", 0.34), ("pulmonologist", 0.32), ("general physician", 0.1))


class SplitTriage(FakeTriage):
    """Evidence split between two specialties, whatever is said."""

    def classify(self, text: str, prior: Mapping[str, float] | None = None) -> Any:
        return Split()

    def follow_up(self, text: str, asked: Sequence[str]) -> str | None:
        return None if asked else "Can you tell me more?"


def test_split_evidence_is_asked_about_once_then_a_gp_said_so() -> None:
    steps = play(
        Policy(SplitTriage()),
        "I get breathless and my heart flutters and I cough at night and I'm tired",
        ["it's all of that really", "monday", "yes"],
    )
    tools = [tool for tool, _ in steps]
    assert tools[:2] == ["get_input_from_user", "retrieve_past_complaints"]
    search = next(p for tool, p in steps if tool == "get_available_specialists")
    assert search["specialization"] == "general physician"
    offer = [p for tool, p in steps if tool == "get_input_from_user"][2]
    assert offer["questions"].startswith(UNSURE_NOTE)
    assert "confirm_appointment" in tools


def test_a_clear_specialist_is_not_told_it_was_unsure() -> None:
    t = traj(
        "chest pain on the stairs",
        ("retrieve_past_complaints", {"user_id": UID, "symptoms": "chest pain"}, []),
        ("get_input_from_user", {}, "monday"),
        ("get_available_specialists", {"specialization": "cardiologist"}, FOUND),
    )
    plan = Policy(FakeTriage()).next(View.from_states(t.states))
    assert UNSURE_NOTE not in plan.params["questions"]
