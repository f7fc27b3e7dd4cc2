"""Teacher-forced trajectory evaluation, as the brief describes the paper's.

Each reference trajectory is cut before every planner state and before every caller state;
the states before the cut are the predictor's input (the reference history, never the
predictor's own earlier output).

Planner cuts: next-tool accuracy (the tool of the caller state that follows the reference
planner state, or `<END>`) and ROUGE-L of "reason action". Caller cuts: ToolAcc, ParamAcc,
ValuesAcc (exact and lenient) and ROUGE-L of the canonical call JSON (see `metrics`), and
the fact-level checks of `facts` (structured values exact, facts kept in free text, symptom
terms recalled, no repr residue). `Report.steps` lists every cut: reference, prediction and
the checks it failed. A predictor that raises on a cut scores that cut as wrong; the run
always completes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Protocol

from agents.assistant.trajectory import END
from agents.eval.facts import FactScore, fact_scores
from agents.eval.loading import MAX_PROBLEMS, TrajectoryFileError, check_item, load_trajectories
from agents.eval.metrics import CallerScore, caller_scores, rouge_l

__all__ = ["MAX_PROBLEMS", "TrajectoryFileError", "evaluate", "load_trajectories"]

UNCATEGORISED = "uncategorised"

Stage = Literal["predict_tool", "plan", "call"]


class Predictor(Protocol):
    def plan(self, history: Sequence[Mapping[str, Any]]) -> Mapping[str, str]:
        """{"reason", "action"} of the planner state that follows `history`."""
        ...

    def predict_tool(self, history: Sequence[Mapping[str, Any]]) -> str:
        """The tool the planner's next step will call, or "<END>"."""
        ...

    def call(self, history: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
        """{"tool", "parameters"}; `history` ends with the reference planner state."""
        ...


# --- the report -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CutError:
    """A predictor call that raised; its cut counts as wrong."""

    trajectory: int  # index into the evaluated list
    state: int  # index of the reference state the cut is before
    stage: Stage
    error_type: str
    category: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "trajectory": self.trajectory,
            "state": self.state,
            "stage": self.stage,
            "error_type": self.error_type,
            "category": self.category,
        }


@dataclass(slots=True)
class Metrics:
    """Running totals for one group of trajectories; `to_dict` gives the rates."""

    n_trajectories: int = 0
    fully_correct: int = 0
    fully_correct_lenient: int = 0
    planner_steps: int = 0
    next_tool_ok: int = 0
    planner_rouge_sum: float = 0.0
    caller_steps: int = 0
    tool_ok: int = 0
    param_ok: int = 0
    values_ok: int = 0
    values_ok_lenient: int = 0
    caller_rouge_sum: float = 0.0
    structured_steps: int = 0
    structured_ok: int = 0
    facts_total: int = 0
    facts_kept: int = 0
    symptom_terms: int = 0
    symptom_terms_recalled: int = 0
    repr_residue_steps: int = 0

    def add(self, other: Metrics) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def to_dict(self) -> dict[str, Any]:
        def rate(x: float, n: int) -> float | None:
            return x / n if n else None

        return {
            "n_trajectories": self.n_trajectories,
            "planner_steps": self.planner_steps,
            "planner_next_tool_acc": rate(self.next_tool_ok, self.planner_steps),
            "planner_rouge_l": rate(self.planner_rouge_sum, self.planner_steps),
            "caller_steps": self.caller_steps,
            "tool_acc": rate(self.tool_ok, self.caller_steps),
            "param_acc": rate(self.param_ok, self.caller_steps),
            "values_acc": rate(self.values_ok, self.caller_steps),
            "values_acc_lenient": rate(self.values_ok_lenient, self.caller_steps),
            "caller_rouge_l": rate(self.caller_rouge_sum, self.caller_steps),
            "structured_values_acc": rate(self.structured_ok, self.structured_steps),
            "facts_total": self.facts_total,
            "facts_kept": rate(self.facts_kept, self.facts_total),
            "symptom_terms": self.symptom_terms,
            "symptom_recall": rate(self.symptom_terms_recalled, self.symptom_terms),
            "repr_residue_steps": self.repr_residue_steps,
            "trajectories_fully_correct": rate(self.fully_correct, self.n_trajectories),
            "trajectories_fully_correct_lenient": rate(
                self.fully_correct_lenient, self.n_trajectories
            ),
        }


