"""A conversation's resumable state: what agents/assistant/runner.py hands its checkpoint before
every question and after every other step, and reads back to go on after a restart
(agents/assistant/conversations.py keeps it in agents/assistant/conversation_store.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from agents.assistant.planner.types import INPUT, Plan, Purpose

AskFn = Callable[[str, str], Awaitable[str]]


@dataclass
class RunState:
    """What a run needs to go on after a restart (JSON-safe through to_dict)."""

    run_id: str
    person: str
    started: float
    trajectory: dict[str, Any]  # Trajectory.to_dict() so far
    # The step waiting for the user's answer: reason, action, tool, params, purpose,
    # answer_type, specialization. None between questions.
    pending: dict[str, Any] | None = None
    plans: list[list[Any]] = field(default_factory=list)  # [tool, purpose, specialization]
    booked: bool = False
    declined: bool = False
    step_ms: list[float] = field(default_factory=list)

    def last_message(self, opener: str) -> str:
        """The last message of the person's this run acted on: the answer to its latest
        question, or the opener before any was asked."""
        states = self.trajectory.get("interaction_trajectory", [])
        last = opener
        for i, st in enumerate(states[:-1]):
            v = st.get("value") or {}
            if st.get("from") == "caller" and v.get("tool") == INPUT:
                result = (states[i + 1].get("value") or {}).get("result")
                if isinstance(result, str):
                    last = result
        return last

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunState:
        """Raises ValueError for a dict that is not a saved run state."""
        try:
            st = cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})
        except TypeError:
            raise ValueError("not a saved run state") from None
        if not (
            isinstance(st.run_id, str)
            and isinstance(st.person, str)
            and isinstance(st.started, int | float)
            and isinstance(st.trajectory, dict)
            and isinstance(st.plans, list)
            and all(isinstance(p, list) and len(p) == 3 for p in st.plans)
            and (st.pending is None or isinstance(st.pending, dict))
        ):
            raise ValueError("not a saved run state")
        if st.pending is not None and not {"reason", "action", "tool", "params"} <= set(st.pending):
            raise ValueError("not a saved run state")
        return st


# Receives the run's state and whether to fsync it (before a question: yes).
Checkpoint = Callable[[RunState, bool], Awaitable[None]]


def pending_dict(plan: Plan, reason: str, params: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "reason": reason, "action": plan.action, "tool": plan.tool, "params": dict(params),
        "purpose": plan.purpose, "answer_type": plan.answer_type,
        "specialization": plan.specialization,
    }  # fmt: skip


def pending_plan(p: Mapping[str, Any]) -> Plan:
    return Plan(
        str(p["tool"]), str(p["reason"]), str(p["action"]), dict(p["params"]),
        cast(Purpose, p.get("purpose", "schedule")), frozenset({str(p["tool"])}),
        answer_type="yes_no" if p.get("answer_type") == "yes_no" else "free_text",
        specialization=p.get("specialization"),
    )  # fmt: skip


def plan_stub(p: Sequence[Any]) -> Plan:
    """An earlier step's plan, as far as the run's result needs it (tool, purpose, specialty)."""
    tool, purpose, spec = p
    return Plan(str(tool), "", "", {}, cast(Purpose, purpose), frozenset(), specialization=spec)
