"""What the assistant's process asks of the gateway process (agents/assistant/process/messages.py
`Call`), done in the gateway process: the audit log, the booking event, the follow-up job,
a call to the one shared local model. Nothing else is done for the child."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import date
from typing import Any

from agents.assistant.process.messages import FIRE_AND_FORGET, Answer, Call, ToChild
from gateway.base.ports import Publisher

log = logging.getLogger("agents.assistant.process")


@dataclass(frozen=True)
class GatewaySide:
    """What the child asks the gateway process to do."""

    publisher: Publisher
    audit: Callable[[Mapping[str, Any]], object]
    booked: Callable[[str, str | None, str], Awaitable[None]]  # person, specialization, run
    now: Callable[[], float]
    schedule_follow_up: Callable[[str, str, date], object] | None = None
    model: Any = None  # agents.llm.engine.LocalModel | None
    vitals: Callable[[str], Mapping[str, Any]] | None = None


class ChildRequests:
    """Serves one child's `Call`s (a wrong op, or a result asked of a fire-and-forget one,
    is refused and counted in `process.refused_calls`)."""

    def __init__(
        self,
        side: GatewaySide,
        send: Callable[[ToChild], None],
        spawn: Callable[[Awaitable[Any]], None],
        counters: dict[str, int],
    ) -> None:
        self._side = side
        self._send = send
        self._spawn = spawn
        self.counters = counters

    def call(self, msg: Call) -> None:
        side, op, a = self._side, msg.op, msg.args
        if (msg.rid == 0) != (op in FIRE_AND_FORGET):
            self.counters["refused_calls"] += 1
            return
        if op == "audit":
            side.audit(a[0])
        elif op == "booked":
            self._spawn(side.booked(str(a[0]), a[1], str(a[2])))
        elif op == "schedule_follow_up":
            if side.schedule_follow_up is not None:
                side.schedule_follow_up(str(a[0]), str(a[1]), a[2])
        elif op == "generate":
            self._spawn(self._generate(msg.rid, a))
        else:
            self.counters["refused_calls"] += 1
            self._send(Answer(msg.rid, error="refused"))

    async def _generate(self, rid: int, a: tuple[Any, ...]) -> None:
        model = self._side.model
        if model is None:
            self._send(Answer(rid, {"error": "unavailable"}))
            return
        static, dynamic, schema, max_tokens, timeout_s = a
        gen = await model.generate_json(
            str(static), str(dynamic), dict(schema), max_tokens=int(max_tokens),
            timeout_s=float(timeout_s),
        )  # fmt: skip
        self._send(Answer(rid, asdict(gen)))
