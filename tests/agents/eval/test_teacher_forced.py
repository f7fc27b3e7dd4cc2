from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from agents.assistant.trajectory import END
from agents.eval.teacher_forced import (
    UNCATEGORISED,
    CutError,
    Predictor,
    Report,
    TrajectoryFileError,
    evaluate,
    format_table,
    load_trajectories,
)

EXAMPLES = Path("/work/shared/eval/example-trajectories.json")

RATES = (
    "planner_next_tool_acc",
    "planner_rouge_l",
    "tool_acc",
    "param_acc",
    "values_acc",
    "values_acc_lenient",
    "caller_rouge_l",
    "trajectories_fully_correct",
    "trajectories_fully_correct_lenient",
)


def _state(kind: str, value: Any) -> dict[str, Any]:
    return {"from": kind, "value": value}


def _soft() -> dict[str, Any]:
    return {
        "category": "soft_sos",
        "interaction_trajectory": [
            _state("system", {"user_details": {
                "user_id": "LMPK771020", "name": "Tomas Berg", "timestamp": "2026-05-02T03:41:00"}}),
            _state("user", "Soft SOS triggered. Abnormal Vitals: {'spo2': 87, 'heart_rate': 124}"),
            _state("planner", {"reason": "Vitals are abnormal; tell the user.",
                               "action": "Call notify_user with the abnormal vitals and advice."}),
            _state("caller", {"tool": "notify_user", "parameters": {
                "user_id": "LMPK771020", "message": "Soft SOS: your oxygen is 87% and heart rate "
                "124 bpm. If you feel unwell, call emergency services or press SOS."}}),
            _state("observation", {"result": True}),
            _state("planner", {"reason": "The user has been informed.", "action": END}),
        ],
    }  # fmt: skip


def _negative() -> dict[str, Any]:
    return {
        "category": "negative",
        "interaction_trajectory": [
            _state("system", {"user_details": {
                "user_id": "QWTR482913", "name": "Nadia Haddad", "timestamp": "2026-03-14T18:20:00"}}),
            _state("user", "My knees ache every morning."),
            _state("planner", {"reason": "Check earlier complaints.",
                               "action": "Use retrieve_past_complaints."}),
            _state("caller", {"tool": "retrieve_past_complaints", "parameters": {
                "user_id": "QWTR482913", "symptoms": "morning knee ache"}}),
            _state("observation", {"result": []}),
            _state("planner", {"reason": "Ask for a time.", "action": "Ask the user."}),
            _state("caller", {"tool": "get_input_from_user", "parameters": {
                "user_id": "QWTR482913", "questions": "Which day and time would suit you?"}}),
            _state("observation", {"result": "No, not right now"}),
            _state("planner", {"reason": "Declined.", "action": END}),
        ],
    }  # fmt: skip


def _examples() -> list[dict[str, Any]]:
    """The shared examples if present, else the inline copies (same shape)."""
    if EXAMPLES.exists():
        return load_trajectories(EXAMPLES)
    return [_negative(), _soft()]


