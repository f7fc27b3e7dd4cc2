"""What the one local model does for every role (parameter sharing): the planner's reason,
the caller's wording of questions and messages, symptom extraction and reading an unclear
yes/no. Every prompt starts with the same static prefix (its KV cache is reused, so a warm
step only evaluates the short dynamic part); every output is constrained by the grammar of
its pydantic output contract (below), then checked against the facts code already knows. Anything missing, slow, truncated or
wrong falls back to the deterministic wording: the model never decides what happens.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, Protocol, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, create_model

from agents.assistant.language import YesNo
from agents.assistant.trajectory import END
from agents.triage.condense import keeps_terms

STATIC_PREFIX = """You are the home health assistant of a family hub. You help a person book the right kind of specialist for their symptoms. You never diagnose. You work in steps. Code decides which tool runs; you write the words.

Tools:
- get_input_from_user(user_id, questions): ask the user one short question and wait.
- retrieve_past_complaints(user_id, symptoms, date_range): the user's similar earlier complaints.
- get_available_specialists(symptoms, specialization, user_schedule{date, time_range}): a free specialist slot.
- confirm_appointment(user_id, specialist_id, appointment_time_date): book the slot the user accepted.
- save_appointment_history(user_id, symptoms, specialist_id, appointment_time_date): record the booking.
- store_symptoms(user_id, symptoms, timestamp): keep the symptoms for later.
- notify_user(user_id, message): tell the user something.
- <END>: the task is finished.

Specialists: general physician, cardiologist, pulmonologist, gastroenterologist, neurologist, orthopedist, dermatologist, endocrinologist, nephrologist, urologist, gynecologist, ophthalmologist, ent specialist, psychiatrist, oncologist, rheumatologist, hematologist, dietician.

Rules:
1. Answer with one JSON object only, in the format the task asks for.
2. Be short, kind and plain. One or two sentences.
3. Never invent numbers, names, dates or times. Use only the facts given.
4. Never name a disease. Talk about symptoms and the kind of specialist.
5. For a question, end with a question mark.

Tasks:
- PLAN: give {"reason": why this step, "tool": the tool to use}.
- SAY: give {"text": the message or question for the user, keeping every fact}.
- SYMPTOMS: give {"symptoms": the draft list of the user's symptoms, polished, keeping every item}.
- YESNO: give {"answer": "yes", "no" or "unclear"} for the user's reply to a yes/no question.

Examples:
PLAN
User said: My knees ache every morning and my fingers are swollen.
Step: past
Draft reason: The user reports knee aches and swollen fingers; check whether this happened before.
Allowed tools: retrieve_past_complaints
JSON: {"reason": "Knee aches and swollen fingers; check for similar earlier complaints.", "tool": "retrieve_past_complaints"}

PLAN
User said: I have a rash on my arms that itches.
Step: search
Draft reason: The symptoms (rash on arms that itches) fit a dermatologist.
Allowed tools: get_available_specialists
JSON: {"reason": "An itchy rash on the arms fits a dermatologist.", "tool": "get_available_specialists"}

SAY (offer)
Draft: Dr. Sofia Rossi (Dermatologist) is free on Tuesday 17 March at 09:00. Shall I book it?
Facts to keep: Dr. Sofia Rossi (Dermatologist); 09:00; 17
JSON: {"text": "Dr. Sofia Rossi (Dermatologist) can see you on Tuesday 17 March at 09:00. Shall I book it?"}

SYMPTOMS
User: My knees ache every morning and my fingers are swollen.
Draft: knees ache every morning, swollen fingers
JSON: {"symptoms": "morning knee aches, swollen fingers"}

YESNO
Question: Shall I book it?
Reply: go for it
JSON: {"answer": "yes"}
"""


M = TypeVar("M", bound=BaseModel)
M_co = TypeVar("M_co", bound=BaseModel, covariant=True)


class Generation(Protocol[M_co]):
    @property
    def data(self) -> M_co | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def total_ms(self) -> float: ...


class ModelLike(Protocol):
    @property
    def available(self) -> bool: ...

    async def generate(
        self,
        static: str,
        dynamic: str,
        output: type[M],
        *,
        max_tokens: int = 96,
        timeout_s: float = 3.0,
    ) -> Generation[M]: ...


# The output contracts: each is the grammar the model writes under and the check of what it
# wrote (agents/llm/output.py). No other keys than these (extra="forbid").
class _Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlanReply(_Reply):
    reason: str = Field(min_length=5, max_length=120)
    tool: str  # narrowed to the step's allowed tools by `plan_reply`


@lru_cache(maxsize=64)
def plan_reply(tools: tuple[str, ...]) -> type[PlanReply]:
    """The planner's contract for one step: `tool` is one of `tools` (an enum in the
    grammar). Cached: the same tools give the same class, so the same cached grammar."""
    allowed: Any = cast(Any, Literal)[tools]
    return create_model("PlanReply", __base__=PlanReply, tool=(allowed, ...))


class SayReply(_Reply):
    text: str = Field(min_length=10, max_length=300)


class SymptomsReply(_Reply):
    symptoms: str = Field(min_length=3, max_length=120)


class YesNoReply(_Reply):
    answer: Literal["yes", "no", "unclear"]


class Narrative(_Reply):
    """The daily report's summary (NARRATIVE_PROMPT in agents/reports/daily.py)."""

    text: str = Field(max_length=400)


