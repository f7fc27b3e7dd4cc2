"""The brief's SOS tools (names and parameters are the trained contract) and their factory.

Nothing here waits on a model, an HTTP request or a readings flush: texts go to the durable
TextQueue (persist + return), notifications to the broker, lookups are in memory or one
indexed SQLite read.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agents.tools.declare import register_all, tool
from agents.tools.registry import (
    AuditSink,
    ToolContext,
    ToolPermissionError,
    ToolRegistry,
    ToolUpstreamError,
    ToolValidationError,
)
from gateway.base.clock import Clock
from gateway.base.ports import Publisher, TextQueue
from gateway.contract.topics import ID_PATTERN, Location, NotifyPayload, format_ts, notify_topic
from gateway.household.model import Household, Person

EARTH_RADIUS_KM = 6371.0088
Phone = Annotated[str, Field(pattern=r"^\+[1-9][0-9]{6,14}$")]
UserId = Annotated[str, Field(pattern=ID_PATTERN)]
_ARGS = ConfigDict(extra="forbid", frozen=True)

# person id -> latest (latitude, longitude) a device reported, or None. Must be an in-memory
# lookup (e.g. the monitor's latest-reading cache): it runs on the SOS path.
LocationLookup = Callable[[str], tuple[float, float] | None]


class AmbulanceAssignments(Protocol):
    """The SOS journal: which ambulance the person's open SOS texted."""

    def assigned_ambulance(self, person: str) -> tuple[str, str] | None:
        """(ambulance_id, phone) of the open hard SOS, or None."""
        ...


class NoAmbulanceError(ToolUpstreamError):
    """No ambulance is configured (search) or assigned (open SOS)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, transient=False)


@dataclass(frozen=True, slots=True)
class SosToolDeps:
    publisher: Publisher
    texts: TextQueue
    household: Household
    location_lookup: LocationLookup
    journal: AmbulanceAssignments
    audit: AuditSink | None
    clock: Clock


# --- argument models (the brief's parameter names) ------------------------------------------


# The longest message a watch is sent, and the longest text (Twilio's limit for one message,
# sent as up to 10 segments). The playbooks' templates keep within them (soft_texts.py).
NOTIFY_MAX = 1000
SMS_MAX = 1600


class NotifyUserArgs(BaseModel):
    model_config = _ARGS
    user_id: UserId
    message: str = Field(min_length=1, max_length=NOTIFY_MAX)


class NoArgs(BaseModel):
    model_config = _ARGS


class SearchAmbulanceArgs(BaseModel):
    model_config = _ARGS
    location: Location


class AssignedAmbulanceArgs(BaseModel):
    model_config = _ARGS
    user_id: UserId


class SendMessageArgs(BaseModel):
    model_config = _ARGS
    text: str = Field(min_length=1, max_length=SMS_MAX)
    phone_no: Phone | None = None
    to_emergency_contacts: bool = False

    @model_validator(mode="after")
    def _recipient(self) -> SendMessageArgs:
        if self.phone_no is None and not self.to_emergency_contacts:
            raise ValueError("needs phone_no or to_emergency_contacts")
        return self


# --- pure helpers ----------------------------------------------------------------------------


def haversine_km(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Great-circle distance between two (latitude, longitude) points in km."""
    lat1, lon1, lat2, lon2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    h = (
        math.sin((lat2 - lat1) / 2) ** 2
        + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    )
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(h)))


def text_key(run_id: str, step: int, phone: str) -> str:
    """Idempotency key of one text: the same run, step and recipient always give the same key,
    so a resumed run re-submits without sending twice. The phone is hashed: keys get logged."""
    digest = hashlib.sha256(phone.encode()).hexdigest()[:16]
    return f"{run_id}:{step}:{digest}"


