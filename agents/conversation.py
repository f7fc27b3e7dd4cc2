"""Conversations: user text in (MQTT intent, REST, WebSocket), the assistant's messages and
questions out on health/{person}/reply, answers matched back by session id.

One open session per person. Text without a session id goes to the person's open session
when it is waiting for an answer (a watch has no session ids); text naming another session
closes the old one first. A session waits at most `idle_timeout_s` for an answer, then closes
cleanly: what was learned is stored and the user is told.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agents.assistant import Assistant, ConversationResult
from agents.tools.registry import ToolNoAnswer
from gateway.clock import Clock
from gateway.contract import ReplyPayload, format_ts, reply_topic
from gateway.ports import Publisher

log = logging.getLogger(__name__)

Listener = Callable[[dict[str, Any]], None]


@dataclass
class Session:
    id: str
    person: str
    answers: asyncio.Queue[str] = field(default_factory=lambda: asyncio.Queue(maxsize=8))
    waiting: bool = False
    task: asyncio.Task[ConversationResult | None] | None = None
    closed: bool = False
    turns: int = 0
    outcome: ConversationResult | None = None


class Conversations:
    def __init__(
        self,
        assistant: Assistant,
        publisher: Publisher,
        clock: Clock,
        *,
        idle_timeout_s: float = 300.0,
        max_sessions: int = 64,
        ready: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self._ready = ready
        self.assistant = assistant
        self.publisher = publisher
        self.clock = clock
        self.idle_timeout_s = idle_timeout_s
        self.max_sessions = max_sessions
        self._open: dict[str, Session] = {}  # person -> open session
        self._by_id: dict[str, Session] = {}
        self._listeners: dict[str, list[Listener]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.counters: dict[str, int] = {
            "sessions": 0, "answers": 0, "timeouts": 0, "superseded": 0, "failed": 0,
            "rejected": 0,
        }  # fmt: skip

    # --- input --------------------------------------------------------------------------------

    async def say(self, person: str, text: str, session_id: str | None = None) -> str:
        """Hand one user message to the assistant; returns the session id it went to."""
        open_ = self._open.get(person)
        if open_ is not None and not open_.closed:
            if session_id is None or session_id == open_.id:
                self.counters["answers"] += 1
                open_.turns += 1
                try:
                    open_.answers.put_nowait(text)
                except asyncio.QueueFull:
                    self.counters["rejected"] += 1
                    await self._reply(open_, "One moment please, I am still working.", False)
                return open_.id
            else:
                self.counters["superseded"] += 1
                await self.close(open_, "superseded")
        if sum(1 for s in self._open.values() if not s.closed) >= self.max_sessions:
            self.counters["rejected"] += 1
            raise RuntimeError("too many open conversations")
        sid = session_id or uuid.uuid4().hex[:16]
        s = Session(sid, person, turns=1)
        self._open[person] = s
        self._by_id[sid] = s
        self.counters["sessions"] += 1
        s.task = asyncio.create_task(self._run(s, text), name=f"session-{sid}")
        self._tasks.add(s.task)
        s.task.add_done_callback(self._tasks.discard)
        return sid

    def session(self, session_id: str) -> Session | None:
        return self._by_id.get(session_id)

    def session_open(self, session_id: str) -> bool:
        s = self._by_id.get(session_id)
        return s is not None and not s.closed

    # --- output -------------------------------------------------------------------------------

    def listen(self, person: str, fn: Listener) -> Callable[[], None]:
        """Receive every reply payload for `person` (the WebSocket chat). Returns unsubscribe."""
        self._listeners.setdefault(person, []).append(fn)

        def off() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.get(person, []).remove(fn)

        return off

    async def _reply(
        self, s: Session, text: str, expects_answer: bool, answer_type: str | None = None
    ) -> None:
        payload = ReplyPayload(
            text=text,
            session_id=s.id,
            expects_answer=expects_answer,
            answer_type=answer_type if expects_answer else None,
            ts=format_ts(self.clock.now()),
        ).model_dump(mode="json", exclude_none=True)
        for fn in list(self._listeners.get(s.person, [])):
            try:
                fn(payload)
            except Exception:
                log.exception("conversation listener failed")
        await self.publisher.publish(reply_topic(s.person), payload, qos=1)

    # --- running ------------------------------------------------------------------------------

    async def _run(self, s: Session, text: str) -> ConversationResult | None:
        io = _SessionIO(self, s)
        try:
            if self._ready is not None:
                await self._ready()  # the triage model, loading in the background at start
            s.outcome = await self.assistant.run(s.person, text, io)
            return s.outcome
        except asyncio.CancelledError:
            raise
        except Exception:
            self.counters["failed"] += 1
            log.exception("conversation %s failed", s.id)
            with contextlib.suppress(Exception):
                await self._reply(
                    s, "Sorry, something went wrong on my side. Please try again.", False
                )
            return None
        finally:
            await self.close(s, "done", cancel=False)

    async def close(self, s: Session, why: str, *, cancel: bool = True) -> None:
        if s.closed:
            return
        s.closed = True
        if self._open.get(s.person) is s:
            del self._open[s.person]
        if cancel and s.task is not None and not s.task.done():
            s.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await s.task
        # Keep finished sessions findable for a while (REST polls by id); bounded.
        if len(self._by_id) > 4 * self.max_sessions:
            for sid in list(self._by_id)[: len(self._by_id) - 2 * self.max_sessions]:
                if self._by_id[sid].closed:
                    del self._by_id[sid]

    async def stop(self) -> None:
        for s in list(self._open.values()):
            await self.close(s, "stopping")
        for t in list(self._tasks):
            t.cancel()
        for t in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t

    def stats(self) -> dict[str, Any]:
        return {**self.counters, "open": len(self._open), "model": self.assistant.roles.summary()}


class _SessionIO:
    def __init__(self, conv: Conversations, s: Session) -> None:
        self._c = conv
        self._s = s
        self.session_id = s.id

    async def ask(self, question: str, answer_type: str) -> str:
        s = self._s
        # Answers typed before the question was asked (a watch buffer) are not answers to it.
        while not s.answers.empty():
            s.answers.get_nowait()
        await self._c._reply(s, question, True, answer_type)
        s.waiting = True
        try:
            async with asyncio.timeout(self._c.idle_timeout_s):
                return await s.answers.get()
        except TimeoutError:
            self._c.counters["timeouts"] += 1
            raise ToolNoAnswer("no answer before the conversation timed out") from None
        finally:
            s.waiting = False

    async def reply(self, text: str) -> None:
        await self._c._reply(self._s, text, False)
