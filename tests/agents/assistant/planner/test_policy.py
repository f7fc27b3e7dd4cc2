"""The appointment policy's branches, driven through trajectories (what it sees live)."""

from __future__ import annotations

from typing import Any

from agents.assistant.planner.policy import Policy
from agents.assistant.planner.types import View
from agents.assistant.trajectory import END, Trajectory
from tests.agents.fakes import FakeResult, FakeTriage

UID = "ann"
TS = "2026-03-14T18:20:00"
FOUND = {
    "specialist_id": "CARD-1",
    "name": "Dr. Nair (Cardiologist)",
    "available_slot": {"date": "2026-03-16", "time": "10:00-10:30"},
}


def traj(text: str, *calls: tuple[str, dict[str, Any], Any]) -> Trajectory:
    t = Trajectory(UID, "Ann", TS)
    t.user(text)
    for tool, params, result in calls:
        if isinstance(result, Exception):
            t.step(
                "r", "a", tool, params, None, error={"type": type(result).__name__, "message": ""}
            )
        else:
            t.step("r", "a", tool, params, result)
    return t


def nxt(t: Trajectory, policy: Policy | None = None) -> Any:
    return (policy or Policy(FakeTriage())).next(View.from_states(t.states))


def run_to_end(text: str, answers: list[str], policy: Policy | None = None) -> list[str]:
    """Play the policy with canned observations; the tools it called, in order."""
    return [tool for tool, _ in play(policy or Policy(FakeTriage()), text, answers)]


