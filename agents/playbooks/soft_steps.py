"""The soft SOS steps: the wearer, the contacts and the care line, as the monitor's decided
response asks (agents/playbooks/soft_texts.py words the messages)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agents.assistant.trajectory import ToolCall
from agents.playbooks.hard_steps import _end_reason
from agents.playbooks.journal import SosRun
from agents.playbooks.soft_texts import (
    clinician_text,
    family_text,
    soft_message,
    unanswered_text,
)
from agents.playbooks.steps import Step
from gateway.household.model import Person

# The monitor decided who is told (params["response"]); these steps only carry it out. A run in
# "unanswered" mode texts the contacts that the wearer did not answer "are you OK?".


def _response(run: SosRun) -> Mapping[str, Any]:
    r = run.params.get("response")
    return r if isinstance(r, Mapping) else {"tell_wearer": True}


def _soft_notify(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step | None:
    prm = run.params
    if prm.get("mode") == "unanswered" or not _response(run).get("tell_wearer", True):
        return None
    return Step(
        "Vitals are abnormal; the user must be told which ones and what to do.",
        "Call notify_user with the abnormal vitals and advice.",
        "notify_user",
        {
            "user_id": p.id,
            "message": soft_message(prm["abnormal"], prm.get("advice"), prm.get("severity")),
        },
    )


def _soft_contacts(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step | None:
    """The family; with no emergency contacts, the care line stands in (someone must be told)."""
    prm = run.params
    if p.emergency_contacts:
        to: dict[str, Any] = {"to_emergency_contacts": True}
        who = "the emergency contacts"
    elif p.clinician is not None:
        to, who = {"phone_no": p.clinician.phone}, "the care line (no emergency contacts)"
    else:
        return None
    if prm.get("mode") == "unanswered":
        return Step(
            f"The user did not answer the health alert; {who} must check on them.",
            f"Call send_message to {who}.",
            "send_message",
            {"text": unanswered_text(p, prm), **to},
        )
    response = _response(run)
    if not response.get("contacts_now"):
        return None
    if not p.emergency_contacts and response.get("clinician_now"):
        return None  # the care line is texted by the next step
    return Step(
        "The vitals call for the family now, not only the user.",
        f"Call send_message to {who}.",
        "send_message",
        {"text": family_text(p, prm), **to},
    )


def _soft_clinician(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step | None:
    if run.params.get("mode") == "unanswered" or p.clinician is None:
        return None
    if not _response(run).get("clinician_now"):
        return None
    return Step(
        "The values are in the intervention range: hand over to the user's clinician.",
        "Call send_message to the care line.",
        "send_message",
        {"text": clinician_text(p, run.params), "phone_no": p.clinician.phone},
    )


def _soft_end(done: Sequence[ToolCall]) -> str:
    if not done:
        return "Nobody could be told: there are no emergency contacts and no care line."
    if not all(c.ok for c in done):
        return _end_reason(done)
    told = [c.tool for c in done]
    if told == ["notify_user"]:
        return "The user has been informed."  # the paper's wording for the plain case
    if "notify_user" not in told:
        return "The emergency contacts have been told."
    return "The user and the people who must know have been told."
