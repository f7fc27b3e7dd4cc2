"""The assistant's own process, seen from inside: its end of the pipe to the gateway.

`run` is what the spawned process runs (healthgw/assistant_child.py builds the parts and
calls it): the open conversations are resumed, `Ready` goes out, then every `Say` is handed
to the conversations until `Stop` (or the gateway's end of the pipe closes: the gateway is
gone, so this process goes too). What only the gateway process may do (publish on its
broker link, write the audit log, announce a booking, schedule a follow-up, ask the one
shared local model) goes back over the pipe (agents/assistant/process/messages.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from datetime import date
from multiprocessing.connection import Connection
from typing import Any

from agents.assistant.conversations import Conversations
from agents.assistant.process.messages import (
    Answer,
    Call,
    CallOp,
    Closed,
    Publish,
    Ready,
    Said,
    Say,
    Stats,
    Stop,
    Tick,
    ToGateway,
)
from agents.assistant.runner import ConversationResult
from agents.llm.engine import Generation
from agents.llm.output import M, OutputError, grammar_schema, parse_output

log = logging.getLogger("agents.assistant.process")


class GatewayLink:
    """The child's end of the pipe, read by its event loop (`add_reader`)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Answer]] = {}
        self._vitals: dict[str, dict[str, Any]] = {}
        self.model_available = False
        self.stopped = asyncio.Event()
        self.on_say: Callable[[Say], Awaitable[None]] | None = None
        self.stats: Callable[[], dict[str, Any]] = dict
        self._tasks: set[asyncio.Task[None]] = set()
        self.publisher = _PipePublisher(self)

    def start(self) -> None:
        asyncio.get_running_loop().add_reader(self._conn.fileno(), self._readable)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(self._conn.fileno())
        with contextlib.suppress(OSError):
            self._conn.close()

    def send(self, msg: ToGateway) -> None:
        try:
            self._conn.send(msg)
        except (OSError, ValueError):
            self.stopped.set()  # the gateway's end is gone

    # --- calls into the gateway process -------------------------------------------------------

    def tell(self, op: CallOp, *args: Any) -> None:
        self.send(Call(0, op, args))

    async def call(self, op: CallOp, *args: Any, timeout_s: float) -> Answer:
        rid = next(self._ids)
        fut: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = fut
        try:
            self.send(Call(rid, op, args))
            async with asyncio.timeout(timeout_s):
                return await fut
        except TimeoutError:
            return Answer(rid, error="timeout")
        finally:
            self._waiting.pop(rid, None)

    def audit(self, record: Mapping[str, Any]) -> None:
        self.tell("audit", dict(record))

    async def booked(self, out: ConversationResult) -> None:
        if out.booked:
            self.tell("booked", out.person, out.specialization, out.run_id)

    def schedule_follow_up(self, follow_up_id: str, person: str, due: date) -> None:
        self.tell("schedule_follow_up", follow_up_id, person, due)

    def vitals(self, person: str) -> Mapping[str, Any]:
        """The vitals the gateway sent with this person's last message."""
        return self._vitals.get(person, {})

    def closed(self, session_id: str) -> None:
        self.send(Closed(session_id))
        self.send(Stats(self.stats()))  # its outcome counted at once, not at the next tick

    # --- from the gateway ---------------------------------------------------------------------

    def _readable(self) -> None:
        try:
            while not self.stopped.is_set() and self._conn.poll():
                self._dispatch(self._conn.recv())
        except (EOFError, OSError):
            self.stopped.set()

    def _dispatch(self, msg: object) -> None:
        if isinstance(msg, Say):
            self._vitals[msg.person] = dict(msg.vitals)
            if self.on_say is not None:
                self._spawn(self.on_say(msg))
        elif isinstance(msg, Tick):
            self.model_available = msg.model_available
            self.send(Stats(self.stats()))
        elif isinstance(msg, Answer):
            fut = self._waiting.get(msg.rid)
            if fut is not None and not fut.done():
                fut.set_result(msg)
        elif isinstance(msg, Stop):
            self.stopped.set()
        else:
            log.error("assistant process: unknown message %s", type(msg).__name__)

    def _spawn(self, coro: Awaitable[None]) -> None:
        async def run() -> None:
            await coro

        t = asyncio.create_task(run())
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)