@dataclass
class RoleStats:
    calls: int = 0
    used: int = 0  # output passed the checks and was used
    rejected: dict[str, int] = field(default_factory=dict)
    ms: list[float] = field(default_factory=list)

    def reject(self, why: str) -> None:
        self.rejected[why] = self.rejected.get(why, 0) + 1


_NUM = re.compile(r"\d+")
# What a small model says when it has lost the thread; never shown to anyone.
_BABBLE = re.compile(r"not sure|talking about|as an ai|i cannot|i can't|sorry|language model", re.I)
_WORD = re.compile(r"[a-z]{4,}")


def numbers_ok(text: str, allowed_source: str) -> bool:
    """Every number in `text` appears in `allowed_source` (no invented numbers)."""
    allowed = set(_NUM.findall(allowed_source))
    return all(n in allowed for n in _NUM.findall(text))


def overlap(text: str, source: str) -> float:
    """Share of the words of 4+ letters in `text` whose first 4 letters occur in `source`."""
    words = _WORD.findall(text.casefold())
    if not words:
        return 0.0
    stems = {w[:4] for w in _WORD.findall(source.casefold())}
    return sum(w[:4] in stems for w in words) / len(words)


def repetitive(text: str) -> bool:
    """A small model's loop: a list item or a word said again and again."""
    items = [i.strip() for i in text.casefold().split(",") if i.strip()]
    if len(items) != len(set(items)):
        return True
    words = _WORD.findall(text.casefold())
    return any(words.count(w) > 2 for w in set(words))


def grounded(text: str, source: str) -> bool:
    """Every word of 4+ letters in `text` appears (by its first 4 letters) in `source`."""
    stems = {w[:4] for w in _WORD.findall(source.casefold())}
    return all(w[:4] in stems for w in _WORD.findall(text.casefold()))


