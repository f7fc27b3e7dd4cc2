"""The deterministic language of the assistant: questions, messages and reading yes/no
answers (symptom lists are agents.triage.condense's). It keeps every flow working with no
model; the local model may rephrase on top (agents/assistant/model_roles.py), and its output is checked
against these facts."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Literal

YesNo = Literal["yes", "no", "unclear"]

_YES = re.compile(
    r"\b(yes|yeah|yea|yep|yup|sure|ok|okay|alright|all right|please do|please book|book it|"
    r"go ahead|sounds good|that works|works for me|fine|perfect|great|absolutely|of course|"
    r"definitely|do it|let's do it|y)\b"
)
_NO = re.compile(
    r"\b(no|nope|nah|not now|not right now|not yet|don't|do not|dont|cancel|later|never mind|"
    r"no thanks|no thank you|i'll pass|not interested|rather not|decline|skip)\b"
)
_UNSURE = re.compile(r"\b(not sure|maybe|don't know|do not know|perhaps|unsure|hmm)\b")


def read_yes_no(answer: str) -> YesNo:
    """A rule read of an answer to a yes/no question; "unclear" when it says neither or both."""
    t = " ".join(answer.casefold().replace("’", "'").split())
    yes, no, unsure = bool(_YES.search(t)), bool(_NO.search(t)), bool(_UNSURE.search(t))
    if no and not yes:
        return "no"  # "not now, maybe later" declines today's offer
    if yes and not no and not unsure:
        return "yes"
    return "unclear"


_DONT_KNOW = re.compile(
    r"^\W*(i )?(really )?(don'?t|do not|dunno|not sure|no idea|can'?t say|nothing else)"
    r"( know| really| sure| remember| say)?\W*$|^\W*(idk|no|none|nothing|n/?a|skip)\W*$"
)


def is_dont_know(answer: str) -> bool:
    return bool(_DONT_KNOW.match(" ".join(answer.casefold().replace("’", "'").split())))


def when_text(d: date | datetime) -> str:
    """'Monday 16 March at 10:00' (or without the time for a date)."""
    if isinstance(d, datetime):
        return f"{d:%A} {d.day} {d:%B} at {d:%H:%M}"
    return f"{d:%A} {d.day} {d:%B}"


SCHEDULE_QUESTION = "Which day and time would suit you for an appointment?"


# Said when the triage could not tell which specialist fits (agents.assistant.planner.policy.Policy.settle):
# the general physician is a choice made on purpose, and the person should know it.
UNSURE_NOTE = (
    "I could not tell for sure which kind of specialist this needs, so I looked for a general "
    "physician, who can examine you and refer you on."
)


def offer_question(name: str, when: datetime, *, unsure: bool = False) -> str:
    question = f"{name} is free on {when_text(when)}. Shall I book it?"
    return f"{UNSURE_NOTE} {question}" if unsure else question


def reoffer_question(name: str, when: datetime) -> str:
    return f"Sorry, I did not catch that. Shall I book {name} on {when_text(when)}? Please say yes or no."


def booked_message(name: str, when: datetime) -> str:
    return (
        f"Your appointment with {name} is booked for {when_text(when)}. I have saved your "
        "symptoms so the doctor can see them."
    )


DECLINED_MESSAGE = (
    "I have noted your symptoms. Tell me whenever you would like me to book an appointment."
)
NO_SLOT_MESSAGE = (
    "I could not find a free appointment in the coming weeks. I have noted your symptoms; "
    "please call your doctor's practice, or ask me again later."
)
NO_ANSWER_MESSAGE = (
    "I did not hear back, so I have closed this conversation. I have noted your symptoms; "
    "message me again any time."
)
# The crisis route (agents.triage.red_flags): said instead of offering any appointment. It covers
# someone writing about another person ("my daughter has been cutting her arms") too.
CRISIS_MESSAGE = (
    "I am worried about your safety. If you, or the person you are writing about, might act on "
    "thoughts of self-harm or suicide, call emergency services now (999 in the UK, 112 in "
    "Europe, 911 in the US) or press SOS. You can talk to the Samaritans any time, free, on "
    "116 123. I have not booked a routine appointment: this needs help today, so please also "
    "call your GP today and tell someone you trust. I have noted what you told me."
)
# The emergency route (agents.triage.emergency): a physical red flag from the NHS "call 999"
# list. Said instead of any appointment; the watch sentence only to someone who wears one.
EMERGENCY_MESSAGE = (
    "What you describe can be an emergency. Call 999 now (112 in Europe, 911 in the US), or "
    "ask someone near you to call. Do not wait for an appointment: I have not booked one. "
    "I have noted what you told me."
)
EMERGENCY_MESSAGE_WATCH = (
    "What you describe can be an emergency. Call 999 now (112 in Europe, 911 in the US), or "
    "press SOS on your watch: it alerts your emergency contacts and can send an ambulance. "
    "Do not wait for an appointment: I have not booked one. I have noted what you told me."
)
EMERGENCY_MESSAGES = (EMERGENCY_MESSAGE, EMERGENCY_MESSAGE_WATCH)