# --- the tools -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SosTools:
    deps: SosToolDeps

    def _person(self, ctx: ToolContext, user_id: str | None = None) -> Person:
        pid = user_id if user_id is not None else ctx.person
        if pid is None:
            raise ToolPermissionError("no person in the call context")
        # A caller may only act for the person the run is about.
        if ctx.person is not None and pid != ctx.person:
            raise ToolPermissionError("user_id is not the person this run is for")
        person = self.deps.household.person(pid)
        if person is None:
            raise ToolValidationError("user_id: unknown person", fields=("user_id",))
        return person

    @tool(
        "notify_user",
        NotifyUserArgs,
        risk="medium",
        phi=True,
        phi_fields=frozenset({"message"}),
        rate_limit=(30, 60.0),
        description="Tell the user something on their devices.",
        # Short: it comes first in the SOS sequence, ahead of the ambulance text.
        timeout_s=0.5,
        max_attempts=2,
    )
    async def notify_user(self, args: NotifyUserArgs, ctx: ToolContext) -> bool:
        self._person(ctx, args.user_id)
        payload = NotifyPayload(
            text=args.message,
            kind=ctx.notify_kind,
            prompt_id=ctx.prompt_id,
            ts=format_ts(self.deps.clock.now()),
        )
        await self.deps.publisher.publish(
            notify_topic(args.user_id), payload.model_dump_json(exclude_none=True), qos=1
        )
        if ctx.reply is not None:  # the user is chatting: say it in the conversation too
            await ctx.reply(args.message)
        return True

    @tool(
        "get_location",
        NoArgs,
        risk="low",
        phi=True,
        phi_fields=frozenset({"latitude", "longitude"}),
        description="The user's current location.",
    )
    def get_location(self, args: NoArgs, ctx: ToolContext) -> dict[str, float]:
        person = self._person(ctx)
        # The press's own fix is freshest; then the latest device fix; then home.
        loc = ctx.location or self.deps.location_lookup(person.id)
        if loc is None:
            loc = (person.location.latitude, person.location.longitude)
        return {"latitude": loc[0], "longitude": loc[1]}

    @tool(
        "search_ambulance",
        SearchAmbulanceArgs,
        risk="low",
        phi=True,
        phi_fields=frozenset({"location"}),
        description="The nearest ambulance to a location.",
    )
    def search_ambulance(self, args: SearchAmbulanceArgs, ctx: ToolContext) -> dict[str, str]:
        here = (args.location.latitude, args.location.longitude)
        ambulances = self.deps.household.ambulances
        if not ambulances:
            raise NoAmbulanceError("search_ambulance: no ambulance is configured")
        # min() keeps the first of equally near ambulances: the household file's order decides.
        best = min(
            ambulances,
            key=lambda a: haversine_km(here, (a.location.latitude, a.location.longitude)),
        )
        return {"ambulance_id": best.id, "phone_no": best.phone}

    @tool(
        "get_assigned_ambulance",
        AssignedAmbulanceArgs,
        risk="low",
        phi=False,
        description="The ambulance texted by the user's open SOS.",
    )
    def get_assigned_ambulance(
        self, args: AssignedAmbulanceArgs, ctx: ToolContext
    ) -> dict[str, str]:
        self._person(ctx, args.user_id)
        assigned = self.deps.journal.assigned_ambulance(args.user_id)
        if assigned is None:
            raise NoAmbulanceError("get_assigned_ambulance: no ambulance is assigned")
        return {"ambulance_id": assigned[0], "phone_no": assigned[1]}

    @tool(
        "send_message",
        SendMessageArgs,
        risk="high",
        phi=True,
        phi_fields=frozenset({"text", "phone_no"}),
        # No confirmation: on the SOS path nobody may be able to answer (the user pressed
        # SOS or did not respond), and waiting would delay the ambulance. The decision to
        # text is made by deterministic playbook code, never by a model, and the rate limit
        # bounds any runaway caller.
        requires_confirmation=False,
        rate_limit=(20, 60.0),
        description="Text a phone number and/or every emergency contact of the user.",
    )
    def send_message(self, args: SendMessageArgs, ctx: ToolContext) -> bool:
        recipients: list[tuple[str, str]] = []  # (phone, role)
        if args.phone_no is not None:
            recipients.append((args.phone_no, "direct"))
        if args.to_emergency_contacts:
            person = self._person(ctx)
            recipients += [(c.phone, "contact") for c in person.emergency_contacts]
            if not person.emergency_contacts and args.phone_no is None:
                raise ToolValidationError(
                    "to_emergency_contacts: the person has no emergency contacts",
                    fields=("to_emergency_contacts",),
                )
        failed = 0
        seen: set[str] = set()
        for phone, role in recipients:
            if phone in seen:  # a contact who is also phone_no gets one text
                continue
            seen.add(phone)
            if ctx.run_id is not None and ctx.step is not None:
                key = text_key(ctx.run_id, ctx.step, phone)
            else:  # outside a journaled run there is nothing to resume, so nothing to dedupe
                key = f"adhoc:{uuid.uuid4().hex}"
            try:
                self.deps.texts.submit(
                    to=phone,
                    body=args.text,
                    key=key,
                    person=ctx.person or "",
                    purpose=f"{ctx.notify_kind}:{role}",
                )
            except Exception:
                # Keep going: one bad recipient must not stop the others.
                failed += 1
        if failed:
            # Transient: a retry re-submits every key, and the queue drops the ones it has.
            raise ToolUpstreamError(
                f"send_message: {failed} of {len(seen)} texts were not queued", transient=True
            )
        return True


def build_sos_registry(
    deps: SosToolDeps,
    *,
    registry: ToolRegistry | None = None,
) -> ToolRegistry:
    """Register the SOS tools (into `registry` if given, else a new one auditing to deps.audit)."""
    reg = registry or ToolRegistry(audit=deps.audit, clock=deps.clock)
    register_all(reg, SosTools(deps))
    return reg
