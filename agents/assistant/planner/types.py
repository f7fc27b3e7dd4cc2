"""What the appointment planner (agents.assistant.planner.policy) reads and returns: the tool names it plans,
the View of a trajectory so far, the Plan of the next step, and the triage it consults.

Kept apart from the policy's decisions so the planner reads as one flow, and so callers that only
handle views and plans (the assistant, the predictor, evaluation) need not read the policy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

INPUT = "get_input_from_user"
PAST = "retrieve_past_complaints"
SEARCH = "get_available_specialists"
CONFIRM = "confirm_appointment"
BOOK = "book_appointment"
SAVE = "save_appointment_history"
STORE = "store_symptoms"
NOTIFY = "notify_user"

Purpose = Literal[
    "follow_up", "past", "schedule", "search", "offer", "reoffer", "confirm", "save", "store",
    "notify", "end",
]  # fmt: skip


class TriageResultLike(Protocol):
    @property
    def specialty(self) -> str: ...
    @property
    def confidence(self) -> float: ...
    @property
    def vague(self) -> bool: ...
    @property
    def ranked(self) -> tuple[tuple[str, float], ...]: ...


class TriageLike(Protocol):
    def classify(self, text: str, prior: Mapping[str, float] | None = None) -> TriageResultLike: ...
    def follow_up(self, text: str, asked: Sequence[str]) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Call:
    tool: str
    params: Mapping[str, Any]
    result: Any
    ok: bool


@dataclass(frozen=True, slots=True)
class View:
    """What the planner sees: the system and user states and the completed calls."""

    user_id: str
    name: str
    timestamp: str
    text: str
    calls: tuple[Call, ...] = ()

    @property
    def now(self) -> datetime:
        try:
            return datetime.fromisoformat(self.timestamp).replace(tzinfo=None)
        except ValueError:
            return datetime(2000, 1, 1)

    @classmethod
    def from_states(cls, states: Sequence[Mapping[str, Any]]) -> View:
        details = states[0]["value"]["user_details"]
        text = str(states[1]["value"]) if len(states) > 1 else ""
        calls: list[Call] = []
        for i in range(2, len(states) - 2):
            a, b, c = states[i], states[i + 1], states[i + 2]
            if a["from"] == "planner" and b["from"] == "caller" and c["from"] == "observation":
                obs = c["value"]
                calls.append(
                    Call(
                        str(b["value"]["tool"]),
                        dict(b["value"].get("parameters") or {}),
                        obs.get("result"),
                        ok="error" not in obs,
                    )
                )
        return cls(
            str(details["user_id"]),
            str(details.get("name", "")),
            str(details["timestamp"]),
            text,
            tuple(calls),
        )


@dataclass(frozen=True, slots=True)
class Plan:
    tool: str  # END when done
    reason: str
    action: str
    params: dict[str, Any]
    purpose: Purpose
    allowed: frozenset[str]
    answer_type: Literal["free_text", "yes_no"] = "free_text"
    specialization: str | None = None
    # Facts a rephrased message must still state (names, dates), checked before use.
    facts: tuple[str, ...] = field(default=())


def offer_from(result: Any) -> tuple[str, str, datetime, datetime] | None:
    """(specialist_id, name, start, end) of a get_available_specialists result."""
    if not isinstance(result, Mapping):
        return None
    try:
        slot = result["available_slot"]
        a, b = str(slot["time"]).split("-")
        day = str(slot["date"])
        start = datetime.fromisoformat(f"{day}T{a.strip()}")
        end = datetime.fromisoformat(f"{day}T{b.strip()}")
        return str(result["specialist_id"]), str(result.get("name", "")), start, end
    except (KeyError, ValueError, TypeError):
        return None
