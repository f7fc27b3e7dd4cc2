"""The plan of each step the appointment planner can take: its tool, exact parameters, the one
tool allowed there and the reason/action wording the trajectory records.

agents.assistant.planner.policy decides *which* step comes next; this module says what that step is. Kept apart so
the policy's decisions read as one flow, and the recorded wording can be changed in one place
(teacher-forced evaluation compares against it).
"""

from __future__ import annotations

from datetime import datetime

from agents.assistant.planner.types import (
    CONFIRM,
    INPUT,
    NOTIFY,
    PAST,
    SAVE,
    SEARCH,
    STORE,
    Plan,
    View,
)
from agents.assistant.schedule import Schedule
from agents.assistant.trajectory import END


def a_an(word: str) -> str:
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def ask_follow_up(uid: str, question: str) -> Plan:
    return Plan(
        INPUT,
        "The symptoms are too vague to choose a specialist; ask a follow-up question first.",
        "Ask the user a follow-up question about their symptoms.",
        {"user_id": uid, "questions": question},
        "follow_up",
        frozenset({INPUT}),
    )


def check_past(uid: str, symptoms: str) -> Plan:
    return Plan(
        PAST,
        f"The user reports {symptoms}; check whether this happened before.",
        f"Use {PAST} for similar complaints.",
        {"user_id": uid, "symptoms": symptoms},
        "past",
        frozenset({PAST}),
    )


def ask_schedule(uid: str, question: str) -> Plan:
    return Plan(
        INPUT,
        "Ask when the user is free before searching for a specialist.",
        "Ask the user for a preferred date and time.",
        {"user_id": uid, "questions": question},
        "schedule",
        frozenset({INPUT}),
    )


def search(specialization: str, reason: str, symptoms: str, schedule: Schedule) -> Plan:
    return Plan(
        SEARCH,
        reason,
        f"Use {SEARCH} for {a_an(specialization)} on {schedule.day.isoformat()} "
        f"{schedule.time_range}.",
        {
            "symptoms": symptoms,
            "specialization": specialization,
            "user_schedule": schedule.as_param(),
        },
        "search",
        frozenset({SEARCH}),
        specialization=specialization,
    )


def offer(uid: str, name: str, start: datetime, question: str, specialization: str) -> Plan:
    return Plan(
        INPUT,
        f"{name} is free on {start:%A %d %B} at {start:%H:%M}.",
        "Offer the slot to the user.",
        {"user_id": uid, "questions": question},
        "offer",
        frozenset({INPUT}),
        answer_type="yes_no",
        specialization=specialization,
        facts=(name, f"{start:%H:%M}", str(start.day)),
    )


def reoffer(uid: str, name: str, start: datetime, question: str, specialization: str) -> Plan:
    return Plan(
        INPUT,
        "The answer was unclear; ask again for a yes or no.",
        "Ask the user again whether to book the slot.",
        {"user_id": uid, "questions": question},
        "reoffer",
        frozenset({INPUT}),
        answer_type="yes_no",
        specialization=specialization,
        facts=(name, f"{start:%H:%M}"),
    )


def confirm(uid: str, specialist_id: str, slot: str, specialization: str) -> Plan:
    return Plan(
        CONFIRM,
        "The user accepted the slot.",
        "Confirm the appointment.",
        {"user_id": uid, "specialist_id": specialist_id, "appointment_time_date": slot},
        "confirm",
        frozenset({CONFIRM}),
        specialization=specialization,
    )


def save(uid: str, symptoms: str, specialist_id: str, slot: str, specialization: str) -> Plan:
    return Plan(
        SAVE,
        "The appointment is booked; record it in the history.",
        "Save the appointment history.",
        {
            "user_id": uid,
            "symptoms": symptoms,
            "specialist_id": specialist_id,
            "appointment_time_date": slot,
        },
        "save",
        frozenset({SAVE}),
        specialization=specialization,
    )


def wrap_up(
    v: View,
    symptoms: str,
    message: str,
    why: str,
    *,
    spec: str | None = None,
    since: int = 0,
    facts: tuple[str, ...] = (),
) -> Plan:
    """store_symptoms, then notify_user with `message`, then <END>."""
    after = v.calls[since:]
    if not any(c.tool == STORE for c in after):
        return Plan(
            STORE,
            why,
            "Store the symptoms.",
            {"user_id": v.user_id, "symptoms": symptoms, "timestamp": v.timestamp},
            "store",
            frozenset({STORE}),
            specialization=spec,
        )
    if not any(c.tool == NOTIFY for c in after):
        return Plan(
            NOTIFY,
            "Symptoms stored; tell the user.",
            "Notify the user.",
            {"user_id": v.user_id, "message": message},
            "notify",
            frozenset({NOTIFY}),
            specialization=spec,
            facts=facts,
        )
    return Plan(END, "Done.", END, {}, "end", frozenset(), specialization=spec)