class Oracle:
    """Answers every cut from the full reference, found by looking up the history."""

    def __init__(self, trajectories: Sequence[Mapping[str, Any]]) -> None:
        self.next: dict[str, tuple[list[Mapping[str, Any]], int]] = {}
        for d in trajectories:
            states = d["interaction_trajectory"]
            for i in range(len(states)):
                self.next[self._key(states[:i])] = (states, i)

    @staticmethod
    def _key(history: Sequence[Mapping[str, Any]]) -> str:
        return json.dumps(list(history), sort_keys=True)

    def _at(self, history: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], int]:
        return self.next[self._key(history)]

    def plan(self, history: Sequence[Mapping[str, Any]]) -> Mapping[str, str]:
        states, i = self._at(history)
        assert states[i]["from"] == "planner"
        return dict(states[i]["value"])

    def predict_tool(self, history: Sequence[Mapping[str, Any]]) -> str:
        states, i = self._at(history)
        if states[i]["value"]["action"] == END:
            return END
        return str(states[i + 1]["value"]["tool"])

    def call(self, history: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
        states, i = self._at(history)
        assert states[i]["from"] == "caller"
        assert history[-1]["from"] == "planner"
        return copy.deepcopy(dict(states[i]["value"]))


class AlwaysWrong:
    def plan(self, history: Sequence[Mapping[str, Any]]) -> Mapping[str, str]:
        return {"reason": "zzz", "action": "qqq"}

    def predict_tool(self, history: Sequence[Mapping[str, Any]]) -> str:
        return "no_such_tool"

    def call(self, history: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
        return {"tool": "no_such_tool", "parameters": {"bogus": "zzz"}}


class Flaky(Oracle):
    """The oracle, except that it raises on the second caller cut of each trajectory and on
    every planner cut after an observation whose result is an empty list."""

    def call(self, history: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
        if sum(s["from"] == "caller" for s in history) == 1:
            raise RuntimeError("model crashed")
        return super().call(history)

    def predict_tool(self, history: Sequence[Mapping[str, Any]]) -> str:
        if history[-1]["from"] == "observation" and history[-1]["value"]["result"] == []:
            raise KeyError("boom")
        return super().predict_tool(history)


def test_protocol_is_satisfied() -> None:
    preds: list[Predictor] = [Oracle([]), AlwaysWrong(), Flaky([])]
    assert len(preds) == 3


# --- evaluate ---------------------------------------------------------------------------------


def test_oracle_scores_one_everywhere() -> None:
    trajs = _examples()
    report = evaluate(trajs, Oracle(trajs))
    d = report.to_dict()
    assert d["n_trajectories"] == 2
    assert d["errors"] == []
    assert set(d["per_category"]) == {"negative", "soft_sos"}
    for block in [d["overall"], *d["per_category"].values()]:
        for k in RATES:
            assert block[k] == 1.0, k
    n_planner = sum(s["from"] == "planner" for t in trajs for s in t["interaction_trajectory"])
    n_caller = sum(s["from"] == "caller" for t in trajs for s in t["interaction_trajectory"])
    assert d["overall"]["planner_steps"] == n_planner
    assert d["overall"]["caller_steps"] == n_caller
    assert d["per_category"]["soft_sos"]["planner_steps"] == 2
    assert d["per_category"]["soft_sos"]["caller_steps"] == 1
    json.dumps(d)  # plain JSON


def test_inline_examples_oracle_too() -> None:
    trajs = [_negative(), _soft()]
    d = evaluate(trajs, Oracle(trajs)).to_dict()
    assert all(d["overall"][k] == 1.0 for k in RATES)


def test_always_wrong_scores_zero() -> None:
    trajs = _examples()
    d = evaluate(trajs, AlwaysWrong()).to_dict()
    assert d["errors"] == []
    for block in [d["overall"], *d["per_category"].values()]:
        for k in RATES:
            if k == "caller_rouge_l":
                # The canonical JSON shares only the "tool"/"parameters" keys.
                assert block[k] < 0.3
            else:
                assert block[k] == 0.0, k


def test_predictor_errors_are_counted_wrong_and_the_run_completes() -> None:
    trajs = _examples()
    seen: list[tuple[CutError, Exception]] = []
    report = evaluate(trajs, Flaky(trajs), on_error=lambda e, exc: seen.append((e, exc)))
    d = report.to_dict()
    # The negative example (index 0) has several caller cuts; the second one raised.
    call_errors = [e for e in d["errors"] if e["stage"] == "call"]
    assert call_errors and all(e["trajectory"] == 0 for e in call_errors)
    assert call_errors[0]["error_type"] == "RuntimeError"
    assert call_errors[0]["category"] == "negative"
    states = trajs[0]["interaction_trajectory"]
    assert states[call_errors[0]["state"]]["from"] == "caller"
    tool_errors = [e for e in d["errors"] if e["stage"] == "predict_tool"]
    assert tool_errors and tool_errors[0]["error_type"] == "KeyError"
    assert len(seen) == len(d["errors"])
    assert isinstance(seen[0][1], Exception)

    neg = d["per_category"]["negative"]
    assert neg["tool_acc"] == pytest.approx(1 - 1 / neg["caller_steps"])
    assert neg["planner_next_tool_acc"] == pytest.approx(1 - 1 / neg["planner_steps"])
    assert neg["planner_rouge_l"] == 1.0  # plan() itself never raised
    assert neg["trajectories_fully_correct"] == 0.0
    # The soft SOS trajectory has one caller cut and no empty observation: untouched.
    soft = d["per_category"]["soft_sos"]
    assert all(soft[k] == 1.0 for k in RATES)
    assert d["overall"]["trajectories_fully_correct"] == 0.5
    assert "RuntimeError" in format_table(report)


def test_on_error_may_reraise() -> None:
    trajs = _examples()

    def stop(_e: CutError, exc: Exception) -> None:
        raise exc

    with pytest.raises(KeyError):  # the first failing cut: predict_tool after "[]"
        evaluate(trajs, Flaky(trajs), on_error=stop)


def test_malformed_outputs_count_wrong() -> None:
    class Odd(Oracle):
        def plan(self, history: Sequence[Mapping[str, Any]]) -> Mapping[str, str]:
            return None  # type: ignore[return-value]

        def call(self, history: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
            return {"tool": super().call(history)["tool"]}  # no parameters

    trajs = [_soft()]
    report = evaluate(trajs, Odd(trajs))
    d = report.to_dict()["overall"]
    assert d["planner_rouge_l"] == 0.0
    assert d["tool_acc"] == 1.0 and d["param_acc"] == 0.0 and d["values_acc"] == 0.0
    assert [e.stage for e in report.errors] == ["plan", "plan"]


def test_predictor_cannot_alter_references() -> None:
    trajs = [_soft()]
    before = copy.deepcopy(trajs)

    class Vandal(Oracle):
        def predict_tool(self, history: Sequence[Mapping[str, Any]]) -> str:
            tool = super().predict_tool(history)
            history[0]["value"]["user_details"]["name"] = "changed"
            return tool

    d = evaluate(trajs, Vandal(trajs)).to_dict()
    assert trajs == before
    assert d["overall"]["planner_next_tool_acc"] == 1.0


def test_uncategorised_and_empty_category() -> None:
    a, b = _soft(), _soft()
    del a["category"]
    b["category"] = ""
    d = evaluate([a, b], Oracle([a])).to_dict()
    assert list(d["per_category"]) == [UNCATEGORISED]
    assert d["per_category"][UNCATEGORISED]["n_trajectories"] == 2


def test_evaluate_rejects_malformed_references() -> None:
    bad = _soft()
    bad["interaction_trajectory"] = bad["interaction_trajectory"][:-1]  # no <END>
    with pytest.raises(TrajectoryFileError, match="item 1"):
        evaluate([_soft(), bad], AlwaysWrong())


def test_empty_report() -> None:
    report = evaluate([], AlwaysWrong())
    d = report.to_dict()
    assert d["n_trajectories"] == 0 and d["per_category"] == {}
    assert d["overall"]["tool_acc"] is None
    assert "overall" in format_table(report)


def test_format_table() -> None:
    trajs = _examples()
    text = format_table(evaluate(trajs, Oracle(trajs)))
    lines = text.splitlines()
    assert lines[0].split()[0] == "category"
    assert any(line.startswith("negative") for line in lines)
    assert any(line.startswith("soft_sos") for line in lines)
    assert lines[-1].startswith("overall") and "1.000" in lines[-1]
    assert isinstance(Report(), Report)


# --- loading ----------------------------------------------------------------------------------


def test_load_json_list(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_text(json.dumps([_negative(), _soft()], indent=1), encoding="utf-8")
    got = load_trajectories(p)
    assert [t["category"] for t in got] == ["negative", "soft_sos"]


def test_load_single_object(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_text(json.dumps(_soft(), indent=2), encoding="utf-8")
    assert load_trajectories(p) == [_soft()]


def test_load_json_lines(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_text(f"{json.dumps(_negative())}\n\n{json.dumps(_soft())}\n", encoding="utf-8")
    got = load_trajectories(p)
    assert [t["category"] for t in got] == ["negative", "soft_sos"]


def test_load_shared_examples() -> None:
    if not EXAMPLES.exists():
        pytest.skip("shared examples not present")
    got = load_trajectories(EXAMPLES)
    assert [t["category"] for t in got] == ["negative", "soft_sos"]


def test_malformed_list_names_the_index(tmp_path: Path) -> None:
    no_end = _soft()
    no_end["interaction_trajectory"].pop()
    bad_caller = _soft()
    bad_caller["interaction_trajectory"][3]["value"]["parameters"] = "oops"
    p = tmp_path / "t.json"
    p.write_text(json.dumps([_soft(), no_end, 42, bad_caller]), encoding="utf-8")
    with pytest.raises(TrajectoryFileError) as info:
        load_trajectories(p)
    msg = str(info.value)
    assert "item 1: the last state must be a planner with action <END>" in msg
    assert "item 2: must be an object" in msg
    assert "item 3: state 3: malformed caller value" in msg
    assert "item 0" not in msg
    assert len(info.value.problems) == 3
    assert isinstance(info.value, ValueError)


def test_malformed_json_lines_name_index_and_line(tmp_path: Path) -> None:
    bad = _soft()
    bad["category"] = 7
    p = tmp_path / "t.jsonl"
    p.write_text(
        "\n".join([json.dumps(_soft()), "", "{not json", json.dumps(bad)]) + "\n",
        encoding="utf-8",
    )
    with pytest.raises(TrajectoryFileError) as info:
        load_trajectories(p)
    msg = str(info.value)
    assert "item 1 (line 3): invalid JSON" in msg
    assert "item 2 (line 4): category must be a string" in msg


def test_at_most_ten_problems_are_listed(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_text(json.dumps([{"interaction_trajectory": []}] * 15), encoding="utf-8")
    with pytest.raises(TrajectoryFileError) as info:
        load_trajectories(p)
    msg = str(info.value)
    assert "item 9:" in msg and "item 10:" not in msg
    assert "and 5 more" in msg
    assert len(info.value.problems) == 15


@pytest.mark.parametrize("text", ["", "  \n", "[]", "42"])
def test_empty_or_wrong_top_level(tmp_path: Path, text: str) -> None:
    p = tmp_path / "t.json"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(TrajectoryFileError):
        load_trajectories(p)