class _PipePublisher:
    """The Publisher port: the gateway publishes it on its own broker link."""

    def __init__(self, link: GatewayLink) -> None:
        self._link = link

    async def publish(
        self,
        topic: str,
        payload: dict[str, Any] | str | bytes,
        *,
        qos: int = 1,
        retain: bool = False,
    ) -> None:
        self._link.send(Publish(topic, payload, qos, retain))


class RemoteModel:
    """The gateway's one local model (agents.llm.engine.LocalModel), asked over the pipe: the
    JSON schema goes there, the raw JSON comes back and is checked here against the caller's
    output contract (its class may be built at run time, so it never crosses the pipe)."""

    def __init__(self, link: GatewayLink) -> None:
        self._link = link

    @property
    def available(self) -> bool:
        return self._link.model_available

    async def generate(
        self,
        static: str,
        dynamic: str,
        output: type[M],
        *,
        max_tokens: int = 96,
        timeout_s: float = 3.0,
    ) -> Generation[M]:
        t0 = time.perf_counter()
        try:
            schema = grammar_schema(output)
        except OutputError:
            return _generation(t0, {}, "bad_schema")
        # The gateway's LocalModel keeps the caller's budget; a little more for the pipe.
        got = await self._link.call(
            "generate", static, dynamic, schema, max_tokens, timeout_s, timeout_s=timeout_s + 2
        )
        if got.error is not None or not isinstance(got.value, dict):
            return _generation(t0, {}, got.error or "internal")
        raw: dict[str, Any] = got.value
        if raw.get("error") is not None:
            return _generation(t0, raw, str(raw["error"]))
        try:
            data = parse_output(output, raw.get("data"))
        except OutputError:
            return _generation(t0, raw, "schema")
        return _generation(t0, raw, None, data)


def _generation(
    t0: float, raw: Mapping[str, Any], error: str | None, data: M | None = None
) -> Generation[M]:
    return Generation(
        data=data if error is None else None,
        error=error,
        first_token_ms=raw.get("first_token_ms"),
        total_ms=round((time.perf_counter() - t0) * 1000.0, 2),
        prompt_tokens=int(raw.get("prompt_tokens") or 0),
        completion_tokens=int(raw.get("completion_tokens") or 0),
        cached_tokens=int(raw.get("cached_tokens") or 0),
    )


@dataclass
class ChildParts:
    """What healthgw/assistant_child.py builds inside the assistant's process."""

    conversations: Conversations
    stats: Callable[[], dict[str, Any]]
    # Started once Ready went out (the triage model loads while the first message waits).
    background: list[Callable[[], Coroutine[Any, Any, None]]] = field(default_factory=list)
    close: Callable[[], None] | None = None


async def run(conn: Connection, build: Callable[[GatewayLink], ChildParts], nice: int) -> None:
    """The assistant process's main: resume, say Ready, serve until Stop or the gateway's
    end of the pipe closes, then stop the conversations (their rows stay for the next
    start)."""
    link = GatewayLink(conn)
    link.start()
    parts = build(link)
    convs = parts.conversations
    link.stats = parts.stats

    async def on_say(msg: Say) -> None:
        try:
            sid = await convs.say(msg.person, msg.text, msg.session_id)
        except RuntimeError:  # too many open conversations
            link.send(Said(msg.rid, None, "too_many"))
        except Exception as exc:
            log.error("assistant process: a message failed (%s)", type(exc).__name__)
            link.send(Said(msg.rid, None, type(exc).__name__))
        else:
            link.send(Said(msg.rid, sid))

    link.on_say = on_say
    await convs.resume()
    sessions = tuple(
        (sid, s.person, not s.closed)
        for sid in list(_known(convs))
        if (s := convs.session(sid)) is not None
    )
    link.send(Ready(os.getpid(), os.nice(0), sessions))
    link.send(Stats(parts.stats()))
    background = [asyncio.create_task(fn()) for fn in parts.background]
    try:
        await link.stopped.wait()
    finally:
        await convs.stop()
        for t in background:
            t.cancel()
        for t in background:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        link.close()
        if parts.close is not None:
            parts.close()


def _known(convs: Conversations) -> list[str]:
    return convs.session_ids()
