"""The brief's trajectory format: system, user, (planner, caller, observation)*, planner <END>.

The builder refuses states out of order, so every saved trajectory (even a partial one of a
running task) is a prefix of a valid one and can be cut into planner/caller training pairs.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.base.errors import HealthGWError

END = "<END>"


class TrajectoryError(HealthGWError):
    """A trajectory breaks the format or the order rules."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One completed planner -> caller -> observation step."""

    reason: str
    action: str
    tool: str
    parameters: Mapping[str, Any]
    result: Any
    error: Mapping[str, str] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _plain(value: Any, what: str) -> Any:
    """A JSON-only deep copy, so later changes by the caller cannot leak in."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        raise TrajectoryError(f"{what} is not JSON-serialisable") from None


class Trajectory:
    def __init__(self, user_id: str, name: str, timestamp: str, *, category: str = "") -> None:
        self.category = category
        self._states: list[dict[str, Any]] = [
            {
                "from": "system",
                "value": {
                    "user_details": {"user_id": user_id, "name": name, "timestamp": timestamp}
                },
            }
        ]

    # --- building ---------------------------------------------------------------------------

    def user(self, text: str) -> None:
        self._expect("user")
        self._states.append({"from": "user", "value": text})

    def planner(self, reason: str, action: str) -> None:
        self._expect("planner")
        self._states.append({"from": "planner", "value": {"reason": reason, "action": action}})

    def caller(self, tool: str, parameters: Mapping[str, Any]) -> None:
        self._expect("caller")
        params = _plain(dict(parameters), "caller parameters")
        self._states.append({"from": "caller", "value": {"tool": tool, "parameters": params}})

    def observation(self, result: Any, *, error: Mapping[str, str] | None = None) -> None:
        """`error` ({type, message}) records a failed call; its result is then None."""
        self._expect("observation")
        value: dict[str, Any] = {"result": _plain(result, "observation result")}
        if error is not None:
            value = {"result": None, "error": dict(error)}
        self._states.append({"from": "observation", "value": value})

    def step(
        self,
        reason: str,
        action: str,
        tool: str,
        parameters: Mapping[str, Any],
        result: Any,
        *,
        error: Mapping[str, str] | None = None,
    ) -> None:
        self.planner(reason, action)
        self.caller(tool, parameters)
        self.observation(result, error=error)

    def end(self, reason: str) -> None:
        self.planner(reason, END)

    def _expect(self, kind: str) -> None:
        last = self._states[-1]
        if self.ended:
            raise TrajectoryError(f"cannot add {kind}: the trajectory has ended")
        allowed = _NEXT[last["from"]]
        if kind not in allowed:
            raise TrajectoryError(f"{kind} cannot follow {last['from']}")

    # --- reading ----------------------------------------------------------------------------

    @property
    def ended(self) -> bool:
        last = self._states[-1]
        return bool(last["from"] == "planner" and last["value"]["action"] == END)

    @property
    def states(self) -> list[dict[str, Any]]:
        return copy.deepcopy(self._states)

    def calls(self) -> list[ToolCall]:
        """The completed tool calls, in order (what a resumed run reuses)."""
        out: list[ToolCall] = []
        s = self._states
        for i in range(len(s) - 2):
            if s[i]["from"] == "planner" and s[i + 1]["from"] == "caller":
                if s[i + 2]["from"] != "observation":
                    continue
                p, c, o = s[i]["value"], s[i + 1]["value"], s[i + 2]["value"]
                out.append(
                    ToolCall(
                        p["reason"], p["action"], c["tool"], c["parameters"],
                        o.get("result"), o.get("error"),
                    )
                )  # fmt: skip
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"category": self.category, "interaction_trajectory": self.states}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Trajectory:
        validate_trajectory(d, complete=False)
        states = d["interaction_trajectory"]
        details = states[0]["value"]["user_details"]
        t = cls(
            details["user_id"],
            details["name"],
            details["timestamp"],
            category=str(d.get("category", "")),
        )
        t._states = _plain(list(states), "trajectory")
        return t


# Which state may follow which (the order rules).
_NEXT: dict[str, tuple[str, ...]] = {
    "system": ("user",),
    "user": ("planner",),
    "planner": ("caller",),
    "caller": ("observation",),
    "observation": ("planner",),
}


def validate_trajectory(d: Mapping[str, Any], *, complete: bool = True) -> None:
    """Raise TrajectoryError unless `d` follows the format. `complete=False` also accepts a
    prefix (a running task) as long as it has its system and user states."""
    states = d.get("interaction_trajectory") if isinstance(d, Mapping) else None
    if not isinstance(states, Sequence) or isinstance(states, str) or len(states) < 2:
        raise TrajectoryError("interaction_trajectory must be a list with system and user states")
    kinds: list[str] = []
    for i, s in enumerate(states):
        if not isinstance(s, Mapping) or set(s) != {"from", "value"}:
            raise TrajectoryError(f"state {i}: must be {{from, value}}")
        kinds.append(str(s["from"]))
        _check_value(i, kinds[-1], s["value"])
    if kinds[0] != "system":
        raise TrajectoryError("state 0: must be system")
    for i in range(1, len(kinds)):
        if kinds[i - 1] == "planner" and states[i - 1]["value"]["action"] == END:
            raise TrajectoryError(f"state {i}: nothing may follow the <END> planner")
        if kinds[i] not in _NEXT[kinds[i - 1]]:
            raise TrajectoryError(f"state {i}: {kinds[i]} cannot follow {kinds[i - 1]}")
    ended = kinds[-1] == "planner" and states[-1]["value"]["action"] == END
    if complete and not ended:
        raise TrajectoryError("the last state must be a planner with action <END>")


def _check_value(i: int, kind: str, v: Any) -> None:
    ok: bool
    if kind == "system":
        det = v.get("user_details") if isinstance(v, Mapping) else None
        ok = isinstance(det, Mapping) and {"user_id", "name", "timestamp"} <= set(det)
    elif kind == "user":
        ok = isinstance(v, str)
    elif kind == "planner":
        ok = isinstance(v, Mapping) and isinstance(v.get("reason"), str)
        ok = ok and isinstance(v.get("action"), str)
    elif kind == "caller":
        ok = isinstance(v, Mapping) and isinstance(v.get("tool"), str)
        ok = ok and isinstance(v.get("parameters"), Mapping)
    elif kind == "observation":
        ok = isinstance(v, Mapping) and "result" in v and set(v) <= {"result", "error"}
    else:
        raise TrajectoryError(f"state {i}: unknown kind {kind!r}")
    if not ok:
        raise TrajectoryError(f"state {i}: malformed {kind} value")
