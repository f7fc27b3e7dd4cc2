"""Hard SOS, End SOS and Soft SOS: fixed playbooks run by deterministic code (never a model).

Every step is journaled (`sos_runs`) before the next one starts. Each step is a pure
function of the run's inputs and the observations recorded so far, so a run interrupted by a
crash is resumed by replaying the journal: completed steps are reused, the next one is rebuilt
identically, and texts carry keys derived from (run, step, recipient) that the TextQueue
deduplicates. No step waits for an fsync: only a run's last write is fsynced, off the loop
(journal.py says why that is safe). Texts are exactly-once, but for a power cut (or kill -9)
between a send and its row: then twice. User notifications (MQTT) are at-least-once.

The parts: journal.py (the durable runs), steps.py (what a step is, the triggers),
hard_steps.py and soft_steps.py (the steps), catalog.py (which steps each playbook takes);
this module runs them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from agents.assistant.trajectory import Trajectory
from agents.playbooks.catalog import PLAYBOOKS
from agents.playbooks.journal import ACTOR, EmitEvent, Kind, SosError, SosJournal, SosRun
from agents.playbooks.soft_texts import soft_user_turn
from agents.playbooks.steps import PRESSED, TRIGGERS, Playbook, Step, _tried, plan
from agents.tools.registry import ToolContext, ToolError, ToolRegistry
from gateway.base.clock import Clock
from gateway.contract.events import HardSosPayload
from gateway.contract.topics import EventType
from gateway.contract.values import Event
from gateway.household.model import Household, Person

log = logging.getLogger(__name__)


class SosRunner:
    """gateway.base.ports.SosHandler, plus soft SOS and crash recovery."""

    def __init__(
        self,
        registry: ToolRegistry,
        journal: SosJournal,
        household: Household,
        emit_event: EmitEvent,
        clock: Clock,
    ) -> None:
        self._registry = registry
        self._journal = journal
        self._household = household
        self._emit_event = emit_event
        self._clock = clock
        self._locks: dict[str, asyncio.Lock] = {}
        self._emits: set[asyncio.Task[None]] = set()
        self._last_emit: asyncio.Task[None] | None = None

    async def start(
        self, person: str, *, device: str | None, location: tuple[float, float] | None, trigger: str
    ) -> bool:
        """Open a hard SOS and run it. False when one is already open: nothing is re-texted and
        the user is told help is already on the way."""
        p = self._person(person)
        async with self._lock(person):
            current = self._read(lambda: self._journal.open_hard(person))
            if current is not None:
                if current.status == "running":  # interrupted and not yet resumed
                    await self._drive(current)
                else:
                    await self._tell_already_open(p, current)
                return False
            user_turn = TRIGGERS.get(trigger, PRESSED).user_turn
            run = self._new_run(p, "hard", trigger, device, user_turn, location=location)
            await self._create(run)
            await self._drive(run)
            return True

    async def end(self, person: str, *, device: str | None, trigger: str) -> bool:
        """Run End SOS for the open hard SOS. False when none is open."""
        p = self._person(person)
        async with self._lock(person):
            hard = self._read(lambda: self._journal.open_hard(person))
            if hard is None:
                return False
            if hard.status == "running":  # finish what was interrupted before standing down
                hard = await self._drive(hard)
            run = self._read(lambda: self._journal.running_end(hard.run_id))
            if run is None:
                turn = "End SOS button pressed" if trigger == "button" else "End SOS requested"
                run = self._new_run(p, "end", trigger, device, turn, ends_run=hard.run_id)
                await self._create(run)
            await self._drive(run)
            return True

    async def soft(
        self,
        person: str,
        abnormal: Mapping[str, Mapping[str, Any]],
        advice: str,
        *,
        severity: str,
        alert_id: str | None,
        response: Mapping[str, Any] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> str:
        """Tell the user which vitals are abnormal and what to do. Returns the run id.
        `abnormal`: vital -> {value, unit, class, range (or normal): [low, high]}; entries of
        class "normal" are left out of the list. `alert_id` is recorded with the run only: the
        notification carries no prompt_id, because the escalation watcher owns the "are you
        OK?" prompt and matches acks by its own prompt ids."""
        p = self._person(person)
        plain = json.loads(json.dumps({k: dict(v) for k, v in abnormal.items()}, default=str))
        params = {"abnormal": plain, "advice": advice, "severity": severity, "alert_id": alert_id,
                  "response": dict(response or {"tell_wearer": True}),
                  **json.loads(json.dumps(dict(extra or {}), default=str))}  # fmt: skip
        async with self._lock(person):
            run = self._new_run(p, "soft", "monitor", None, soft_user_turn(plain), params=params)
            await self._create(run)
            await self._drive(run)
            return run.run_id

    async def unanswered(self, person: str, *, prompt_id: str, reason: str, summary: str) -> bool:
        """The wearer did not answer "are you OK?": text the emergency contacts (the
        escalation watcher's ContactNotifier). Journaled like any run: exactly once."""
        p = self._person(person)
        params = {"mode": "unanswered", "prompt_id": prompt_id, "reason": reason,
                  "summary": summary, "abnormal": {}, "advice": "", "severity": "urgent"}  # fmt: skip
        async with self._lock(person):
            turn = "Soft SOS unanswered: texting the emergency contacts"
            run = self._new_run(p, "soft", "unanswered", None, turn, params=params)
            await self._create(run)
            run = await self._drive(run)
            # True only if someone was texted: otherwise the watcher sends an ambulance.
            done = Trajectory.from_dict(run.trajectory).calls()
            return any(c.tool == "send_message" and c.ok for c in done)

    async def resume(self) -> list[str]:
        """Continue every run a crash interrupted (per person in start order; persons in
        parallel). Returns the run ids resumed."""
        by_person: dict[str, list[str]] = {}
        for run in self._journal.unfinished():
            by_person.setdefault(run.person, []).append(run.run_id)
        resumed: list[str] = []

        async def one(person: str, run_ids: list[str]) -> None:
            async with self._lock(person):
                for run_id in run_ids:
                    run = self._journal.get(run_id)  # a press may have finished it meanwhile
                    if run is not None and run.status == "running":
                        log.info("resuming sos run %s at step %d", run_id, run.step)
                        await self._drive(run)
                        resumed.append(run_id)

        results = await asyncio.gather(
            *(one(p, ids) for p, ids in by_person.items()), return_exceptions=True
        )
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, Exception):
                raise r
            if isinstance(r, Exception):
                log.error("resuming sos runs failed: %s", type(r).__name__)
        return resumed

    async def drain(self) -> None:
        """Wait for the events already handed to emit_event (call on shutdown)."""
        while self._emits:
            await asyncio.gather(*list(self._emits), return_exceptions=True)

    def open_sos(self, person: str) -> dict[str, Any] | None:
        run = self._journal.open_hard(person)
        return run.as_dict() if run is not None else None

    # --- internals --------------------------------------------------------------------------

    def _person(self, person: str) -> Person:
        p = self._household.person(person)
        if p is None:
            raise SosError("unknown person")
        return p

    def _lock(self, person: str) -> asyncio.Lock:
        return self._locks.setdefault(person, asyncio.Lock())

    def _new_run(
        self,
        p: Person,
        kind: Kind,
        trigger: str,
        device: str | None,
        user_turn: str,
        *,
        location: tuple[float, float] | None = None,
        ends_run: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> SosRun:
        now = self._clock.now()
        stamp = (
            datetime.fromtimestamp(now, ZoneInfo(self._household.timezone))
            .replace(tzinfo=None)
            .isoformat(timespec="seconds")
        )
        traj = Trajectory(p.id, p.name, stamp, category=PLAYBOOKS[kind].category)
        traj.user(user_turn)
        return SosRun(
            run_id=uuid.uuid4().hex,
            person=p.id,
            kind=kind,
            trigger=trigger,
            device=device,
            state="open",
            status="running",
            step=0,
            location=location,
            ambulance_id=None,
            ambulance_phone=None,
            ends_run=ends_run,
            params=dict(params or {}),
            trajectory=traj.to_dict(),
            started_at=now,
            updated_at=now,
        )

    async def _drive(self, run: SosRun) -> SosRun:
        """Run `run` from its next step to <END>. Tool errors become observations and the run
        goes on (contacts are still texted when no ambulance was found). Cancellation and
        crashes propagate untouched: the journal then holds the run for resume()."""
        pb = PLAYBOOKS[run.kind]
        person = self._household.person(run.person)
        try:
            if person is None:
                raise SosError("person no longer in the household")
            traj = Trajectory.from_dict(run.trajectory)
            if run.kind == "hard" and _tried(traj.calls(), "search_ambulance"):
                await self._emit_hard(run)  # it may have been lost in the crash (stable id)
            while (nxt := plan(pb, run, person, traj.calls())) is not None:
                index, step = nxt
                run = await self._execute(run, pb, traj, index, step)
                if run.kind == "hard" and step.tool == "search_ambulance":
                    await self._emit_hard(run)
            return await self._finish(run, pb, traj)
        except Exception as exc:
            log.error("sos run %s failed: %s", run.run_id, type(exc).__name__)
            run = replace(run, status="failed", updated_at=self._clock.now())
            await self._save(run, final=True)
            return run

    async def _execute(
        self, run: SosRun, pb: Playbook, traj: Trajectory, index: int, step: Step
    ) -> SosRun:
        ctx = ToolContext(
            actor=ACTOR,
            person=run.person,
            run_id=run.run_id,
            step=index,
            notify_kind=pb.notify_kind,
            location=run.location,
            rate_limited=False,  # see ToolContext.rate_limited
        )
        try:
            result = await self._registry.call(
                step.tool, step.params, ctx=ctx, allowed=(step.tool,)
            )
            traj.step(step.reason, step.action, step.tool, step.params, result)
        except ToolError as exc:
            log.warning(
                "sos run %s step %d (%s): %s", run.run_id, index, step.tool, type(exc).__name__
            )
            error = {"type": type(exc).__name__, "message": str(exc)}
            traj.step(step.reason, step.action, step.tool, step.params, None, error=error)
            result = None
        changes: dict[str, Any] = {}
        if step.tool == "get_location" and isinstance(result, Mapping):
            changes["location"] = (float(result["latitude"]), float(result["longitude"]))
        if step.tool in ("search_ambulance", "get_assigned_ambulance") and isinstance(
            result, Mapping
        ):
            changes["ambulance_id"] = result["ambulance_id"]
            changes["ambulance_phone"] = result["phone_no"]
        run = replace(
            run,
            step=index + 1,
            trajectory=traj.to_dict(),
            updated_at=self._clock.now(),
            **changes,
        )
        await self._save(run)
        return run

    async def _finish(self, run: SosRun, pb: Playbook, traj: Trajectory) -> SosRun:
        done = traj.calls()
        traj.end(pb.end_reason(done))
        run = replace(
            run,
            status="completed" if all(c.ok for c in done) else "failed",
            trajectory=traj.to_dict(),
            updated_at=self._clock.now(),
            # The hard SOS stays open (its ambulance remembered) until End SOS closes it.
            state="open" if run.kind == "hard" else "closed",
        )
        if run.kind == "end":
            try:
                await self._journal.finish_end(run)
            except Exception:
                log.exception("closing sos run %s failed", run.ends_run)
            await self._emit(
                Event(
                    EventType.SOS_END,
                    run.person,
                    self._clock.now(),
                    {
                        "run_id": run.ends_run,
                        "end_run_id": run.run_id,
                        "trigger": run.trigger,
                        "device": run.device,
                        "ambulance_id": run.ambulance_id,
                    },
                    id=f"{run.run_id}:sos_end",
                )
            )
        else:
            await self._save(run, final=True)  # fsynced: the press is acknowledged after it
        return run

    async def _tell_already_open(self, p: Person, run: SosRun) -> None:
        if run.ambulance_id is not None:
            msg = (
                f"Your SOS is already active: ambulance {run.ambulance_id} has been texted and "
                "help is on the way. Press End SOS if you no longer need help."
            )
        else:
            msg = (
                "Your SOS is already active, but no ambulance could be texted automatically. "
                "Call emergency services now."
            )
        ctx = ToolContext(
            actor=ACTOR, person=p.id, run_id=run.run_id, notify_kind="sos", rate_limited=False
        )
        try:
            await self._registry.call(
                "notify_user", {"user_id": p.id, "message": msg}, ctx=ctx, allowed=("notify_user",)
            )
        except ToolError as exc:
            log.warning(
                "sos run %s: repeat-press notice failed: %s", run.run_id, type(exc).__name__
            )

    async def _emit_hard(self, run: SosRun) -> None:
        # Right after search_ambulance (in memory, microseconds), so it carries the ambulance
        # and goes out before the texts are queued.
        await self._emit(
            Event(
                EventType.HARD_SOS,
                run.person,
                self._clock.now(),
                HardSosPayload(run.run_id, run.trigger, run.device, run.ambulance_id).to_data(),
                id=f"{run.run_id}:hard_sos",
            )
        )

    async def _emit(self, event: Event) -> None:
        # In the background (a stuck subscriber must never hold up a text or the person's lock)
        # and in order (the ladder sees an SOS start before its end). Ids are stable: a re-emit
        # after resume dedupes.
        prev, name = self._last_emit, f"sos-event:{event.id}"
        task = self._last_emit = asyncio.create_task(self._emit_now(event, prev), name=name)
        self._emits.add(task)
        task.add_done_callback(self._emits.discard)

    async def _emit_now(self, event: Event, prev: asyncio.Task[None] | None) -> None:
        if prev is not None:
            await asyncio.wait([prev])
        try:
            await self._emit_event(event)
        except Exception:
            log.exception("emitting %s failed", event.type)

    def _read(self, fn: Callable[[], SosRun | None]) -> SosRun | None:
        try:
            return fn()
        except Exception:
            # A broken journal must not stop an SOS: proceeding may re-text, never go silent.
            log.exception("reading the sos journal failed")
            return None

    async def _create(self, run: SosRun) -> None:
        try:
            await self._journal.create(run)
        except Exception:
            log.exception("journaling sos run %s failed; running it unjournaled", run.run_id)

    async def _save(self, run: SosRun, *, final: bool = False) -> None:
        try:
            await self._journal.save(run, final=final)
        except Exception:
            log.exception("journaling sos run %s failed", run.run_id)
