"""Conversations: user text in (MQTT intent, REST, WebSocket), the assistant's messages and
questions out on health/{person}/reply, answers matched back by session id.

One open session per person. Text without a session id goes to the person's open session
when it is waiting for an answer (a watch has no session ids); text naming another session
closes the old one first. A session waits at most `idle_timeout_s` for an answer, then closes
cleanly: what was learned is stored and the user is told.

With a `ConversationStore`, open sessions survive a restart: the opener, every answer and the
run's state before every question are written (fsynced) before anything is said back, and the
run's state after every other step too. `resume()` at start goes on with each: a pending
question waits for the user's next message (it is not asked again); one whose idle timeout
ran out while the gateway was down is closed at once, the usual way (symptoms stored, user
told), and the person's next message starts a new conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agents.assistant.conversation_store import ConversationStore, OpenConversation
from agents.assistant.run_state import Checkpoint, RunState
from agents.assistant.runner import Assistant, ConversationResult
from agents.tools.registry import ToolNoAnswer
from gateway.base.clock import Clock
from gateway.base.errors import StorageError
from gateway.base.ports import Publisher
from gateway.contract.topics import ReplyPayload, format_ts, reply_topic

log = logging.getLogger(__name__)

Listener = Callable[[dict[str, Any]], None]


# A broker redelivers a crashed session's unacknowledged messages as soon as the link is back.
REDELIVERY_S = 10.0


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
    # Wall clock of the last message either way: the idle timeout counts from it.
    last_activity: float = 0.0
    answer_saved: bool = False  # the pending question's answer is in the store
    # Resumed: the answer saved before the restart and not yet acted on.
    saved_answer: str | None = None
    # Answers reach the queue in the order they came, whatever a store write takes.
    inbox: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Resumed: (the last message acted on before the restart, monotonic deadline). An intent
    # is acknowledged after its effect is kept: a crash between the two and the broker sends
    # it again. Acted on twice, "Tuesday morning" answered "Shall I book it?".
    replay_guard: tuple[str, float] | None = None


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
        store: ConversationStore | None = None,
        on_close: Callable[[str], None] | None = None,
    ) -> None:
        self._ready = ready
        # Told every session id that ends (the assistant's own process tells the gateway).
        self._on_close = on_close
        self._store = store
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
            "rejected": 0, "resumed": 0, "expired_while_down": 0, "unsaved": 0, "redelivered": 0,
        }  # fmt: skip

    # --- input --------------------------------------------------------------------------------

    async def say(self, person: str, text: str, session_id: str | None = None) -> str:
        """Hand one user message to the assistant; returns the session id it went to."""
        open_ = self._open.get(person)
        if open_ is not None and not open_.closed:
            if session_id is None or session_id == open_.id:
                if _redelivered(open_, text):
                    self.counters["redelivered"] += 1
                    log.info("conversations: a message acted on before the restart came again")
                    return open_.id
                self.counters["answers"] += 1
                open_.turns += 1
                async with open_.inbox:
                    if open_.answers.full():
                        self.counters["rejected"] += 1
                        await self._reply(open_, "One moment please, I am still working.", False)
                        return open_.id
                    if open_.waiting and not open_.answer_saved:
                        # Write-ahead: the answer is kept before the assistant acts on it.
                        open_.answer_saved = True
                        open_.last_activity = self.clock.now()
                        await self._save(
                            self._store.save_answer if self._store else None,
                            open_.id, text, turns=open_.turns, now=open_.last_activity,
                        )  # fmt: skip
                    open_.answers.put_nowait(text)
                return open_.id
            else:
                self.counters["superseded"] += 1
                await self.close(open_, "superseded")
        if sum(1 for s in self._open.values() if not s.closed) >= self.max_sessions:
            self.counters["rejected"] += 1
            raise RuntimeError("too many open conversations")
        # A known id (a finished session, one closing) is never reused: its rows are its own.
        sid = session_id if session_id and session_id not in self._by_id else None
        sid = sid or uuid.uuid4().hex[:16]
        now = self.clock.now()
        s = Session(sid, person, turns=1, last_activity=now)
        self._open[person] = s
        self._by_id[sid] = s
        self.counters["sessions"] += 1
        if self._store is not None:
            record = OpenConversation(sid, person, text, 1, now, now)
            await self._save(self._store.open, record, now)
        self._start(s, lambda io: self.assistant.run(person, text, io, checkpoint=self._keep(s)))
        return sid

    async def resume(self) -> list[str]:
        """At start, before input flows: go on with every conversation open at the last stop
        or crash. Returns the session ids resumed (those that expired meanwhile included)."""
        if self._store is None:
            return []
        try:
            records, dropped = await asyncio.to_thread(self._store.load)
        except (StorageError, sqlite3.Error) as exc:
            log.error("conversations: cannot read open conversations (%s)", type(exc).__name__)
            return []
        latest = {r.person: r for r in records}  # oldest first: the newest per person wins
        now = self.clock.now()
        out: list[str] = []
        for rec in records:
            state = _state(rec)
            known = self.assistant.household.person(rec.person) is not None
            if latest[rec.person] is not rec or not known or isinstance(state, _Unreadable):
                await self._save(self._store.remove, rec.session_id)
                dropped += 1
                continue
            s = Session(rec.session_id, rec.person, turns=rec.turns)
            s.last_activity = rec.last_activity
            if state is not None and state.pending is not None:
                s.saved_answer = rec.answer
            waiting = state is not None and state.pending is not None and rec.answer is None
            s.waiting = waiting
            if waiting and state is not None:
                s.replay_guard = (state.last_message(rec.opener), time.monotonic() + REDELIVERY_S)
            self._by_id[s.id] = s
            if waiting and now - rec.last_activity >= self.idle_timeout_s:
                # Closed the usual way (its pending question gets no answer), not resumed:
                # the person's next message starts a new conversation.
                self.counters["expired_while_down"] += 1
            else:
                self._open[s.person] = s
            self.counters["resumed"] += 1
            self._start(s, _resumer(self, s, rec, state))
            out.append(s.id)
        if dropped:  # a count only: the rows hold PHI
            log.warning("conversations: %d open conversation(s) could not be resumed", dropped)
        return out

    def _start(
        self, s: Session, start: Callable[[_SessionIO], Awaitable[ConversationResult]]
    ) -> None:
        s.task = asyncio.create_task(self._run(s, start), name=f"session-{s.id}")
        self._tasks.add(s.task)
        s.task.add_done_callback(self._tasks.discard)

    def _keep(self, s: Session) -> Checkpoint:
        """The run's checkpoint: its state into the store (fsynced before a question)."""

        async def keep(state: RunState, durable: bool) -> None:
            if durable:  # a question goes out next: its answer is a new one
                s.answer_saved = False
            if self._store is not None:
                await self._save(
                    self._store.save_state, s.id, state.to_dict(), turns=s.turns,
                    last_activity=s.last_activity, now=self.clock.now(), durable=durable,
                )  # fmt: skip

        return keep

    async def _save(self, fn: Callable[..., None] | None, *args: Any, **kw: Any) -> None:
        """One store write off the event loop. A failure is counted and logged (its type
        only) and the conversation goes on: it only loses being resumable."""
        if fn is None:
            return
        try:
            await asyncio.to_thread(fn, *args, **kw)
        except (StorageError, sqlite3.Error) as exc:
            self.counters["unsaved"] += 1
            log.error("conversations: saving failed (%s)", type(exc).__name__)

    def session(self, session_id: str) -> Session | None:
        return self._by_id.get(session_id)

    def session_open(self, session_id: str) -> bool:
        s = self._by_id.get(session_id)
        return s is not None and not s.closed

    def session_ids(self) -> list[str]:
        """Every session still findable (open ones and recently finished ones)."""
        return list(self._by_id)

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

    async def _run(
        self, s: Session, start: Callable[[_SessionIO], Awaitable[ConversationResult]]
    ) -> ConversationResult | None:
        io = _SessionIO(self, s)
        try:
            if self._ready is not None:
                await self._ready()  # the triage model, loading in the background at start
            s.outcome = await start(io)
            return s.outcome
        except asyncio.CancelledError:
            # Interrupted, not finished (the gateway stops): its row stays for the next start.
            await self.close(s, "stopping", cancel=False)
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
        if why != "stopping" and self._store is not None:
            await self._save(self._store.remove, s.id)
        if why != "stopping" and self._on_close is not None:
            self._on_close(s.id)
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
        s.last_activity = self._c.clock.now()
        s.waiting = True
        return await self._wait()

    async def answer(self, question: str, answer_type: str) -> str:
        """The answer to the question asked before the restart: saved then, or the next
        message (already queued ones count: they came after the question)."""
        s = self._s
        if s.saved_answer is not None:
            got, s.saved_answer = s.saved_answer, None
            return got
        s.waiting = True
        return await self._wait()

    async def _wait(self) -> str:
        s = self._s
        # From the last activity's wall-clock time, so the time a restart took counts too.
        left = s.last_activity + self._c.idle_timeout_s - self._c.clock.now()
        try:
            if left <= 0:
                raise TimeoutError
            async with asyncio.timeout(left):
                return await s.answers.get()
        except TimeoutError:
            self._c.counters["timeouts"] += 1
            raise ToolNoAnswer("no answer before the conversation timed out") from None
        finally:
            s.waiting = False

    async def reply(self, text: str) -> None:
        await self._c._reply(self._s, text, False)


def _redelivered(s: Session, text: str) -> bool:
    """The first message after a resume, within `REDELIVERY_S`, equal to the last one the run
    acted on: the broker's copy of it, not the person's answer to the pending question."""
    guard, s.replay_guard = s.replay_guard, None
    return guard is not None and text == guard[0] and time.monotonic() < guard[1]


class _Unreadable:
    """A saved run state that is not one (its row is dropped)."""


def _state(rec: OpenConversation) -> RunState | _Unreadable | None:
    """The saved run state; None: saved before the run's first step."""
    if rec.state is None:
        return None
    try:
        return RunState.from_dict(rec.state)
    except ValueError:
        return _Unreadable()


def _resumer(
    c: Conversations, s: Session, rec: OpenConversation, state: RunState | None
) -> Callable[[_SessionIO], Awaitable[ConversationResult]]:
    def start(io: _SessionIO) -> Awaitable[ConversationResult]:
        if state is None:  # saved before its first step: start it from the opener
            return c.assistant.run(s.person, rec.opener, io, checkpoint=c._keep(s))
        return c.assistant.resume(state, io, checkpoint=c._keep(s))

    return start
