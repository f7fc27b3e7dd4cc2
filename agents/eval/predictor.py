"""The agent as a teacher-forced predictor: given a reference history, what would it do next?

Planner: the same policy as the live assistant (appointments) and the same playbook builders
as the SOS runner (hard SOS, end SOS, soft SOS), fed the reference history instead of its own.
Caller: the tool the reference planner's action names (or the policy's), with that tool's own
parameters built from the history (agents.assistant.caller): the exact ids, slots and timestamps the
observations carry. Never another tool's parameters; what cannot be filled is refused.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any, Literal

from agents.assistant.caller import Caller, validated
from agents.assistant.planner.policy import Policy
from agents.assistant.planner.types import Plan, View
from agents.assistant.trajectory import END, ToolCall
from agents.playbooks.catalog import replay_step, trigger_for_turn
from gateway.contract.topics import Location
from gateway.household.model import Person

Flow = Literal["appointment", "hard_sos", "end_sos", "soft_sos"]

TOOLS = (
    "get_location", "search_ambulance", "get_assigned_ambulance", "send_message", "notify_user",
    "get_input_from_user", "retrieve_past_complaints", "get_available_specialists",
    "confirm_appointment", "book_appointment", "save_appointment_history",
    "get_appointment_history", "store_symptoms", "follow_up_with_user",
)  # fmt: skip

_UNITS = {
    "spo2": "%",
    "heart_rate": "bpm",
    "respiratory_rate": "/min",
    "systolic_bp": "mmHg",
    "diastolic_bp": "mmHg",
    "temperature_c": "°C",
}


def flow_of(user_text: str) -> Flow:
    t = user_text.casefold()
    if ("soft sos" in t or "abnormal vitals" in t) and "hard sos" not in t:
        return "soft_sos"
    if re.search(r"\b(end|ended|ending|cancel|cancelled|stop|stopped|false alarm)\b.{0,20}\bsos\b"
                 r"|\bsos\b.{0,30}\b(ended|cancel|cancelled|over|no longer|stopped|false alarm)",
                 t):  # fmt: skip
        return "end_sos"
    if re.search(r"\bsos\b|emergency button|escalated to hard", t):
        return "hard_sos"
    return "appointment"


def soft_params(user_text: str) -> dict[str, Any]:
    """The playbook inputs a soft-SOS user turn implies ("Abnormal Vitals: {...}")."""
    abnormal: dict[str, Any] = {}
    m = re.search(r"\{.*\}", user_text, re.S)
    if m:
        try:
            raw = ast.literal_eval(m.group(0))
        except (ValueError, SyntaxError):
            raw = {}
        if isinstance(raw, Mapping):
            for k, v in raw.items():
                abnormal[str(k)] = {"value": v, "unit": _UNITS.get(str(k))}
    return {"abnormal": abnormal, "advice": "", "severity": "low", "alert_id": None}


def _person(v: View) -> Person:
    # Only the name and id matter to the playbooks; the rest is a neutral placeholder.
    return Person(
        id=v.user_id,
        name=v.name or v.user_id,
        birth_date=date(1970, 1, 1),
        sex="other",
        location=Location(latitude=0.0, longitude=0.0),
    )


def _done(v: View) -> list[ToolCall]:
    return [
        ToolCall("", "", c.tool, c.params, c.result, None if c.ok else {"type": "error"})
        for c in v.calls
    ]


_RULES = (
    (r"assigned ambulance", "get_assigned_ambulance"),
    (r"(nearest|search|find).{0,20}ambulance", "search_ambulance"),
    (r"\blocation\b", "get_location"),
    (r"past complaints|earlier complaints|previous complaints", "retrieve_past_complaints"),
    (r"save.{0,30}(appointment|history)", "save_appointment_history"),
    (r"(get|read|check|look).{0,20}appointment history", "get_appointment_history"),
    (r"store.{0,20}symptoms|record.{0,20}symptoms|keep.{0,20}symptoms", "store_symptoms"),
    (r"follow[- ]?up with", "follow_up_with_user"),
    (r"specialist|available", "get_available_specialists"),
    (r"\b(ask|offer|question)\b", "get_input_from_user"),
    (r"\bconfirm\b", "confirm_appointment"),
    (r"\bbook\b", "confirm_appointment"),
    (r"\b(text|sms|send)\b", "send_message"),
    (r"\b(notify|tell|inform)\b", "notify_user"),
)


def named_tools(action: str) -> list[str]:
    """The tools an action text names (by name first), or describes, in order of confidence."""
    a = action.casefold()
    if a.strip() == END.casefold():
        return [END]
    out = [t for t in sorted(TOOLS, key=len, reverse=True) if t in a]
    if out:
        return out[:1]
    for pat, tool in _RULES:
        if re.search(pat, a) and tool not in out:
            out.append(tool)
    return out


def named_tool(action: str) -> str | None:
    got = named_tools(action)
    return got[0] if got else None


class AgentPredictor:
    """agents.eval.teacher_forced.Predictor over the live agent's policy and playbooks."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.caller = Caller(policy)

    # --- planner -----------------------------------------------------------------------------

    def _next(self, history: Sequence[Mapping[str, Any]]) -> tuple[str, str, str, dict[str, Any]]:
        """(tool or <END>, reason, action, parameters) after `history`."""
        v = View.from_states(history)
        flow = flow_of(v.text)
        if flow == "appointment":
            p: Plan = self.policy.next(v)
            return p.tool, p.reason, p.action, dict(p.params)
        kind = {"hard_sos": "hard", "end_sos": "end", "soft_sos": "soft"}[flow]
        params = soft_params(v.text) if kind == "soft" else None
        trigger = trigger_for_turn(v.text) if kind == "hard" else "button"
        step = replay_step(kind, _person(v), _done(v), trigger=trigger, params=params)  # type: ignore[arg-type]
        if step is None:
            done = v.calls
            reason = (
                "The user has been informed."
                if kind == "soft"
                else (
                    "Everything is done and the user has been told."
                    if all(c.ok for c in done)
                    else "Done; the steps that failed are recorded above."
                )
            )
            return END, reason, END, {}
        return step.tool, step.reason, step.action, dict(step.params)

    def plan(self, history: Sequence[Mapping[str, Any]]) -> Mapping[str, str]:
        _, reason, action, _ = self._next(history)
        return {"reason": reason, "action": action}

    def predict_tool(self, history: Sequence[Mapping[str, Any]]) -> str:
        return self._next(history)[0]

    # --- caller ------------------------------------------------------------------------------

    def call(self, history: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
        """The call for the tool the reference planner's action names, with that tool's own
        parameters; raises CallerError (a HealthGWError) when they cannot be filled."""
        before = (
            list(history[:-1]) if history and history[-1]["from"] == "planner" else list(history)
        )
        tool, _, _, params = self._next(before)
        action = str(history[-1]["value"].get("action", "")) if history else ""
        candidates = named_tools(action)
        named = candidates[0] if candidates else None
        # The action text may fit several tools; it agrees with the plan if any is the plan's.
        if named is not None and named != END and tool not in candidates:
            # The reference planner chose another tool: fill *its* parameters from the history.
            return {
                "tool": named,
                "parameters": self.caller.params(named, View.from_states(before)),
            }
        return {"tool": tool, "parameters": validated(tool, params)}