@dataclass(slots=True)
class Report:
    overall: Metrics = field(default_factory=Metrics)
    per_category: dict[str, Metrics] = field(default_factory=dict)
    errors: list[CutError] = field(default_factory=list)
    # One record per cut: trajectory, state, category, kind, reference, prediction, failed.
    steps: list[dict[str, Any]] = field(default_factory=list)

    @property
    def n_trajectories(self) -> int:
        return self.overall.n_trajectories

    def to_dict(self) -> dict[str, Any]:
        return {
            "overall": self.overall.to_dict(),
            "per_category": {k: self.per_category[k].to_dict() for k in sorted(self.per_category)},
            "n_trajectories": self.n_trajectories,
            "errors": [e.to_dict() for e in self.errors],
            "steps": self.steps,
        }


# --- evaluation -------------------------------------------------------------------------------

_WRONG_CALL = CallerScore(False, False, False, False, 0.0)


def _caller_failures(cs: CallerScore, pred: Any, ref: Mapping[str, Any]) -> list[str]:
    """The paper's checks a call failed, naming the parameters whose exact value differs."""
    if not cs.tool_ok:
        return ["tool"]
    if not cs.param_ok:
        return ["param names"]
    out: list[str] = []
    if not cs.values_ok_exact:
        p = pred.get("parameters") or {}
        diff = [k for k, v in ref["parameters"].items() if not caller_scores(
            {"tool": ref["tool"], "parameters": {**ref["parameters"], k: p.get(k)}}, ref
        ).values_ok_exact]  # fmt: skip
        out.append(f"values exact: {', '.join(diff)}")
    if not cs.values_ok_lenient:
        out.append("values lenient")
    return out


def _add_facts(m: Metrics, fs: FactScore) -> None:
    m.structured_steps += fs.structured_checked
    m.structured_ok += fs.structured_checked and fs.structured_ok
    m.facts_total += fs.facts_total
    m.facts_kept += fs.facts_kept
    m.symptom_terms += fs.symptom_terms
    m.symptom_terms_recalled += fs.symptom_terms_recalled
    m.repr_residue_steps += fs.residue


def category_of(d: Mapping[str, Any]) -> str:
    cat = d.get("category")
    return cat if isinstance(cat, str) and cat.strip() else UNCATEGORISED


def reference_next_tool(states: Sequence[Mapping[str, Any]], i: int) -> str:
    """What the planner state at `i` leads to: the following caller's tool, or <END>."""
    if states[i]["value"]["action"] == END:
        return END
    return str(states[i + 1]["value"]["tool"])


def _plan_text(plan: Mapping[str, Any]) -> str:
    return f"{plan.get('reason', '')} {plan.get('action', '')}"


def evaluate(
    trajectories: Iterable[Mapping[str, Any]],
    predictor: Predictor,
    *,
    on_error: Callable[[CutError, Exception], None] | None = None,
) -> Report:
    """Teacher-forced metrics of `predictor` on complete reference trajectories.

    A predictor exception scores its cut as wrong and is recorded in `Report.errors`;
    `on_error`, if given, is also called with it (to log it, or to re-raise while debugging).
    Raises TrajectoryFileError if a reference trajectory is malformed (before predicting).
    Each predictor call gets its own deep copy of the history, so it may not alter the
    references.
    """
    trajs = list(trajectories)
    problems = [f"item {i}: {why}" for i, d in enumerate(trajs) if (why := check_item(d))]
    if problems:
        raise TrajectoryFileError("trajectories", problems)
    report = Report()
    for t_index, d in enumerate(trajs):
        cat = category_of(d)
        m = _evaluate_one(t_index, cat, d["interaction_trajectory"], predictor, report, on_error)
        report.overall.add(m)
        report.per_category.setdefault(cat, Metrics()).add(m)
    return report


