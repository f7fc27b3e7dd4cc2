"""Runs one appointment conversation: policy -> (model wording) -> tool -> observation, until
<END>. Every step goes into the brief's trajectory format and is saved as it happens; the
run's resumable state (agents/assistant/run_state.py) goes to a checkpoint before every question, so a
restart can `resume` the run where it stopped.

Booking is guarded twice: the policy only plans confirm_appointment after a yes, and the
registry's confirmation hook checks, from the trajectory itself, that the user said yes to
exactly that specialist and slot.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from agents.assistant.language import YesNo, read_yes_no
from agents.assistant.model_roles import Roles
from agents.assistant.planner.policy import Policy
from agents.assistant.planner.types import CONFIRM, INPUT, NOTIFY, SEARCH, Plan, View, offer_from
from agents.assistant.run_state import (
    AskFn,
    Checkpoint,
    RunState,
    pending_dict,
    pending_plan,
    plan_stub,
)
from agents.assistant.schedule import slot_text
from agents.assistant.trajectory import END, Trajectory
from agents.tools.registry import ToolContext, ToolError, ToolRegistry
from gateway.base.clock import Clock
from gateway.household.model import Household, Person

log = logging.getLogger(__name__)

ACTOR = "assistant"
MAX_STEPS = 24


class SessionIO(Protocol):
    session_id: str

    async def ask(self, question: str, answer_type: str) -> str: ...
    async def reply(self, text: str) -> None: ...


class ResumableIO(SessionIO, Protocol):
    async def answer(self, question: str, answer_type: str) -> str:
        """The answer to a question asked before a restart (it is not sent again)."""
        ...


# Store.save_trajectory fits (keyword arguments; an awaitable return is awaited).
SaveTrajectory = Callable[..., object]


@dataclass
class ConversationResult:
    run_id: str
    person: str
    category: str
    specialization: str | None
    booked: bool
    trajectory: dict[str, Any]
    step_ms: list[float] = field(default_factory=list)
    questions: int = 0


def category_of(plans: list[Plan], booked: bool, declined: bool) -> str:
    spec = next((p.specialization for p in reversed(plans) if p.specialization), None)
    if spec == "dietician":
        return "dietician"
    if any(p.purpose == "follow_up" for p in plans):
        return "counter"
    if declined:
        return "negative"
    return "general"


class Assistant:
    def __init__(
        self,
        registry: ToolRegistry,
        policy: Policy,
        household: Household,
        clock: Clock,
        *,
        roles: Roles | None = None,
        save_trajectory: SaveTrajectory | None = None,
        on_done: Callable[[ConversationResult], Awaitable[None]] | None = None,
    ) -> None:
        self.registry = registry
        self.policy = policy
        self.household = household
        self.clock = clock
        self.roles = roles or Roles(None)
        self._save = save_trajectory
        self._on_done = on_done
        self._yes_no_cache: dict[str, YesNo] = {}

    def _stamp(self) -> str:
        tz = ZoneInfo(self.household.timezone)
        local = datetime.fromtimestamp(self.clock.now(), tz).replace(tzinfo=None)
        return local.isoformat(timespec="seconds")

    async def run(
        self, person_id: str, text: str, io: SessionIO, *, checkpoint: Checkpoint | None = None
    ) -> ConversationResult:
        """One conversation from the user's first message. `checkpoint` receives the run's
        state before every question (durable: the question is about to be sent) and after
        every other step, so a restart can `resume` it."""
        person = self._person(person_id)
        traj = Trajectory(person.id, person.name, self._stamp(), category="appointment")
        traj.user(text)
        st = RunState(uuid.uuid4().hex, person.id, self.clock.now(), traj.to_dict())
        return await self._drive(st, traj, io, io.ask, checkpoint)

    async def resume(
        self, state: RunState, io: ResumableIO, *, checkpoint: Checkpoint | None = None
    ) -> ConversationResult:
        """Go on with a run saved by `checkpoint` before a restart: the same run id and
        trajectory; a pending question is not asked again, its answer comes from
        `io.answer`. Raises TrajectoryError for a saved trajectory that breaks the format."""
        self._person(state.person)
        traj = Trajectory.from_dict(state.trajectory)
        return await self._drive(state, traj, io, io.answer, checkpoint)

    def _person(self, person_id: str) -> Person:
        person = self.household.person(person_id)
        if person is None:
            raise ValueError("unknown person")
        return person

    async def _drive(
        self,
        st: RunState,
        traj: Trajectory,
        io: SessionIO,
        pending_ask: AskFn,
        checkpoint: Checkpoint | None,
    ) -> ConversationResult:
        plans = [plan_stub(p) for p in st.plans]
        pending = st.pending
        while len(plans) < MAX_STEPS and not traj.ended:
            step = len(plans)
            t0 = time.perf_counter()
            ask: AskFn = io.ask
            resumed = pending is not None
            if pending is not None:  # resumed while a question waited for its answer
                plan, reason, params = pending_plan(pending), pending["reason"], pending["params"]
                ask, pending = pending_ask, None
            else:
                view = View.from_states(traj.states)
                await self._read_unclear_answers(view)
                # Triage is milliseconds of CPU per message: off the event loop, so an SOS
                # press arriving meanwhile is handled at once.
                plan = await asyncio.to_thread(self.policy.next, view, yes_no=self._yes_no)
                reason, params = await self._word(plan, view)
            if plan.tool == END:
                plans.append(plan)
                traj.end(reason)
                st.step_ms.append((time.perf_counter() - t0) * 1000)
                break
            if plan.tool == INPUT and checkpoint is not None and not resumed:
                # Write-ahead: the question is in the saved state before the user sees it.
                st.pending = pending_dict(plan, reason, params)
                await self._checkpoint(checkpoint, st, traj, plans, durable=True)
            plans.append(plan)
            ctx = ToolContext(
                actor=ACTOR,
                person=st.person,
                run_id=st.run_id,
                step=step,
                notify_kind="info",
                prompt_id="yes_no" if plan.answer_type == "yes_no" else None,
                confirm=self._consent(traj),
                ask=ask,
                reply=io.reply,
                session_id=io.session_id,
            )
            think_ms = (time.perf_counter() - t0) * 1000
            try:
                result = await self.registry.call(plan.tool, params, ctx=ctx, allowed=plan.allowed)
                traj.step(reason, plan.action, plan.tool, params, result)
                st.booked = st.booked or plan.tool == CONFIRM
            except ToolError as exc:
                log.info("assistant run %s step %d (%s): %s", st.run_id, step, plan.tool,
                         type(exc).__name__)  # fmt: skip
                error = {"type": type(exc).__name__, "message": str(exc)}
                traj.step(reason, plan.action, plan.tool, params, None, error=error)
            # The user's thinking time is not the agent's latency.
            st.step_ms.append(think_ms if plan.tool == INPUT else (time.perf_counter() - t0) * 1000)
            st.declined = st.declined or (
                plan.purpose == "store" and plan.reason.startswith("The user declined")
            )
            st.pending = None
            await self._persist(st.run_id, st.person, traj, "running", st.started, durable=False)
            if checkpoint is not None:
                await self._checkpoint(checkpoint, st, traj, plans, durable=False)
        if not traj.ended:
            traj.end("Stopped: too many steps.")
        category = category_of(plans, st.booked, st.declined)
        traj.category = category
        await self._persist(st.run_id, st.person, traj, "completed", st.started)
        spec = next((p.specialization for p in reversed(plans) if p.specialization), None)
        out = ConversationResult(
            st.run_id,
            st.person,
            category,
            spec,
            st.booked,
            traj.to_dict(),
            st.step_ms,
            questions=sum(1 for p in plans if p.tool == INPUT),
        )
        if self._on_done is not None:
            try:
                await self._on_done(out)
            except Exception:
                log.exception("assistant: on_done hook failed")
        return out

    @staticmethod
    async def _checkpoint(
        checkpoint: Checkpoint, st: RunState, traj: Trajectory, plans: list[Plan], *, durable: bool
    ) -> None:
        st.trajectory = traj.to_dict()
        st.plans = [[p.tool, p.purpose, p.specialization] for p in plans]
        await checkpoint(st, durable)

    # --- language ---------------------------------------------------------------------------

    async def _word(self, plan: Plan, view: View) -> tuple[str, dict[str, Any]]:
        """The model's reason and wording, where they pass their checks."""
        params = dict(plan.params)
        if not self.roles.on:
            return plan.reason, params
        context = (
            f"User said: {view.text}\nStep: {plan.purpose}\nDraft reason: {plan.reason}\n"
            f"Allowed tools: {', '.join(sorted(plan.allowed)) or END}"
        )
        reason, _ = await self.roles.reason(context, sorted(plan.allowed) or [END], plan.reason)
        if "symptoms" in params and not any(
            "symptoms" in c.params for c in view.calls
        ):  # the first time symptoms are written down
            params["symptoms"] = await self.roles.symptoms(
                self.policy.complaint(view), params["symptoms"]
            )
        if plan.tool == INPUT:
            params["questions"] = await self.roles.say(
                plan.purpose, params["questions"], plan.facts, question=True
            )
        elif plan.tool == NOTIFY and plan.facts:
            # Only messages with facts to check are reworded; the others keep their exact
            # template (a rewording could change what the user is told happened).
            params["message"] = await self.roles.say(
                plan.purpose, params["message"], plan.facts, question=False
            )
        return reason, params

    def _yes_no(self, answer: str) -> YesNo:
        got = read_yes_no(answer)
        if got == "unclear":
            return self._yes_no_cache.get(answer, "unclear")
        return got

    async def _read_unclear_answers(self, view: View) -> None:
        """Let the model read an offer answer the rules could not (before the policy runs)."""
        if not self.roles.on or not view.calls:
            return
        last = view.calls[-1]
        if last.tool != INPUT or not isinstance(last.result, str):
            return
        if not any(c.tool == SEARCH for c in view.calls):
            return
        if read_yes_no(last.result) != "unclear" or last.result in self._yes_no_cache:
            return
        q = str(last.params.get("questions", ""))
        self._yes_no_cache[last.result] = await self.roles.yes_no(q, last.result)

    # --- guards and persistence -------------------------------------------------------------

    def _consent(self, traj: Trajectory) -> Callable[[str, Mapping[str, Any]], Awaitable[bool]]:
        async def confirm(tool: str, args: Mapping[str, Any]) -> bool:
            view = View.from_states(traj.states)
            calls = view.calls
            for i in range(len(calls) - 1, -1, -1):
                if calls[i].tool == SEARCH:
                    offer = offer_from(calls[i].result) if calls[i].ok else None
                    if offer is None:
                        return False
                    sid, _, start, end = offer
                    answers = [c for c in calls[i + 1 :] if c.tool == INPUT]
                    said_yes = bool(answers) and self._yes_no(str(answers[-1].result)) == "yes"
                    return (
                        said_yes
                        and args.get("specialist_id") == sid
                        and args.get("appointment_time_date") == slot_text(start, end)
                    )
            return False

        return confirm

    async def _persist(
        self,
        run_id: str,
        person: str,
        traj: Trajectory,
        status: str,
        started: float,
        *,
        durable: bool = True,
    ) -> None:
        if self._save is None:
            return
        try:
            out = await asyncio.to_thread(
                self._save,
                run_id,
                person=person,
                category=traj.category,
                trajectory=traj.to_dict(),
                status=status,
                started_at=started,
                updated_at=self.clock.now(),
                durable=durable,
            )
            if inspect.isawaitable(out):
                await out
        except Exception:
            # The conversation goes on; the audit log still has every call.
            log.exception("assistant: saving trajectory %s failed", run_id)
