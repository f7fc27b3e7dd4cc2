"""The assistant's conversations in their own process, seen from the gateway's process.

`AssistantProcess` stands where agents.assistant.conversations.Conversations stands in-process (behind
agents.assistant.chat_router.ChatRouter, so the gateway's chat port is unchanged): `say`, `listen`,
`session_open`, `stats`. It spawns the child (a niced *spawn* process, started and ended like
the local model's worker, through agents/llm/child_process.py), reads its pipe on the event
loop, and does for it what only the gateway process may do: publish on the broker link, audit
tool calls, announce bookings, schedule follow-ups, ask the shared local model.

When the child dies: everyone whose conversation was open is told the assistant is
restarting, messages that come meanwhile get the same answer (counted in
`process.down_replies`), and the child is restarted after a backoff (by its deaths in the
last 10 minutes: 1, 2, 5, 10, then 30 s); the new child resumes the open conversations from
healthgw.db (they are written ahead). Nothing on the SOS path calls this class.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from agents.assistant.process.messages import (
    Call,
    Closed,
    Publish,
    Ready,
    Said,
    Say,
    Stats,
    Stop,
    Tick,
    ToChild,
)
from agents.assistant.process.serving import ChildRequests, GatewaySide
from agents.llm.child_process import end_child, spawn_child
from gateway.base.backoff import Backoff
from gateway.contract.topics import ReplyPayload, format_ts, reply_topic

log = logging.getLogger("agents.assistant.process")

Listener = Callable[[dict[str, Any]], None]

RESTARTING = (
    "Sorry, the assistant is restarting. Your conversation is kept: please send your answer"
    " again in a moment."
)
DOWN = "The assistant is restarting. Please send that again in a moment."


class AssistantProcess:
    def __init__(
        self,
        target: Callable[..., None],
        args: tuple[Any, ...],
        side: GatewaySide,
        *,
        backoff_s: Backoff | tuple[float, ...] = (1.0, 2.0, 5.0, 10.0, 30.0),
        ready_timeout_s: float = 120.0,
        start_wait_s: float = 30.0,
        say_timeout_s: float = 10.0,
    ) -> None:
        self._target = target
        self._args = args
        self._side = side
        self._backoff = Backoff.of(backoff_s)  # by the deaths of the last 10 minutes
        self._ready_timeout_s = ready_timeout_s
        self._start_wait_s = start_wait_s
        self._say_timeout_s = say_timeout_s
        self._proc: BaseProcess | None = None
        self._conn: Connection | None = None
        self._ready: asyncio.Future[Ready] | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, asyncio.Future[Said]]] = {}
        self._person: dict[str, str] = {}  # session id -> person (bounded)
        self._open: set[str] = set()
        self._last: dict[str, str] = {}  # person -> last session id
        self._listeners: dict[str, list[Listener]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._child_stats: dict[str, Any] = {}
        self._stopping = False
        self._up = False
        self._restart: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._deaths_at: list[float] = []
        self.counters = {"spawns": 0, "deaths": 0, "down_replies": 0, "refused_calls": 0}
        self._requests = ChildRequests(side, self._send, self._spawn_task, self.counters)

    # --- lifecycle ----------------------------------------------------------------------------

    @property
    def up(self) -> bool:
        return self._up

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._up else None

    async def start(self) -> None:
        """Spawn the child and wait for it at most `start_wait_s`: the gateway's start (and
        the SOS path behind it) never waits longer for the assistant; it keeps starting in
        the background, and messages meanwhile are answered that it is restarting."""
        self._stopping = False
        self._restart = asyncio.create_task(self._keep_up(first=True), name="assistant-spawn")
        await asyncio.wait({self._restart}, timeout=self._start_wait_s)
        if self._ticker is None:
            self._ticker = asyncio.create_task(self._tick(), name="assistant-tick")

    async def _spawn(self) -> None:
        loop = asyncio.get_running_loop()
        proc, parent = spawn_child(self._target, self._args, name="healthgw-assistant")
        self._proc, self._conn = proc, parent
        self._ready = loop.create_future()
        self.counters["spawns"] += 1
        loop.add_reader(parent.fileno(), self._readable, parent)
        try:
            async with asyncio.timeout(self._ready_timeout_s):
                ready = await self._ready
        except (TimeoutError, ConnectionError) as exc:
            if isinstance(exc, TimeoutError):
                log.error("assistant process: not ready within %.0f s", self._ready_timeout_s)
            proc.kill()
            self._gone(parent)
            return
        except BaseException:  # cancelled by stop(): no child left behind
            proc.kill()
            self._gone(parent)
            raise
        self._open = {sid for sid, _, is_open in ready.sessions if is_open}
        for sid, person, _ in ready.sessions:
            self._person[sid] = person
        self._up = True
        log.info("assistant process %s ready (nice %s)", ready.pid, ready.nice)
        model = self._side.model
        self._send(Tick(bool(model is not None and model.available)))

    async def stop(self) -> None:
        self._stopping = True
        for t in (self._restart, self._ticker):
            if t is not None:
                t.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await t
        self._restart = self._ticker = None
        proc, conn = self._proc, self._conn
        if proc is None or conn is None:
            return
        self._send(Stop())
        await end_child(proc, grace_s=10.0, then_s=2.0)  # the child closes its conversations
        self._gone(conn)
        for t in list(self._tasks):
            t.cancel()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            model = self._side.model
            if self._up:
                self._send(Tick(bool(model is not None and model.available)))

    def _gone(self, conn: Connection) -> None:
        """The child exited (or is being stopped): answer every waiter, tell the people in
        a conversation, restart it after a backoff."""
        if conn is not self._conn:
            return
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(conn.fileno())
        with contextlib.suppress(OSError):
            conn.close()
        self._conn = None
        was_up, self._up = self._up, False
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(ConnectionError("assistant process exited"))
        for rid, (_, fut) in list(self._pending.items()):
            if not fut.done():
                fut.set_result(Said(rid, None, "restarting"))
        self._pending.clear()
        if self._proc is not None:
            self._proc.join(0)  # reap it if it has exited
        if self._stopping:
            return
        self.counters["deaths"] += 1
        code = self._proc.exitcode if self._proc is not None else None
        log.warning("assistant process died (exit code %s); restarting", code)
        if was_up:
            for sid in sorted(self._open):
                person = self._person.get(sid)
                if person is not None:
                    self._spawn_task(self._reply(person, sid, RESTARTING))
        if self._restart is None or self._restart.done():
            self._restart = asyncio.create_task(self._keep_up(), name="assistant-restart")

    async def _keep_up(self, *, first: bool = False) -> None:
        # Until one is up: a child that dies while starting is retried here, not by _gone.
        while not self._stopping and not self._up:
            if not first:
                now = time.monotonic()
                self._deaths_at = [t for t in self._deaths_at if now - t < 600] + [now]
                await asyncio.sleep(self._backoff.delay(len(self._deaths_at) - 1))
            first = False
            if not self._stopping:
                await self._spawn()

    # --- the conversations port ---------------------------------------------------------------

    async def say(self, person: str, text: str, session_id: str | None = None) -> str:
        if self._up and self._conn is not None:
            rid = next(self._ids)
            fut: asyncio.Future[Said] = asyncio.get_running_loop().create_future()
            self._pending[rid] = (person, fut)
            vitals = dict(self._side.vitals(person)) if self._side.vitals is not None else {}
            self._send(Say(rid, person, text, session_id, vitals))
            try:
                async with asyncio.timeout(self._say_timeout_s):
                    said = await fut
            except TimeoutError:
                said = Said(rid, None, "timeout")
            finally:
                self._pending.pop(rid, None)
            if said.session_id is not None:
                return said.session_id
            if said.error == "too_many":
                raise RuntimeError("too many open conversations")
        # Down (or it died under this message): the user hears so at once.
        self.counters["down_replies"] += 1
        sid = session_id or self._last.get(person) or uuid.uuid4().hex[:16]
        await self._reply(person, sid, DOWN)
        return sid

    def listen(self, person: str, fn: Listener) -> Callable[[], None]:
        self._listeners.setdefault(person, []).append(fn)

        def off() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.get(person, []).remove(fn)

        return off

    def session_open(self, session_id: str) -> bool:
        return session_id in self._open

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": {}, **self._child_stats}
        out["process"] = {**self.counters, "up": self._up, "pid": self.pid}
        return out

    # --- the pipe -----------------------------------------------------------------------------

    def _send(self, msg: ToChild) -> None:
        conn = self._conn
        if conn is None:
            return
        try:
            conn.send(msg)
        except (OSError, ValueError):
            self._gone(conn)

    def _readable(self, conn: Connection) -> None:
        try:
            while conn is self._conn and conn.poll():
                self._dispatch(conn.recv())
        except (EOFError, OSError):
            self._gone(conn)
        except Exception:  # a garbled message: the child cannot be trusted any more
            log.exception("assistant process: bad message; killing it")
            if self._proc is not None:
                self._proc.kill()
            self._gone(conn)

    def _dispatch(self, msg: object) -> None:
        if isinstance(msg, Publish):
            self._publish(msg)
        elif isinstance(msg, Said):
            person, fut = self._pending.get(msg.rid, (None, None))
            if person is not None and msg.session_id is not None:
                # Here, not in `say`: the child's first reply may already be in this read.
                self._remember(msg.session_id, person)
            if fut is not None and not fut.done():
                fut.set_result(msg)
        elif isinstance(msg, Closed):
            self._open.discard(msg.session_id)
        elif isinstance(msg, Call):
            self._requests.call(msg)
        elif isinstance(msg, Stats):
            self._child_stats = msg.counters
        elif isinstance(msg, Ready):
            if self._ready is not None and not self._ready.done():
                self._ready.set_result(msg)
        else:
            raise TypeError(f"unknown message {type(msg).__name__}")

    def _remember(self, sid: str, person: str) -> None:
        if sid not in self._person:
            self._open.add(sid)
        self._person[sid] = person
        self._last[person] = sid
        if len(self._person) > 4096:  # finished sessions are forgotten, oldest first
            for old in list(self._person)[:1024]:
                if old not in self._open:
                    del self._person[old]

    def _publish(self, msg: Publish) -> None:
        # Only what a conversation sends: its replies and watch messages for one person.
        parts = msg.topic.split("/")
        if len(parts) != 3 or parts[0] != "health" or parts[2] not in ("reply", "notify"):
            self.counters["refused_calls"] += 1
            return
        if isinstance(msg.payload, dict):
            person = self._person.get(str(msg.payload.get("session_id")))
            if person is not None and msg.topic == reply_topic(person):
                self._fan_out(person, msg.payload)
        self._spawn_task(
            self._side.publisher.publish(msg.topic, msg.payload, qos=msg.qos, retain=msg.retain)
        )

    # --- replies ------------------------------------------------------------------------------

    async def _reply(self, person: str, sid: str, text: str) -> None:
        payload = ReplyPayload(
            text=text, session_id=sid, expects_answer=False, ts=format_ts(self._side.now())
        ).model_dump(mode="json", exclude_none=True)
        self._fan_out(person, payload)
        await self._side.publisher.publish(reply_topic(person), payload, qos=1)

    def _fan_out(self, person: str, payload: dict[str, Any]) -> None:
        for fn in list(self._listeners.get(person, [])):
            try:
                fn(payload)
            except Exception:
                log.exception("conversation listener failed")

    def _spawn_task(self, coro: Awaitable[Any]) -> None:
        async def run() -> None:
            try:
                await coro
            except Exception:
                log.exception("assistant process: gateway-side work failed")

        t = asyncio.create_task(run())
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)
