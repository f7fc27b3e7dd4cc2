from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from agents.assistant.trajectory import END, Trajectory, TrajectoryError, validate_trajectory

# The brief's soft SOS example, verbatim.
SOFT_EXAMPLE: dict[str, Any] = {
    "category": "soft_sos",
    "interaction_trajectory": [
        {"from": "system", "value": {"user_details": {
            "user_id": "LMPK771020", "name": "Tomas Berg", "timestamp": "2026-05-02T03:41:00"}}},
        {"from": "user", "value": "Soft SOS triggered. Abnormal Vitals: "
            "{'spo2': 87, 'heart_rate': 124, 'respiratory_rate': 25}"},
        {"from": "planner", "value": {
            "reason": "Vitals are abnormal; the user must be told which ones and what to do.",
            "action": "Call notify_user with the abnormal vitals and advice."}},
        {"from": "caller", "value": {"tool": "notify_user", "parameters": {
            "user_id": "LMPK771020", "message": "Soft SOS: your oxygen is 87%, heart rate 124 bpm "
            "and breathing rate 25 per minute, all outside your normal range. If you feel unwell, "
            "call emergency services or press SOS."}}},
        {"from": "observation", "value": {"result": True}},
        {"from": "planner", "value": {"reason": "The user has been informed.", "action": "<END>"}},
    ],
}  # fmt: skip


def build_example() -> Trajectory:
    s = SOFT_EXAMPLE["interaction_trajectory"]
    t = Trajectory("LMPK771020", "Tomas Berg", "2026-05-02T03:41:00", category="soft_sos")
    t.user(s[1]["value"])
    t.step(
        s[2]["value"]["reason"],
        s[2]["value"]["action"],
        "notify_user",
        s[3]["value"]["parameters"],
        True,
    )
    t.end("The user has been informed.")
    return t


def test_builder_reproduces_the_brief_example() -> None:
    t = build_example()
    assert t.ended
    assert t.to_dict() == SOFT_EXAMPLE
    validate_trajectory(t.to_dict())
    # JSON-serialisable, and key order matches the example's.
    assert json.loads(json.dumps(t.to_dict())) == SOFT_EXAMPLE
    assert list(t.to_dict()) == ["category", "interaction_trajectory"]


def test_from_dict_round_trip_and_resume() -> None:
    t = Trajectory("u1", "Ann", "2026-01-01T00:00:00", category="hard_sos")
    t.user("SOS button pressed")
    t.step("r1", "a1", "get_location", {}, {"latitude": 1.0, "longitude": 2.0})
    partial = t.to_dict()
    validate_trajectory(partial, complete=False)
    with pytest.raises(TrajectoryError):
        validate_trajectory(partial)
    resumed = Trajectory.from_dict(partial)
    assert resumed.to_dict() == partial
    resumed.step("r2", "a2", "search_ambulance", {"location": {"latitude": 1.0}}, None,
                 error={"type": "NoAmbulanceError", "message": "none"})  # fmt: skip
    resumed.end("Done.")
    validate_trajectory(resumed.to_dict())
    calls = resumed.calls()
    assert [c.tool for c in calls] == ["get_location", "search_ambulance"]
    assert calls[0].ok and calls[0].result == {"latitude": 1.0, "longitude": 2.0}
    assert not calls[1].ok
    assert calls[1].error == {"type": "NoAmbulanceError", "message": "none"}
    assert resumed.to_dict()["interaction_trajectory"][-2]["value"] == {
        "result": None,
        "error": {"type": "NoAmbulanceError", "message": "none"},
    }


def test_builder_is_isolated_from_caller_mutation() -> None:
    t = Trajectory("u1", "Ann", "2026-01-01T00:00:00")
    t.user("hi")
    params = {"location": {"latitude": 1.0}}
    t.step("r", "a", "search_ambulance", params, None)
    params["location"]["latitude"] = 2.0
    assert t.calls()[0].parameters == {"location": {"latitude": 1.0}}
    t.states.clear()
    assert len(t.states) == 5


@pytest.mark.parametrize(
    "build",
    [
        lambda t: t.planner("r", "a"),  # planner before user
        lambda t: (t.user("u"), t.caller("x", {})),  # caller without planner
        lambda t: (t.user("u"), t.planner("r", "a"), t.observation(1)),  # observation w/o caller
        lambda t: (t.user("u"), t.end("done"), t.planner("r", "a")),  # anything after END
        lambda t: (t.user("u"), t.user("again")),
    ],
)
def test_builder_refuses_out_of_order_states(build: Any) -> None:
    t = Trajectory("u1", "Ann", "2026-01-01T00:00:00")
    with pytest.raises(TrajectoryError):
        build(t)


def test_non_json_values_are_refused() -> None:
    t = Trajectory("u1", "Ann", "2026-01-01T00:00:00")
    t.user("u")
    t.planner("r", "a")
    with pytest.raises(TrajectoryError):
        t.caller("x", {"when": object()})


def _mutated(fn: Any) -> dict[str, Any]:
    d = copy.deepcopy(SOFT_EXAMPLE)
    fn(d["interaction_trajectory"])
    return d


@pytest.mark.parametrize(
    "bad",
    [
        {"interaction_trajectory": []},
        {"no": "states"},
        _mutated(lambda s: s.pop(0)),  # no system
        _mutated(lambda s: s.pop(1)),  # no user
        _mutated(lambda s: s.pop()),  # no final <END>
        _mutated(lambda s: s.pop(3)),  # planner followed by observation
        _mutated(lambda s: s.append({"from": "user", "value": "more"})),  # after <END>
        _mutated(lambda s: s.insert(5, {"from": "planner", "value": {"reason": "x", "action": END}})
                 or s.insert(6, {"from": "caller", "value": {"tool": "t", "parameters": {}}})),
        _mutated(lambda s: s[0]["value"].pop("user_details")),
        _mutated(lambda s: s[2]["value"].pop("action")),
        _mutated(lambda s: s[3]["value"].update(parameters="x")),
        _mutated(lambda s: s[4].update(value={"answer": True})),
        _mutated(lambda s: s[4].update(extra=1)),
        _mutated(lambda s: s[1].update({"from": "assistant"})),
    ],
)  # fmt: skip
def test_validate_rejects_broken_trajectories(bad: dict[str, Any]) -> None:
    with pytest.raises(TrajectoryError):
        validate_trajectory(bad)


def test_validate_accepts_the_example() -> None:
    validate_trajectory(SOFT_EXAMPLE)
    validate_trajectory(SOFT_EXAMPLE, complete=False)