class Roles:
    """The model's roles, each with its check and its fallback."""

    def __init__(self, model: ModelLike | None, *, timeout_s: float = 3.0) -> None:
        self.model = model
        self.timeout_s = timeout_s
        self.stats: dict[str, RoleStats] = {}

    @property
    def on(self) -> bool:
        return self.model is not None and self.model.available

    async def _ask(self, role: str, dynamic: str, output: type[M], max_tokens: int) -> M | None:
        st = self.stats.setdefault(role, RoleStats())
        if self.model is None or not self.model.available:
            return None
        st.calls += 1
        gen = await self.model.generate(
            STATIC_PREFIX, dynamic, output, max_tokens=max_tokens, timeout_s=self.timeout_s
        )
        st.ms.append(gen.total_ms)
        if gen.data is None:
            st.reject(gen.error or "no_output")
        return gen.data

    async def warm_up(self, timeout_s: float = 120.0) -> bool:
        """Evaluate the static prefix once (cold: seconds on a small CPU) so every later step
        only pays for its short dynamic part. True when the model answered."""
        if self.model is None or not self.model.available:
            return False
        gen = await self.model.generate(
            STATIC_PREFIX, "YESNO\nQuestion: Ready?\nReply: yes\nJSON:", YesNoReply,
            max_tokens=12, timeout_s=timeout_s,
        )  # fmt: skip
        return gen.data is not None

    def _used(self, role: str) -> None:
        self.stats.setdefault(role, RoleStats()).used += 1

    async def reason(
        self, context: str, allowed: Sequence[str], fallback: str
    ) -> tuple[str, str | None]:
        """(reason, tool the model picked from `allowed`) — the planner step."""
        tools = list(allowed) or [END]
        out = await self._ask("planner", f"PLAN\n{context}\nJSON:", plan_reply(tuple(tools)), 48)
        if out is None:
            return fallback, None
        reason = " ".join(out.reason.split())
        tool = out.tool
        # The reason must be about this step: mostly words of the context, no invented
        # numbers, no babble.
        if (
            tool not in tools
            or len(reason.split()) < 3
            or not numbers_ok(reason, context)
            or overlap(reason, context) < 0.6
            or overlap(reason, fallback) < 0.5  # about this step, not a parroted complaint
            or repetitive(reason)
            or _BABBLE.search(reason)
        ):
            self.stats["planner"].reject("check")
            return fallback, None
        self._used("planner")
        return reason, str(tool)

    async def say(self, kind: str, template: str, facts: Sequence[str], *, question: bool) -> str:
        """Rephrase `template` for the user, keeping every fact; else the template."""
        if not self.on:
            return template
        facts_line = "; ".join(facts) if facts else "none"
        dyn = f"SAY ({kind})\nDraft: {template}\nFacts to keep: {facts_line}\nJSON:"
        out = await self._ask("caller", dyn, SayReply, 96)
        if out is None:
            return template
        text = " ".join(out.text.split())
        ok = (
            all(f.casefold() in text.casefold() for f in facts)
            and numbers_ok(text, template)
            and (text.endswith("?") if question else True)
            and overlap(text, template) >= 0.5
            and not repetitive(text)
            and not _BABBLE.search(text)
        )
        if not ok:
            self.stats["caller"].reject("check")
            return template
        self._used("caller")
        return text

    async def symptoms(self, complaint: str, fallback: str) -> str:
        """A polish of `fallback` (the condensed list, agents.triage.condense): it must keep
        every term of it and use only the user's words; else `fallback`."""
        if not self.on:
            return fallback
        dyn = f"SYMPTOMS\nUser: {complaint}\nDraft: {fallback}\nJSON:"
        out = await self._ask("symptoms", dyn, SymptomsReply, 64)
        if out is None:
            return fallback
        text = " ".join(out.symptoms.split()).strip(" .")
        if (
            len(text) < 3
            or not grounded(text, complaint + " " + fallback)
            or not keeps_terms(text, fallback)
            or not numbers_ok(text, complaint)
            or repetitive(text)
        ):
            self.stats["symptoms"].reject("ungrounded")
            return fallback
        self._used("symptoms")
        return text

    async def yes_no(self, question: str, answer: str) -> YesNo:
        if not self.on:
            return "unclear"
        dyn = f"YESNO\nQuestion: {question}\nReply: {answer}\nJSON:"
        out = await self._ask("yesno", dyn, YesNoReply, 12)
        got = out.answer if out else None
        if got == "yes" or got == "no":
            self._used("yesno")
            return "yes" if got == "yes" else "no"
        return "unclear"

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for role, st in self.stats.items():
            ms = sorted(st.ms)
            out[role] = {
                "calls": st.calls,
                "used": st.used,
                "rejected": dict(st.rejected),
                "mean_ms": round(sum(ms) / len(ms), 1) if ms else None,
            }
        return out
