"""The caller: the parameters of exactly the tool the planner named.

The paper's caller only fills parameters; the planner picks the tool. So when the planner
names tool X, the caller builds X's parameters, from X's own argument model (the one the
registry validates with), out of what the trajectory so far holds: the user's id and
timestamp, the condensed symptoms, the parsed schedule, the offered specialist and slot.
It never hands X the parameters some other step would have used. What it cannot fill (no
offer yet to confirm, no location to search from) it refuses with a `CallerError`.

The live assistant plans tool and parameters together (agents.assistant.planner.steps) and the
registry rejects parameters that do not fit the tool; teacher-forced evaluation uses this
module when the reference planner chose another tool than our policy would have.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from agents.assistant.language import (
    DECLINED_MESSAGE,
    NO_ANSWER_MESSAGE,
    NO_SLOT_MESSAGE,
    SCHEDULE_QUESTION,
    booked_message,
    offer_question,
    read_yes_no,
    reoffer_question,
)
from agents.assistant.planner.policy import Policy
from agents.assistant.planner.types import BOOK, CONFIRM, INPUT, PAST, SEARCH, View, offer_from
from agents.assistant.schedule import slot_text
from agents.tools.appointment_tools import AppointmentTools
from agents.tools.declare import declared_args
from agents.tools.sos_tools import SosTools
from gateway.base.errors import HealthGWError

# Tool name -> argument model: the tool contract, as the registry's specs declare it.
TOOL_ARGS: Mapping[str, type[BaseModel]] = {
    **declared_args(SosTools),
    **declared_args(AppointmentTools),
}


class CallerError(HealthGWError):
    """The caller cannot give the named tool its parameters. Names the tool and the fields,
    never their values (they may be PHI)."""

    def __init__(self, tool: str, why: str, *, fields: tuple[str, ...] = ()) -> None:
        named = f" ({', '.join(fields)})" if fields else ""
        super().__init__(f"caller: {tool}: {why}{named}")
        self.tool = tool
        self.fields = fields


def validated(tool: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """`params` unchanged if they fit `tool`'s argument model; else CallerError naming the
    fields that do not (an extra key, like another tool's parameter, is one)."""
    model = TOOL_ARGS.get(tool)
    if model is None:
        raise CallerError(tool, "unknown tool")
    try:
        model.model_validate(dict(params))
    except ValidationError as exc:
        fields = tuple(sorted({str(e["loc"][0]) for e in exc.errors() if e["loc"]}))
        raise CallerError(tool, "parameters do not fit the tool", fields=fields) from None
    return dict(params)


class Caller:
    """Fills the parameters of a named tool from a View (see the module docstring)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def params(self, tool: str, v: View) -> dict[str, Any]:
        """Parameters of `tool` after the trajectory `v`, validated against its model."""
        if tool not in TOOL_ARGS:
            raise CallerError(tool, "unknown tool")
        uid = v.user_id
        built: dict[str, Any]
        if tool in (PAST, "store_symptoms", "save_appointment_history", SEARCH):
            symptoms = self.policy.symptoms(v)
            if tool == PAST:
                built = {"user_id": uid, "symptoms": symptoms}
            elif tool == "store_symptoms":
                built = {"user_id": uid, "symptoms": symptoms, "timestamp": v.timestamp}
            elif tool == SEARCH:
                built = {
                    "symptoms": symptoms,
                    "specialization": self.policy.specialization(v),
                    "user_schedule": self.policy.schedule(v).as_param(),
                }
            else:
                sid, slot = self._offer(tool, v)
                built = {"user_id": uid, "symptoms": symptoms, "specialist_id": sid,
                         "appointment_time_date": slot}  # fmt: skip
        elif tool in (CONFIRM, BOOK):
            sid, slot = self._offer(tool, v)
            built = {"user_id": uid, "specialist_id": sid, "appointment_time_date": slot}
        elif tool in ("get_appointment_history", "get_assigned_ambulance"):
            built = {"user_id": uid}
        elif tool == "follow_up_with_user":
            built = {"user_id": uid, "current_symptoms": self.policy.symptoms(v)}
        elif tool == "get_location":
            built = {}
        elif tool == "search_ambulance":
            built = {"location": self._location(v)}
        elif tool == INPUT:
            built = {"user_id": uid, "questions": self._question(v)}
        elif tool == "notify_user":
            built = {"user_id": uid, "message": self._message(v)}
        else:  # send_message: only the SOS playbook's fixed sequence knows its text
            raise CallerError(tool, "cannot be filled outside its playbook step")
        return validated(tool, built)

    # --- what the trajectory holds -----------------------------------------------------------

    @staticmethod
    def _last_offer(v: View) -> tuple[int, tuple[str, str, Any, Any]] | None:
        for i in range(len(v.calls) - 1, -1, -1):
            c = v.calls[i]
            if c.tool == SEARCH:
                offer = offer_from(c.result) if c.ok else None
                return (i, offer) if offer is not None else None
        return None

    def _offer(self, tool: str, v: View) -> tuple[str, str]:
        found = self._last_offer(v)
        if found is None:
            raise CallerError(tool, "no specialist slot was offered", fields=("specialist_id",))
        sid, _, start, end = found[1]
        return sid, slot_text(start, end)

    @staticmethod
    def _location(v: View) -> dict[str, Any]:
        for c in reversed(v.calls):
            if c.tool == "get_location" and c.ok and isinstance(c.result, Mapping):
                return dict(c.result)
        raise CallerError("search_ambulance", "no location known yet", fields=("location",))

    def _question(self, v: View) -> str:
        found = self._last_offer(v)
        if found is not None:
            i, (_, name, start, _) = found
            asked = [c for c in v.calls[i + 1 :] if c.tool == INPUT]
            if not asked:
                return offer_question(name, start)
            return reoffer_question(name, start)
        if not any(c.tool in (PAST, SEARCH) for c in v.calls):
            # Still describing the complaint: a clarifying question.
            asked_q = [str(c.params.get("questions", "")) for c in self.policy.follow_ups(v)]
            q = self.policy.triage.follow_up(self.policy.complaint(v), asked_q)
            if q:
                return q
        return SCHEDULE_QUESTION

    def _message(self, v: View) -> str:
        if any(c.tool == INPUT and not c.ok for c in v.calls):
            return NO_ANSWER_MESSAGE
        found = self._last_offer(v)
        if found is None:
            if any(c.tool == SEARCH for c in v.calls):
                return NO_SLOT_MESSAGE
            raise CallerError("notify_user", "nothing to tell the user yet", fields=("message",))
        i, (_, name, start, _) = found
        after = v.calls[i + 1 :]
        if any(c.tool in (CONFIRM, BOOK) and c.ok for c in after):
            return booked_message(name, start)
        answers = [c for c in after if c.tool == INPUT and isinstance(c.result, str)]
        if answers and read_yes_no(str(answers[-1].result)) == "no":
            return DECLINED_MESSAGE
        raise CallerError("notify_user", "nothing to tell the user yet", fields=("message",))
