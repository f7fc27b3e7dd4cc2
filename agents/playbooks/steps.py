"""What a playbook is: steps that are pure functions of the run and the tool calls done so far
(so a resumed run rebuilds the next step identically), and the triggers that start a hard
SOS, with what each one tells the user, the ambulance and the contacts."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents.assistant.trajectory import ToolCall
from agents.playbooks.journal import SosError, SosRun
from gateway.contract.topics import NotifyKind
from gateway.household.model import Person


@dataclass(frozen=True, slots=True)
class Step:
    reason: str
    action: str
    tool: str
    params: dict[str, Any]


# (run, person, completed calls before this step) -> the step, or None to skip it.
Builder = Callable[[SosRun, Person, Sequence[ToolCall]], Step | None]


@dataclass(frozen=True, slots=True)
class Playbook:
    category: str
    notify_kind: NotifyKind
    steps: tuple[Builder, ...]
    end_reason: Callable[[Sequence[ToolCall]], str]


def plan(
    pb: Playbook, run: SosRun, person: Person, done: Sequence[ToolCall]
) -> tuple[int, Step] | None:
    """The next (playbook index, step) after `done`, or None when only <END> is left.
    Replays the builders over the recorded calls, so a resumed run rebuilds the same step."""
    j = 0
    for i, build in enumerate(pb.steps):
        step = build(run, person, done[:j])
        if step is None:
            continue
        if j < len(done):
            if done[j].tool != step.tool:
                raise SosError(f"run {run.run_id}: journal does not match the playbook")
            j += 1
            continue
        return i, step
    return None


def _ok(done: Sequence[ToolCall], tool: str, **params: Any) -> Any:
    """The result of the last successful `tool` call whose parameters include `params`."""
    for c in reversed(done):
        if c.tool == tool and c.ok and all(c.parameters.get(k) == v for k, v in params.items()):
            return c.result
    return None


def _tried(done: Sequence[ToolCall], tool: str, **params: Any) -> bool:
    return any(
        c.tool == tool and all(c.parameters.get(k) == v for k, v in params.items()) for c in done
    )


def _maps(loc: tuple[float, float]) -> str:
    return f"{loc[0]:.5f}, {loc[1]:.5f} (https://maps.google.com/?q={loc[0]:.5f},{loc[1]:.5f})"


def _where(person: Person, done: Sequence[ToolCall]) -> tuple[float, float]:
    loc = _ok(done, "get_location")
    if isinstance(loc, Mapping):
        return float(loc["latitude"]), float(loc["longitude"])
    return person.location.latitude, person.location.longitude  # home, if lookup failed


@dataclass(frozen=True, slots=True)
class _Trigger:
    user_turn: str  # the trajectory's user state
    reason: str  # the first planner reason
    opening: str  # the first message to the user
    what: str  # what happened, as told to the ambulance and contacts


PRESSED = _Trigger(
    "SOS button pressed",
    "The user pressed SOS; tell them help is being arranged.",
    "SOS received. I am texting the nearest ambulance and your emergency contacts now.",
    "pressed SOS",
)
_OPENING = "I am texting the nearest ambulance and your emergency contacts now."
_UNANSWERED = _Trigger(
    "Soft SOS unanswered: escalated to hard SOS",
    "The health alert went unanswered; tell the user help is being arranged.",
    f"You did not answer the health alert, so {_OPENING}",
    "did not answer a health alert",
)
_FALL = _Trigger(
    "Fall detected and unanswered: escalated to hard SOS",
    "A fall went unanswered; tell the user help is being arranged.",
    f"You did not answer after a fall, so {_OPENING}",
    "fell and did not answer",
)
# The triggers gateway/runtime/gateway.py and gateway/escalation/watcher.py pass; any other reads as a press.
TRIGGERS: dict[str, _Trigger] = {
    "button": PRESSED,
    "api": _Trigger(
        "SOS requested through the gateway",
        "An SOS was raised for the user; tell them help is being arranged.",
        f"An SOS was raised for you. {_OPENING}",
        "needs help (SOS raised at the home gateway)",
    ),
    "soft_sos_unanswered": _UNANSWERED,
    "escalation": _UNANSWERED,
    "fall_no_movement": _FALL,
    "implausible_unanswered": _Trigger(
        "Vital sign unreadable and unanswered: escalated to hard SOS",
        "The device lost a vital sign and the user did not answer; tell them help is coming.",
        f"You did not answer after your device lost your vital signs, so {_OPENING}",
        "did not answer after their device stopped reading a vital sign (possible collapse)",
    ),
    "fall": _FALL,
    "user_not_ok": _Trigger(
        "User answered not OK to a soft SOS: escalated to hard SOS",
        "The user said they are not OK; tell them help is being arranged.",
        f"You said you are not OK, so {_OPENING}",
        "reported not being OK after a health alert",
    ),
}


def _trigger(run: SosRun) -> _Trigger:
    return TRIGGERS.get(run.trigger, PRESSED)