def _evaluate_one(
    t_index: int,
    cat: str,
    states: Sequence[Mapping[str, Any]],
    predictor: Predictor,
    report: Report,
    on_error: Callable[[CutError, Exception], None] | None,
) -> Metrics:
    m = Metrics(n_trajectories=1)
    all_ok = all_ok_lenient = True

    def failed(i: int, stage: Stage, exc: Exception) -> None:
        err = CutError(t_index, i, stage, type(exc).__name__, cat)
        report.errors.append(err)
        if on_error is not None:
            on_error(err, exc)

    def history(i: int) -> list[Mapping[str, Any]]:
        return copy.deepcopy(list(states[:i]))

    def record(i: int, ref: Any, pred: Any, failed_checks: list[str], rl: float) -> None:
        report.steps.append({
            "trajectory": t_index, "state": i, "category": cat, "kind": states[i]["from"],
            "reference": ref, "prediction": pred, "failed": failed_checks,
            "rouge_l": round(rl, 3),
        })  # fmt: skip

    for i, state in enumerate(states):
        kind = state["from"]
        if kind == "planner":
            m.planner_steps += 1
            ref_tool = reference_next_tool(states, i)
            pred_tool: Any = None
            try:
                pred_tool = predictor.predict_tool(history(i))
                tool_right = pred_tool == ref_tool
            except Exception as exc:
                failed(i, "predict_tool", exc)
                tool_right = False
            m.next_tool_ok += tool_right
            all_ok = all_ok and tool_right
            all_ok_lenient = all_ok_lenient and tool_right
            plan_out: dict[str, Any] | None = None
            try:
                plan = predictor.plan(history(i))
                if not isinstance(plan, Mapping):
                    raise TypeError(f"plan() returned {type(plan).__name__}, not a mapping")
                score = rouge_l(_plan_text(plan), _plan_text(state["value"]))
                plan_out = {**plan, "next_tool": pred_tool}
            except Exception as exc:
                failed(i, "plan", exc)
                score = 0.0
            m.planner_rouge_sum += score
            ref_plan = {**state["value"], "next_tool": ref_tool}
            record(i, ref_plan, plan_out, [] if tool_right else ["next tool"], score)
        elif kind == "caller":
            m.caller_steps += 1
            pred: Any = None
            failed_checks: list[str] = []
            try:
                pred = predictor.call(history(i))
                cs = caller_scores(pred, state["value"])
                fs = fact_scores(pred, state["value"], states[:i])
                failed_checks = _caller_failures(cs, pred, state["value"]) + fs.failed
            except Exception as exc:
                failed(i, "call", exc)
                cs, fs = _WRONG_CALL, fact_scores({}, state["value"], states[:i])
                failed_checks = [f"error: {type(exc).__name__}", *fs.failed]
            m.tool_ok += cs.tool_ok
            m.param_ok += cs.param_ok
            m.values_ok += cs.values_ok_exact
            m.values_ok_lenient += cs.values_ok_lenient
            m.caller_rouge_sum += cs.rouge_l
            _add_facts(m, fs)
            all_ok = all_ok and cs.values_ok_exact
            all_ok_lenient = all_ok_lenient and cs.values_ok_lenient
            record(i, state["value"], pred, failed_checks, cs.rouge_l)
    m.fully_correct = int(all_ok)
    m.fully_correct_lenient = int(all_ok_lenient)
    return m


# --- text table -------------------------------------------------------------------------------

_COLUMNS: tuple[tuple[str, str], ...] = (
    ("trajs", "n_trajectories"),
    ("plan n", "planner_steps"),
    ("next tool", "planner_next_tool_acc"),
    ("plan RL", "planner_rouge_l"),
    ("call n", "caller_steps"),
    ("tool", "tool_acc"),
    ("param", "param_acc"),
    ("values", "values_acc"),
    ("values~", "values_acc_lenient"),
    ("call RL", "caller_rouge_l"),
    ("struct", "structured_values_acc"),
    ("facts", "facts_kept"),
    ("sympt", "symptom_recall"),
    ("repr", "repr_residue_steps"),
    ("full", "trajectories_fully_correct"),
    ("full~", "trajectories_fully_correct_lenient"),
)


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def format_table(report: Report) -> str:
    """A text table: one row per category, then overall; `~` columns are lenient values;
    struct/facts/sympt/repr are the fact-level checks (agents.eval.facts)."""
    d = report.to_dict()
    rows = [(cat, block) for cat, block in d["per_category"].items()]
    rows.append(("overall", d["overall"]))
    width = max(len("category"), *(len(cat) for cat, _ in rows))
    head = f"{'category':<{width}}" + "".join(f" {h:>9}" for h, _ in _COLUMNS)
    lines = [head, "-" * len(head)]
    for cat, block in rows:
        if cat == "overall" and len(rows) > 1:
            lines.append("-" * len(head))
        lines.append(f"{cat:<{width}}" + "".join(f" {_cell(block[k]):>9}" for _, k in _COLUMNS))
    if report.errors:
        lines.append("")
        lines.append(f"{len(report.errors)} predictor error(s), counted as wrong:")
        for e in report.errors[:MAX_PROBLEMS]:
            lines.append(
                f"  trajectory {e.trajectory} ({e.category}) state {e.state} "
                f"{e.stage}: {e.error_type}"
            )
        if len(report.errors) > MAX_PROBLEMS:
            lines.append(f"  ... and {len(report.errors) - MAX_PROBLEMS} more")
    return "\n".join(lines)