def play(policy: Policy, text: str, answers: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """(tool, parameters) of every step to the end, with canned observations."""
    t = Trajectory(UID, "Ann", TS)
    t.user(text)
    steps: list[tuple[str, dict[str, Any]]] = []
    for _ in range(30):
        plan = policy.next(View.from_states(t.states))
        if plan.tool == END:
            t.end(plan.reason)
            return steps
        steps.append((plan.tool, dict(plan.params)))
        result: Any = True
        if plan.tool == "get_input_from_user":
            result = answers.pop(0) if answers else "I don't know"
        elif plan.tool == "retrieve_past_complaints":
            result = []
        elif plan.tool == "get_available_specialists":
            result = FOUND
        t.step(plan.reason, plan.action, plan.tool, plan.params, result)
    raise AssertionError("no <END>")


def test_general_flow_books_in_the_briefs_order() -> None:
    assert run_to_end("I get chest pain on the stairs", ["tomorrow morning", "yes please"]) == [
        "retrieve_past_complaints",
        "get_input_from_user",
        "get_available_specialists",
        "get_input_from_user",
        "confirm_appointment",
        "save_appointment_history",
        "store_symptoms",
        "notify_user",
    ]


def test_negative_flow_stores_and_notifies_without_booking() -> None:
    tools = run_to_end("I get chest pain on the stairs", ["tomorrow", "no thanks"])
    assert tools[-2:] == ["store_symptoms", "notify_user"]
    assert "confirm_appointment" not in tools and "save_appointment_history" not in tools


def test_vague_complaint_gets_follow_up_questions_first() -> None:
    tools = run_to_end("I am not feeling well", ["my knee is swollen", "monday", "yes"])
    assert tools[:2] == ["get_input_from_user", "retrieve_past_complaints"]
    assert "confirm_appointment" in tools


def test_follow_ups_are_bounded_and_stop_at_dont_know() -> None:
    p = Policy(FakeTriage(), max_follow_ups=2)
    tools = run_to_end("I am not feeling well", ["hmm", "still hmm", "monday", "yes"], p)
    assert tools[:3] == ["get_input_from_user", "get_input_from_user", "retrieve_past_complaints"]
    tools = run_to_end("I am not feeling well", ["I don't know", "monday", "yes"], p)
    assert tools[:2] == ["get_input_from_user", "retrieve_past_complaints"]


def test_search_uses_specialty_schedule_and_the_same_symptoms() -> None:
    t = traj(
        "I get chest pain on the stairs",
        ("retrieve_past_complaints", {"user_id": UID, "symptoms": "chest pain on stairs"}, []),
        (
            "get_input_from_user",
            {"user_id": UID, "questions": "When?"},
            "Any weekday morning next week",
        ),
    )
    plan = nxt(t)
    assert plan.tool == "get_available_specialists"
    assert plan.allowed == frozenset({"get_available_specialists"})
    assert plan.params == {
        "symptoms": "chest pain on stairs",  # repeated exactly from the earlier call
        "specialization": "cardiologist",
        "user_schedule": {"date": "2026-03-16", "time_range": "09:00-12:00"},
    }


def test_offer_then_confirm_with_the_exact_slot() -> None:
    base = [
        ("retrieve_past_complaints", {"user_id": UID, "symptoms": "chest pain"}, []),
        ("get_input_from_user", {"user_id": UID, "questions": "When?"}, "monday"),
        ("get_available_specialists", {"symptoms": "chest pain"}, FOUND),
    ]
    offer = nxt(traj("chest pain", *base))
    assert offer.tool == "get_input_from_user" and offer.answer_type == "yes_no"
    assert (
        "Dr. Nair (Cardiologist)" in offer.params["questions"]
        and "10:00" in offer.params["questions"]
    )
    confirm = nxt(traj("chest pain", *base, ("get_input_from_user", {}, "yes")))
    assert confirm.tool == "confirm_appointment"
    assert confirm.params == {
        "user_id": UID,
        "specialist_id": "CARD-1",
        "appointment_time_date": "10:00-10:30, 16/03/2026",
    }


def test_unclear_answer_is_asked_again_once_then_treated_as_no() -> None:
    base = [
        ("retrieve_past_complaints", {"user_id": UID, "symptoms": "chest pain"}, []),
        ("get_input_from_user", {}, "monday"),
        ("get_available_specialists", {}, FOUND),
        ("get_input_from_user", {}, "what was the time?"),
    ]
    again = nxt(traj("chest pain", *base))
    assert again.purpose == "reoffer" and again.answer_type == "yes_no"
    after = nxt(traj("chest pain", *base, ("get_input_from_user", {}, "hmm")))
    assert after.tool == "store_symptoms"


def test_taken_slot_searches_again() -> None:
    t = traj(
        "chest pain",
        ("retrieve_past_complaints", {"user_id": UID, "symptoms": "chest pain"}, []),
        ("get_input_from_user", {}, "monday"),
        ("get_available_specialists", {"specialization": "cardiologist"}, FOUND),
        ("get_input_from_user", {}, "yes"),
        ("confirm_appointment", {}, RuntimeError("taken")),
    )
    plan = nxt(t)
    assert (
        plan.tool == "get_available_specialists" and plan.params["specialization"] == "cardiologist"
    )


def test_no_specialist_falls_back_to_a_gp_then_gives_up_kindly() -> None:
    calls: list[tuple[str, dict[str, Any], Any]] = [
        ("retrieve_past_complaints", {"user_id": UID, "symptoms": "chest pain"}, []),
        ("get_input_from_user", {}, "monday"),
        ("get_available_specialists", {"specialization": "cardiologist"}, RuntimeError()),
    ]
    plan = nxt(traj("chest pain", *calls))
    assert plan.params["specialization"] == "general physician"
    calls.append(
        ("get_available_specialists", {"specialization": "general physician"}, RuntimeError())
    )
    assert nxt(traj("chest pain", *calls)).tool == "store_symptoms"
    calls.append(("store_symptoms", {}, True))
    final = nxt(traj("chest pain", *calls))
    assert final.tool == "notify_user" and "could not find" in final.params["message"]


def test_no_answer_wraps_up() -> None:
    t = traj(
        "chest pain",
        ("retrieve_past_complaints", {"user_id": UID, "symptoms": "chest pain"}, []),
        ("get_input_from_user", {}, RuntimeError("no answer")),
    )
    assert nxt(t).tool == "store_symptoms"


def test_past_complaints_are_a_prior() -> None:
    fake = FakeTriage()
    t = traj(
        "I feel off",  # vague on its own
        ("get_input_from_user", {}, "I don't know"),
        ("retrieve_past_complaints", {"user_id": UID, "symptoms": "feel off"},
         [{"date": "2026-01-01", "symptoms": "itchy rash on my arms"}]),
        ("get_input_from_user", {}, "monday"),
    )  # fmt: skip
    plan = nxt(t, Policy(fake))
    # The prior is consulted, but it never turns a complaint that stayed vague into a
    # specialist: unsure means a general physician (agents/assistant/planner/triage.py, UNSURE_BELOW).
    assert {"dermatologist": 1.0} in fake.priors
    assert plan.params["specialization"] == "general physician"
    assert "do not point clearly" in plan.reason


def test_every_plan_allows_exactly_its_tool() -> None:
    p = Policy(FakeTriage())
    t = Trajectory(UID, "Ann", TS)
    t.user("chest pain")
    plan = p.next(View.from_states(t.states))
    assert plan.allowed == frozenset({plan.tool})


def _crisis_run(text: str, answers: list[str]) -> tuple[list[str], list[Any]]:
    p = Policy(FakeTriage())
    t = Trajectory(UID, "Ann", TS)
    t.user(text)
    plans = []
    for _ in range(30):
        plan = p.next(View.from_states(t.states))
        plans.append(plan)
        if plan.tool == END:
            return [x.tool for x in plans[:-1]], plans
        result: Any = True
        if plan.tool == "get_input_from_user":
            result = answers.pop(0) if answers else "I don't know"
        elif plan.tool == "retrieve_past_complaints":
            result = []
        elif plan.tool == "get_available_specialists":
            result = FOUND
        t.step(plan.reason, plan.action, plan.tool, plan.params, result)
    raise AssertionError("no <END>")


def test_crisis_wording_in_the_opener_skips_triage_and_booking() -> None:
    from agents.assistant.language import CRISIS_MESSAGE

    tools, plans = _crisis_run("my chest hurts and I keep thinking about ending my life", [])
    assert tools == ["store_symptoms", "notify_user"]
    assert plans[1].params["message"] == CRISIS_MESSAGE
    assert all(p.specialization is None for p in plans)


def test_crisis_wording_in_any_later_answer_stops_the_booking() -> None:
    # In a clarifying answer ...
    tools, _ = _crisis_run("I am not feeling well", ["I'd be better off dead honestly"])
    assert tools == ["get_input_from_user", "store_symptoms", "notify_user"]
    # ... and even in the answer to the offer: no confirmation follows.
    tools, plans = _crisis_run(
        "I get chest pain on the stairs", ["tomorrow", "yes, but honestly I just want to die"]
    )
    assert "confirm_appointment" not in tools
    assert tools[-2:] == ["store_symptoms", "notify_user"]
    assert "suicide or self-harm" in plans[-3].reason


def test_a_denied_crisis_is_a_normal_booking() -> None:
    tools = run_to_end("I'm not suicidal, I just have a rash", ["monday", "yes"])
    assert "confirm_appointment" in tools


def test_a_short_opener_sent_to_a_general_physician_gets_one_question_first() -> None:
    # FakeTriage sends anything without its keywords to a general physician, not vague here.
    class Sure(FakeTriage):  # confident (0.9) and never vague
        def classify(self, text: str, prior: Any = None) -> Any:
            return FakeResult(super().classify(text, prior).specialty, False)

    p = Policy(Sure())
    tools = run_to_end(
        "I feel tired all the time", ["I'm always cold and my rash", "monday", "yes"], p
    )
    assert tools[:2] == ["get_input_from_user", "retrieve_past_complaints"]
    # A long opener going to a general physician, or a short one to a specialist: no question.
    long = "I have had a cold since Friday with a runny nose and a bit of a sore throat"
    assert run_to_end(long, ["monday", "yes"], p)[0] == "retrieve_past_complaints"
    assert run_to_end("my chest hurts on the stairs", ["monday", "yes"], p)[0] == (
        "retrieve_past_complaints"
    )
