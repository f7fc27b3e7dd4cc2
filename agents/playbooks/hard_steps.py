"""The hard SOS and end SOS steps: tell the user, find the location and the nearest ambulance,
text it and the emergency contacts, summarise; and, when the SOS ends, the same people told."""

from __future__ import annotations

from collections.abc import Sequence

from agents.assistant.trajectory import ToolCall
from agents.playbooks.journal import SosRun
from agents.playbooks.steps import Step, _maps, _ok, _tried, _trigger, _where
from gateway.household.model import Person


def _hard_notify(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    t = _trigger(run)
    return Step(
        t.reason,
        "Call notify_user to tell the user help is on the way.",
        "notify_user",
        {"user_id": p.id, "message": t.opening},
    )


def _hard_location(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    return Step(
        "The ambulance needs to know where the user is.",
        "Call get_location.",
        "get_location",
        {},
    )


def _hard_search(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    lat, lon = _where(p, done)
    return Step(
        "Location known; find the nearest ambulance.",
        "Call search_ambulance with the user's location.",
        "search_ambulance",
        {"location": {"latitude": lat, "longitude": lon}},
    )


def _hard_text_ambulance(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step | None:
    amb = _ok(done, "search_ambulance")
    if amb is None:
        return None  # nothing to text; the contacts step says so
    what = _trigger(run).what
    return Step(
        f"Ambulance {amb['ambulance_id']} is nearest; text it the user's name, id and location.",
        "Call send_message to the ambulance.",
        "send_message",
        {
            "text": f"EMERGENCY: {p.name} (user ID {p.id}) {what} and needs an ambulance. "
            f"Location: {_maps(_where(p, done))}",
            "phone_no": amb["phone_no"],
        },
    )


def _hard_text_contacts(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    amb = _ok(done, "search_ambulance")
    texted = amb is not None and _ok(done, "send_message", phone_no=amb["phone_no"]) is True
    what = _trigger(run).what
    if texted:
        reason = "The ambulance has been texted; the emergency contacts must know too."
        help_ = f"Ambulance {amb['ambulance_id']} has been texted and is on its way."
    else:
        reason = "No ambulance could be texted; the emergency contacts must call for help."
        help_ = "No ambulance could be texted automatically: please call emergency services."
    return Step(
        reason,
        "Call send_message to all emergency contacts.",
        "send_message",
        {
            "text": f"SOS: {p.name} (user ID {p.id}) {what}. Location: {_maps(_where(p, done))}. "
            + help_,
            "to_emergency_contacts": True,
        },
    )


def _hard_summary(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    amb = _ok(done, "search_ambulance")
    parts: list[str] = []
    if amb is not None and _ok(done, "send_message", phone_no=amb["phone_no"]) is True:
        parts.append(f"Ambulance {amb['ambulance_id']} has been texted your location.")
    else:
        parts.append("No ambulance could be texted automatically. Call emergency services now.")
    if _ok(done, "send_message", to_emergency_contacts=True) is True:
        # No names: the message must follow from the trajectory alone (replayable).
        parts.append("Your emergency contacts have been texted.")
    else:
        parts.append("Your emergency contacts could not be texted.")
    return Step(
        "Texts are sent; tell the user what was done.",
        "Call notify_user with what was done.",
        "notify_user",
        {"user_id": p.id, "message": " ".join(parts)},
    )


def _end_notify(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    return Step(
        "The user ended the SOS; tell them it is being called off.",
        "Call notify_user to say the SOS is being ended.",
        "notify_user",
        {
            "user_id": p.id,
            "message": "Ending your SOS: I am telling the ambulance and your emergency contacts "
            "that help is no longer needed.",
        },
    )


def _end_assigned(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    return Step(
        "Find the ambulance that was sent so it can stand down.",
        "Call get_assigned_ambulance.",
        "get_assigned_ambulance",
        {"user_id": p.id},
    )


def _end_text_ambulance(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step | None:
    amb = _ok(done, "get_assigned_ambulance")
    if amb is None:
        return None
    return Step(
        f"Ambulance {amb['ambulance_id']} was assigned; tell it help is no longer needed.",
        "Call send_message to the ambulance.",
        "send_message",
        {
            "text": f"SOS CANCELLED: {p.name} (user ID {p.id}) no longer needs an ambulance. "
            "Please stand down.",
            "phone_no": amb["phone_no"],
        },
    )


def _end_text_contacts(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    amb = _ok(done, "get_assigned_ambulance")
    told = amb is not None and _ok(done, "send_message", phone_no=amb["phone_no"]) is True
    extra = " The ambulance has been told it is no longer needed." if told else ""
    return Step(
        "Tell the emergency contacts the emergency is over.",
        "Call send_message to all emergency contacts.",
        "send_message",
        {
            "text": f"{p.name} (user ID {p.id}) has ended the SOS: the emergency is over." + extra,
            "to_emergency_contacts": True,
        },
    )


def _end_summary(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    amb = _ok(done, "get_assigned_ambulance")
    parts = ["Your SOS has ended."]
    if amb is not None and _ok(done, "send_message", phone_no=amb["phone_no"]) is True:
        parts.append(f"Ambulance {amb['ambulance_id']} was told it is no longer needed.")
    elif _tried(done, "get_assigned_ambulance"):
        parts.append("No ambulance could be told; call emergency services to cancel if needed.")
    if _ok(done, "send_message", to_emergency_contacts=True) is True:
        parts.append("Your emergency contacts were told the emergency is over.")
    else:
        parts.append("Your emergency contacts could not be texted.")
    return Step(
        "Texts are sent; tell the user the SOS is over.",
        "Call notify_user with what was done.",
        "notify_user",
        {"user_id": p.id, "message": " ".join(parts)},
    )


def _end_reason(done: Sequence[ToolCall]) -> str:
    if all(c.ok for c in done):
        return "Everything is done and the user has been told."
    return "Done; the steps that failed are recorded above."
