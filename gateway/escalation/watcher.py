"""Prompts that must be answered: "are you OK?" after an alert, an implausible-but-possible
reading (a vanished pulse) or a fall. Each carries what happens without an answer (the
monitor's decision, gateway/monitor/response.py): nothing, text the contacts, or a hard SOS.
"Not OK" is a hard SOS at once; "OK" answers every pending prompt of the person and snoozes
the alerts they were about. Prompts are rows in safety.db with a wall-clock deadline, not
sleeping tasks: a restart resumes the countdown, and a deadline that passed while the hub was
down escalates at once. Deterministic: nothing here waits on a model or the network.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from gateway.base.clock import Clock
from gateway.base.db import Database
from gateway.base.loop_health import TickHealth, run_ticks
from gateway.base.ports import Publisher, SosHandler
from gateway.base.supervise import describe
from gateway.contract.topics import EventType, NotifyPayload, format_ts, notify_topic
from gateway.contract.values import Event
from gateway.escalation.prompt_store import OnNoAnswer, Prompt, PromptStore
from gateway.escalation.words import (
    alert_question,
    fall_question,
    implausible_question,
    unconfirmed_question,
)

log = logging.getLogger(__name__)

Emit = Callable[[Event], Awaitable[None]]
_RANK = {"none": 0, "contacts": 1, "hard_sos": 2}
# An unarmed prompt ("are you OK?" about a mild value) stops being pending after this long.
UNARMED_TTL_S = 3600.0
# The least time a wearer is given to answer a question whose countdown began earlier.
MIN_ANSWER_S = 15.0


class ContactNotifier(Protocol):
    """Texts the emergency contacts that the wearer did not answer (agents implement it)."""

    async def unanswered(
        self, person: str, *, prompt_id: str, reason: str, summary: str
    ) -> bool: ...


class EscalationWatcher:
    def __init__(
        self,
        db: Database,
        publisher: Publisher,
        sos: SosHandler,
        emit: Emit,
        clock: Clock,
        *,
        contacts: ContactNotifier | None = None,
        after_contacts: Callable[[str, list[str]], None] | None = None,
        window_s: float = 60,
        fall_window_s: float = 60,
        poll_s: float = 0.25,
    ) -> None:
        self._db = db
        self._pub = publisher
        self._sos = sos
        self._emit = emit
        self._clock = clock
        self.contacts = contacts
        # Told when the contacts were texted about an unanswered alert: the monitor asks again
        # later while the value stays urgent (no answer is not "I'm OK").
        self.after_contacts = after_contacts
        self.window_s = window_s
        self.fall_window_s = fall_window_s
        self.poll_s = poll_s
        self._task: asyncio.Task[None] | None = None
        self.health = TickHealth("escalation")  # 3 failed ticks in a row: not running()
        self.escalations = 0
        self._store = PromptStore(db)
        self._pending: dict[str, Prompt] = {}
        self._load()

    # --- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        if self._task is None or self._task.done():  # the watch's restart hook too
            self._task = asyncio.create_task(self._loop(), name="escalation")

    async def stop(self) -> None:
        # The rows stay pending: the next start resumes their countdowns.
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def running(self) -> bool:  # its loop runs and ticks: the `escalation` watch, ready()
        return self._task is not None and not self._task.done() and self.health.healthy()

    def _load(self) -> None:
        self._pending = {p.prompt_id: p for p in self._store.unfinished()}

    def has_prompt_for(self, alert_id: str) -> bool:
        """Was this alert ever asked about (pending, answered, escalated ...)?"""
        return self._store.asked_about(alert_id)

    def next_due(self) -> float | None:
        """The earliest deadline of a pending prompt (None: nothing pending)."""
        return min((p.deadline for p in self._pending.values()), default=None)

    def pending(self, person: str | None = None) -> list[dict[str, object]]:
        return [p.as_dict() for p in self._pending.values() if person in (None, p.person)]

    # --- asking ---------------------------------------------------------------------------
    async def on_alert(
        self, person: str, *, alert_ids: list[str], on_no_answer: OnNoAnswer, summary: str
    ) -> str:
        """Ask about an alert. A pending prompt that already escalates at least as far
        covers it (the alert ids join it, so one "OK" answers both)."""
        for p in self._pending.values():
            if (
                p.person == person
                and p.reason == "alert_unanswered"
                and _RANK[p.on_no_answer] >= _RANK[on_no_answer]
            ):
                p.alert_ids = sorted({*p.alert_ids, *alert_ids})
                self._write(p, "pending")
                return p.prompt_id
        for p in self._pending.values():
            if p.person == person and p.reason == "unconfirmed_unanswered":
                # The single reading asked about was confirmed: the same question now stands
                # for the alert (one question, one "OK"), as strong as either asks.
                # The alert's full window counts from its confirmation.
                p.reason = "alert_unanswered"
                p.alert_ids = sorted({*p.alert_ids, *alert_ids})
                p.deadline = max(p.deadline, self._clock.now() + self.window_s)
                if _RANK[on_no_answer] > _RANK[p.on_no_answer]:
                    p.on_no_answer = on_no_answer
                self._write(p, "pending")
                return p.prompt_id
        window = self.window_s
        text = alert_question(window, on_no_answer)
        return await self._prompt(
            person, text, reason="alert_unanswered", on_no_answer=on_no_answer,
            alert_ids=alert_ids, device=None, window=window, summary=summary,
        )  # fmt: skip

    async def on_implausible(
        self,
        person: str,
        *,
        device: str,
        what: str,
        on_no_answer: OnNoAnswer,
        unconfirmed: bool = False,
        window_s: float | None = None,
        since: float | None = None,
    ) -> str:
        """A possible but implausible value (a pulse of 0): it may be a loose strap, or an
        arrest. Ask at once. `unconfirmed`: one wrist reading in the intervention range, not
        yet confirmed by the next. `window_s`: at least this long to answer (a slow device's
        next reading may withdraw the question first). `since`: when the value was first read
        (held while walking until the next reading confirmed it): the countdown runs from
        then, so holding it never delays the help (the wearer still gets MIN_ANSWER_S)."""
        reason = "unconfirmed_unanswered" if unconfirmed else "implausible_unanswered"
        for p in self._pending.values():
            if p.person == person and p.reason in (
                "implausible_unanswered",
                "unconfirmed_unanswered",
            ):
                if _RANK[on_no_answer] > _RANK[p.on_no_answer]:
                    p.on_no_answer = on_no_answer  # still unreadable and now still: stronger
                    self._write(p, "pending")
                return p.prompt_id  # one at a time
        window = max(self.window_s, window_s or 0.0)
        if since is not None:
            window = max(MIN_ANSWER_S, since + window - self._clock.now())
        text = (unconfirmed_question if unconfirmed else implausible_question)(
            what, window, on_no_answer
        )
        return await self._prompt(
            person, text, reason=reason, on_no_answer=on_no_answer,
            alert_ids=[], device=device, window=window, summary=f"the device read {what}",
        )  # fmt: skip

    async def withdraw(self, person: str, *, device: str) -> int:
        """The next readings refuted the single reading a question was about: the question
        is withdrawn (the watch is told to drop it) and nobody else hears of it."""
        gone = [
            p
            for p in self._pending.values()
            if p.person == person
            and p.device == device
            and p.reason in ("implausible_unanswered", "unconfirmed_unanswered")
            and not p.alert_ids
        ]
        for p in gone:
            self._finish(p, "resolved")
            payload = NotifyPayload(
                text="Never mind: your readings are back to normal. No need to answer.",
                kind="withdrawn",
                prompt_id=p.prompt_id,
                ts=format_ts(self._clock.now()),
            )
            await self._pub.publish(notify_topic(person), payload.model_dump(exclude_none=True))
        return len(gone)

    async def on_fall(self, person: str, device: str) -> str:
        for p in self._pending.values():
            if p.person == person and p.reason == "fall_no_movement":
                return p.prompt_id  # one fall check at a time
        text = fall_question(self.fall_window_s)
        return await self._prompt(
            person, text, reason="fall_no_movement", on_no_answer="hard_sos", alert_ids=[],
            device=device, window=self.fall_window_s, summary="a fall was detected",
        )  # fmt: skip

    # --- answers and resolutions -----------------------------------------------------------
    def on_cleared(self, person: str, alert_id: str) -> None:
        """An alert cleared (or the family gave the all-clear): its question no longer
        calls for an ambulance. A question left with no alert is resolved; one with others
        still open now only tells the contacts if unanswered."""
        for p in [p for p in self._pending.values() if p.person == person]:
            if alert_id not in p.alert_ids:
                continue
            p.alert_ids = [a for a in p.alert_ids if a != alert_id]
            if not p.alert_ids:
                self._finish(p, "resolved")
                continue
            if p.on_no_answer == "hard_sos":
                p.on_no_answer = "contacts"
            self._write(p, "pending")

    def resolve(self, person: str) -> int:
        """A hard SOS is open for the person, or someone gave the all-clear: their pending
        prompts have done their job."""
        ps = [p for p in self._pending.values() if p.person == person]
        for p in ps:
            self._finish(p, "resolved")
        return len(ps)

    def on_movement(self, person: str) -> None:
        """Steps after a fall: the wearer is up. Cancels the fall check only."""
        for p in [p for p in self._pending.values() if p.person == person]:
            if p.reason == "fall_no_movement":
                self._finish(p, "resolved")

    async def on_ack(
        self, person: str, *, ok: bool, prompt_id: str | None, device: str
    ) -> list[str] | None:
        """The wearer answered. Returns the alert ids the answered prompts were about (None
        when nothing was pending). Not OK escalates at once."""
        targets = [
            p
            for p in self._pending.values()
            if p.person == person and prompt_id in (None, p.prompt_id)
        ]
        if not targets:
            return None
        for p in targets:
            self._finish(p, "answered")
        await self._emit(
            Event(
                EventType.PROMPT_ANSWERED,
                person,
                self._clock.now(),
                {"prompt_ids": [p.prompt_id for p in targets], "ok": ok, "device": device},
            )
        )
        if not ok:
            await self._escalate(targets[0], why="user_not_ok", to="hard_sos")
        return sorted({a for p in targets for a in p.alert_ids})

    async def not_ok(self, person: str, *, device: str) -> None:
        """ "Not OK" when no question is pending: a hard SOS all the same."""
        now = self._clock.now()
        p = Prompt(uuid.uuid4().hex[:12], person, "user_not_ok", "hard_sos", [], device, "",
                   now, now)  # fmt: skip
        await self._emit(
            Event(EventType.PROMPT_ANSWERED, person, now,
                  {"prompt_ids": [], "ok": False, "device": device})
        )  # fmt: skip
        await self._escalate(p, why="user_not_ok", to="hard_sos")

    # --- time -----------------------------------------------------------------------------
    async def tick(self) -> None:
        now = self._clock.now()
        for p in sorted(self._pending.values(), key=lambda p: p.deadline):
            if p.deadline > now:
                break
            if self._pending.get(p.prompt_id) is not p:
                continue  # answered or resolved while an earlier escalation was awaited
            if p.on_no_answer == "none":
                self._finish(p, "expired")
                continue
            # Journaled as escalating first: a crash mid-escalation repeats it on restart.
            # Not fsynced: the SOS it starts must not wait for the disk, and a power cut that
            # loses this leaves the prompt pending past its deadline, due again at once too.
            self._pending.pop(p.prompt_id, None)
            try:
                self._write(p, "escalating", durable=False)
            except Exception as exc:  # the class only: a message may quote PHI
                log.error("escalation not recorded (%s); escalating", type(exc).__name__)
            try:
                await self._escalate(p, why=p.reason, to=p.on_no_answer)
            except Exception:  # not dropped: due again next tick, as after a crash
                self._pending.setdefault(p.prompt_id, p)
                raise
            self._finish(p, "escalated")

    async def _loop(self) -> None:  # a failing tick is counted (self.health) and retried
        await run_ticks(lambda: self.tick(), self.health, lambda: self.poll_s)

    # --- internals ------------------------------------------------------------------------
    async def _prompt(
        self,
        person: str,
        text: str,
        *,
        reason: str,
        on_no_answer: OnNoAnswer,
        alert_ids: list[str],
        device: str | None,
        window: float,
        summary: str,
    ) -> str:
        now = self._clock.now()
        deadline = now + (window if on_no_answer != "none" else UNARMED_TTL_S)
        p = Prompt(uuid.uuid4().hex[:12], person, reason, on_no_answer, list(alert_ids),
                   device, summary, now, deadline)  # fmt: skip
        self._pending[p.prompt_id] = p
        try:
            self._write(p, "pending")  # durable before the wearer sees it
        except Exception as exc:  # class and place only: a message may quote PHI
            log.error("could not persist a prompt; keeping it in memory (%s)", describe(exc))
        payload = NotifyPayload(text=text, kind="prompt", prompt_id=p.prompt_id, ts=format_ts(now))
        await self._pub.publish(notify_topic(person), payload.model_dump(exclude_none=True))
        return p.prompt_id

    def _write(self, p: Prompt, state: str, *, durable: bool = True) -> None:
        self._store.write(p, state, durable=durable)

    def _finish(self, p: Prompt, state: str) -> None:
        self._pending.pop(p.prompt_id, None)
        try:
            self._write(p, state)
        except Exception as exc:
            log.error("could not record a prompt's end (%s)", describe(exc))

    async def _escalate(self, p: Prompt, *, why: str, to: str) -> None:
        self.escalations += 1
        now = self._clock.now()
        data: dict[str, Any] = {"reason": why, "prompt_id": p.prompt_id,
                                "alert_id": p.alert_ids[0] if p.alert_ids else None,
                                "alert_ids": p.alert_ids}  # fmt: skip
        if to == "contacts":
            await self._emit(Event(EventType.ALERT_ESCALATED, p.person, now, {**data, "to": to}))
            if self.contacts is None:
                log.error("no contact notifier attached: unanswered alert not texted")
                return
            try:
                texted = await self.contacts.unanswered(
                    p.person, prompt_id=p.prompt_id, reason=why, summary=p.summary
                )
            except Exception as exc:
                log.error(
                    "texting the contacts about an unanswered alert failed (%s)", describe(exc)
                )
                texted = False
            if not texted:
                # Nobody could be texted (no contacts, no care line): the only one left to
                # send is an ambulance.
                await self._escalate(p, why=why, to="hard_sos")
                return
            if self.after_contacts is not None and p.alert_ids:
                self.after_contacts(p.person, list(p.alert_ids))
            return
        await self._emit(Event(EventType.SOS_ESCALATED, p.person, now, data))
        trigger = {
            "alert_unanswered": "soft_sos_unanswered",
            "unconfirmed_unanswered": "implausible_unanswered",
        }.get(why, why)
        try:
            await self._sos.start(p.person, device=p.device, location=None, trigger=trigger)
        except Exception as exc:
            # Not swallowed: the tick counts it (health) and the prompt is due again next tick.
            log.error("escalation to hard SOS failed (%s)", describe(exc))
            raise
