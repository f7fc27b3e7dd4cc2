"""Prompts that must be answered: "are you OK?" after a soft SOS or a fall.

A high-severity soft SOS (NEWS2 high or a critical range) unanswered within the window, a fall
followed by no movement within the fall window, or an explicit "not OK" answer becomes a hard
SOS. Deterministic timers only: nothing here waits on a model or the network."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from gateway.clock import Clock
from gateway.contract import EventType, NotifyPayload, format_ts, notify_topic
from gateway.model import Event
from gateway.ports import Publisher, SosHandler

log = logging.getLogger(__name__)

Emit = Callable[[Event], Awaitable[None]]


@dataclass(slots=True)
class _Pending:
    prompt_id: str
    person: str
    reason: str  # soft_sos_unanswered | fall_no_movement
    alert_id: str | None
    device: str | None
    task: asyncio.Task[None] | None = None
    armed: bool = True
    extra: dict[str, object] = field(default_factory=dict)


class EscalationWatcher:
    def __init__(
        self,
        publisher: Publisher,
        sos: SosHandler,
        emit: Emit,
        clock: Clock,
        *,
        window_s: float = 60,
        fall_window_s: float = 60,
    ) -> None:
        self._pub = publisher
        self._sos = sos
        self._emit = emit
        self._clock = clock
        self.window_s = window_s
        self.fall_window_s = fall_window_s
        self._pending: dict[str, _Pending] = {}  # prompt_id -> pending
        self.escalations = 0

    async def stop(self) -> None:
        for p in list(self._pending.values()):
            if p.task:
                p.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await p.task
        self._pending.clear()

    def pending(self, person: str | None = None) -> list[dict[str, object]]:
        return [
            {"prompt_id": p.prompt_id, "person": p.person, "reason": p.reason, "armed": p.armed}
            for p in self._pending.values()
            if person is None or p.person == person
        ]

    async def on_soft_sos(self, person: str, *, alert_id: str, high: bool) -> str:
        """Ask the wearer; arm escalation only for high severity (crying wolf costs trust)."""
        text = "Are you OK? Your vitals look abnormal. Press OK on your watch if you are fine."
        if high:
            text += (
                f" If you don't answer within {self.window_s:.0f} seconds we will call for help."
            )
        return await self._prompt(
            person,
            text,
            reason="soft_sos_unanswered",
            alert_id=alert_id,
            device=None,
            window=self.window_s if high else None,
        )

    async def on_fall(self, person: str, device: str) -> str:
        for p in self._pending.values():
            if p.person == person and p.reason == "fall_no_movement":
                return p.prompt_id  # one fall check at a time
        text = (
            "A fall was detected. Are you OK? Press OK, or move, within "
            f"{self.fall_window_s:.0f} seconds, or we will call for help."
        )
        return await self._prompt(
            person,
            text,
            reason="fall_no_movement",
            alert_id=None,
            device=device,
            window=self.fall_window_s,
        )

    def resolve(self, person: str) -> int:
        """A hard SOS is open for the person: their pending prompts have done their job."""
        ids = [pid for pid, p in self._pending.items() if p.person == person]
        for pid in ids:
            self._cancel(pid)
        return len(ids)

    def on_movement(self, person: str) -> None:
        """Steps after a fall: the wearer is up. Cancels the fall check only."""
        for pid, p in list(self._pending.items()):
            if p.person == person and p.reason == "fall_no_movement":
                self._cancel(pid)

    async def on_ack(self, person: str, *, ok: bool, prompt_id: str | None, device: str) -> bool:
        """The wearer answered. OK cancels the prompt(s); not OK escalates at once."""
        targets = [
            p
            for p in self._pending.values()
            if p.person == person and (prompt_id is None or p.prompt_id == prompt_id)
        ]
        if not targets:
            return False
        for p in targets:
            self._cancel(p.prompt_id)
        await self._emit(
            Event(
                EventType.PROMPT_ANSWERED,
                person,
                self._clock.now(),
                {"prompt_ids": [p.prompt_id for p in targets], "ok": ok, "device": device},
            )
        )
        if not ok:
            await self._escalate(targets[0], reason="user_not_ok")
        return True

    # --- internals ------------------------------------------------------------------------
    async def _prompt(
        self,
        person: str,
        text: str,
        *,
        reason: str,
        alert_id: str | None,
        device: str | None,
        window: float | None,
    ) -> str:
        pid = uuid.uuid4().hex[:12]
        p = _Pending(pid, person, reason, alert_id, device)
        self._pending[pid] = p
        payload = NotifyPayload(
            text=text, kind="prompt", prompt_id=pid, ts=format_ts(self._clock.now())
        )
        await self._pub.publish(notify_topic(person), payload.model_dump(exclude_none=True))
        if window is not None:
            p.task = asyncio.create_task(self._timer(p, window), name=f"escalate:{pid}")
        else:
            p.armed = False
        return pid

    def _cancel(self, prompt_id: str) -> None:
        p = self._pending.pop(prompt_id, None)
        if p and p.task and p.task is not asyncio.current_task():
            p.task.cancel()

    async def _timer(self, p: _Pending, window: float) -> None:
        await asyncio.sleep(window)
        if self._pending.get(p.prompt_id) is p:
            self._pending.pop(p.prompt_id, None)
            await self._escalate(p, reason=p.reason)

    async def _escalate(self, p: _Pending, *, reason: str) -> None:
        self.escalations += 1
        await self._emit(
            Event(
                EventType.SOS_ESCALATED,
                p.person,
                self._clock.now(),
                {"reason": reason, "prompt_id": p.prompt_id, "alert_id": p.alert_id},
            )
        )
        try:
            await self._sos.start(p.person, device=p.device, location=None, trigger=reason)
        except Exception:
            log.exception("escalation to hard SOS failed")
