"""The brief's appointment and memory tools (names and parameters are the trained contract),
backed by the household's specialist directory and the assistant's long-term memory."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agents.assistant.memory import LongTermMemory, SlotTaken
from agents.assistant.schedule import Schedule, find_slot, parse_slot_text
from agents.tools.declare import register_all, tool
from agents.tools.registry import (
    ToolContext,
    ToolPermissionError,
    ToolRegistry,
    ToolUpstreamError,
    ToolValidationError,
)
from gateway.base.clock import Clock
from gateway.contract.topics import ID_PATTERN
from gateway.household.model import SPECIALIZATIONS, Household, Person

UserId = Annotated[str, Field(pattern=ID_PATTERN)]
Symptoms = Annotated[str, Field(min_length=1, max_length=500)]
SlotText = Annotated[
    str, Field(pattern=r"^\d{2}:\d{2}-\d{2}:\d{2}, \d{2}/\d{2}/\d{4}$", max_length=24)
]
IsoDate = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$")]
TimeRange = Annotated[str, Field(pattern=r"^\d{2}:\d{2}-\d{2}:\d{2}$")]
_ARGS = ConfigDict(extra="forbid", frozen=True)

# Specialty of a free-text complaint (the triage classifier), for a search without one.
Classify = Callable[[str], str]
# A stored follow-up (id, person, due day) to send on its day (agents.scheduling.follow_ups).
ScheduleFollowUp = Callable[[str, str, date], object]


class NoSpecialistError(ToolUpstreamError):
    def __init__(self, message: str) -> None:
        super().__init__(message, transient=False)


# --- argument models ---------------------------------------------------------------------------


class GetInputArgs(BaseModel):
    model_config = _ARGS
    user_id: UserId
    questions: str = Field(min_length=1, max_length=500)


class DateRange(BaseModel):
    model_config = _ARGS
    start_date: IsoDate | None = None
    end_date: IsoDate | None = None


class PastComplaintsArgs(BaseModel):
    model_config = _ARGS
    user_id: UserId
    symptoms: Symptoms
    date_range: DateRange | None = None


class UserSchedule(BaseModel):
    model_config = _ARGS
    date: IsoDate
    time_range: TimeRange | None = None

    @field_validator("date")
    @classmethod
    def _real_date(cls, v: str) -> str:
        date.fromisoformat(v)
        return v


class SpecialistsArgs(BaseModel):
    model_config = _ARGS
    symptoms: Symptoms
    specialization: str | None = None
    user_schedule: UserSchedule

    @field_validator("specialization")
    @classmethod
    def _known(cls, v: str | None) -> str | None:
        if v is None:
            return v
        v = v.strip().lower()
        if v not in SPECIALIZATIONS:
            raise ValueError("unknown specialization")
        return v


class AppointmentArgs(BaseModel):
    model_config = _ARGS
    user_id: UserId
    specialist_id: Annotated[str, Field(pattern=ID_PATTERN)]
    appointment_time_date: SlotText


class SaveHistoryArgs(BaseModel):
    model_config = _ARGS
    user_id: UserId
    symptoms: Symptoms
    specialist_id: Annotated[str, Field(pattern=ID_PATTERN)]
    appointment_time_date: SlotText


class UserOnlyArgs(BaseModel):
    model_config = _ARGS
    user_id: UserId


class StoreSymptomsArgs(BaseModel):
    model_config = _ARGS
    user_id: UserId
    symptoms: Symptoms
    timestamp: str = Field(min_length=10, max_length=40)

    @field_validator("timestamp")
    @classmethod
    def _iso(cls, v: str) -> str:
        datetime.fromisoformat(v.replace("Z", "+00:00"))
        return v


class FollowUpArgs(BaseModel):
    model_config = _ARGS
    user_id: UserId
    current_symptoms: Symptoms
    past_complaints: list[dict[str, Any]] | str | None = None
    preferred_contact_method: str | None = Field(default=None, max_length=32)


# --- implementations ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AppointmentToolDeps:
    household: Household
    memory: LongTermMemory
    clock: Clock
    classify: Classify | None = None
    schedule_follow_up: ScheduleFollowUp | None = None


_BOOKING: dict[str, Any] = {
    "risk": "medium",
    "phi": False,
    "off_loop": True,
    # Booking acts in the world: only after the user said yes to this exact slot.
    "requires_confirmation": True,
    "rate_limit": (5, 3600.0),
    "description": "Book the slot with the specialist.",
    "max_attempts": 1,
}


@dataclass(frozen=True, slots=True)
class AppointmentTools:
    deps: AppointmentToolDeps

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.deps.household.timezone)

    def now_local(self) -> datetime:
        return datetime.fromtimestamp(self.deps.clock.now(), self.tz).replace(tzinfo=None)

    def _person(self, ctx: ToolContext, user_id: str) -> Person:
        if ctx.person is not None and user_id != ctx.person:
            raise ToolPermissionError("user_id is not the person this run is for")
        person = self.deps.household.person(user_id)
        if person is None:
            raise ToolValidationError("user_id: unknown person", fields=("user_id",))
        return person

    @tool(
        "get_input_from_user",
        GetInputArgs,
        risk="low",
        phi=True,
        phi_result=True,
        rate_limit=(30, 60.0),
        description="Ask the user a question and wait for the answer.",
        # The question itself bounds the wait (the session's idle timeout).
        timeout_s=24 * 3600,
        max_attempts=1,
    )
    async def get_input_from_user(self, args: GetInputArgs, ctx: ToolContext) -> str:
        self._person(ctx, args.user_id)
        if ctx.ask is None:
            raise ToolPermissionError("nobody can be asked here")
        # The caller marks an offer ("Shall I book it?") as a yes/no question.
        answer_type = "yes_no" if ctx.prompt_id == "yes_no" else "free_text"
        return await ctx.ask(args.questions, answer_type)

    @tool(
        "retrieve_past_complaints",
        PastComplaintsArgs,
        risk="low",
        phi=True,
        off_loop=True,
        phi_fields=frozenset({"symptoms"}),
        phi_result=True,
        description="The user's earlier complaints similar to these symptoms.",
    )
    def retrieve_past_complaints(
        self, args: PastComplaintsArgs, ctx: ToolContext
    ) -> list[dict[str, str]]:
        self._person(ctx, args.user_id)
        dr = args.date_range
        start = date.fromisoformat(dr.start_date) if dr and dr.start_date else None
        end = date.fromisoformat(dr.end_date) if dr and dr.end_date else None
        return self.deps.memory.similar_complaints(
            args.user_id, args.symptoms, start=start, end=end
        )

    @tool(
        "get_available_specialists",
        SpecialistsArgs,
        risk="low",
        phi=True,
        off_loop=True,
        phi_fields=frozenset({"symptoms"}),
        description="A specialist of the kind needed with a free slot fitting the schedule.",
    )
    def get_available_specialists(self, args: SpecialistsArgs, ctx: ToolContext) -> dict[str, Any]:
        spec = args.specialization
        if spec is None:
            spec = self.deps.classify(args.symptoms) if self.deps.classify else "general physician"
        pool = [s for s in self.deps.household.specialists if s.specialization == spec]
        if not pool:
            raise NoSpecialistError(f"no {spec} is in the directory")
        sched = args.user_schedule
        start_s, end_s = (sched.time_range or "09:00-17:00").split("-")
        schedule = Schedule(
            date.fromisoformat(sched.date),
            datetime.strptime(start_s, "%H:%M").time(),
            datetime.strptime(end_s, "%H:%M").time(),
        )
        slot = find_slot(
            pool,
            schedule,
            now=self.now_local(),
            taken=self.deps.memory.taken([s.id for s in pool]),
            tz=self.tz,
        )
        if slot is None:
            raise NoSpecialistError(f"no {spec} has a free slot in the coming weeks")
        return slot.as_result()

    # One booking, two names (the paper's trajectories use both).
    @tool("confirm_appointment", AppointmentArgs, **_BOOKING)
    @tool("book_appointment", AppointmentArgs, **_BOOKING)
    def confirm_appointment(self, args: AppointmentArgs, ctx: ToolContext) -> bool:
        self._person(ctx, args.user_id)
        specialist = next(
            (s for s in self.deps.household.specialists if s.id == args.specialist_id), None
        )
        if specialist is None:
            raise ToolValidationError(
                "specialist_id: unknown specialist", fields=("specialist_id",)
            )
        try:
            start, end = parse_slot_text(args.appointment_time_date)
        except ValueError:
            raise ToolValidationError(
                "appointment_time_date: not a valid time and date",
                fields=("appointment_time_date",),
            ) from None
        if start <= self.now_local():
            raise ToolValidationError(
                "appointment_time_date: the slot is in the past", fields=("appointment_time_date",)
            )
        try:
            self.deps.memory.book(
                args.user_id, specialist.id, start, end, args.appointment_time_date
            )
        except SlotTaken:
            raise ToolUpstreamError(
                "confirm_appointment: the slot was taken", transient=False
            ) from None
        return True

    @tool(
        "save_appointment_history",
        SaveHistoryArgs,
        risk="low",
        phi=True,
        off_loop=True,
        phi_fields=frozenset({"symptoms"}),
        description="Record the booked appointment in the user's history.",
    )
    def save_appointment_history(self, args: SaveHistoryArgs, ctx: ToolContext) -> bool:
        self._person(ctx, args.user_id)
        self.deps.memory.save_history(
            args.user_id, args.specialist_id, args.appointment_time_date, args.symptoms
        )
        return True

    @tool(
        "get_appointment_history",
        UserOnlyArgs,
        risk="low",
        phi=True,
        phi_result=True,
        description="The user's appointment history.",
    )
    def get_appointment_history(self, args: UserOnlyArgs, ctx: ToolContext) -> list[dict[str, Any]]:
        self._person(ctx, args.user_id)
        return self.deps.memory.history(args.user_id)

    @tool(
        "store_symptoms",
        StoreSymptomsArgs,
        risk="low",
        phi=True,
        off_loop=True,
        phi_fields=frozenset({"symptoms"}),
        rate_limit=(30, 3600.0),
        description="Keep the symptoms in the user's long-term memory.",
    )
    def store_symptoms(self, args: StoreSymptomsArgs, ctx: ToolContext) -> bool:
        self._person(ctx, args.user_id)
        self.deps.memory.store_complaint(
            args.user_id, args.symptoms, args.timestamp, ctx.session_id
        )
        return True

    @tool(
        "follow_up_with_user",
        FollowUpArgs,
        risk="low",
        phi=True,
        phi_fields=frozenset({"current_symptoms", "past_complaints"}),
        description="Plan a check-in with the user about their symptoms.",
    )
    def follow_up_with_user(self, args: FollowUpArgs, ctx: ToolContext) -> dict[str, str]:
        person = self._person(ctx, args.user_id)
        method = (args.preferred_contact_method or "").strip().lower()
        if method not in ("sms", "app", "watch", "call"):
            method = "app"
        if method in ("sms", "call") and person.phone is None:
            method = "app"
        recurring = bool(args.past_complaints)
        days = 2 if recurring else 3
        due = self.now_local().date() + timedelta(days=days)
        next_steps = f"I will check in with you on {due:%A %d %B} about how your symptoms are." + (
            " They have come back before, so please consider seeing a doctor." if recurring else ""
        )
        fid = self.deps.memory.add_follow_up(
            person.id, method, next_steps, args.current_symptoms, due
        )
        if self.deps.schedule_follow_up is not None:
            self.deps.schedule_follow_up(fid, person.id, due)
        return {"method": method, "next_steps": next_steps}


APPOINTMENT_TOOLS = (
    "get_input_from_user",
    "retrieve_past_complaints",
    "get_available_specialists",
    "confirm_appointment",
    "book_appointment",
    "save_appointment_history",
    "get_appointment_history",
    "store_symptoms",
    "follow_up_with_user",
)


def register_appointment_tools(reg: ToolRegistry, deps: AppointmentToolDeps) -> AppointmentTools:
    t = AppointmentTools(deps)
    register_all(reg, t)
    return t
