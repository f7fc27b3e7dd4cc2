"""What the gateway process does for the assistant's process, and what it refuses."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from datetime import date
from typing import Any

from agents.assistant.process.messages import Answer, Call, ToChild
from agents.assistant.process.serving import ChildRequests, GatewaySide


class _Publisher:
    async def publish(
        self, topic: str, payload: Any, *, qos: int = 1, retain: bool = False
    ) -> None:
        raise AssertionError("nothing is published here")


def _requests() -> tuple[ChildRequests, list[ToChild], list[Any], dict[str, int]]:
    sent: list[ToChild] = []
    done: list[Any] = []
    counters = {"refused_calls": 0}

    async def booked(person: str, spec: str | None, run_id: str) -> None:
        done.append(("booked", person, spec, run_id))

    def audit(record: Mapping[str, Any]) -> None:
        done.append(("audit", dict(record)))

    def follow_up(fid: str, person: str, due: date) -> None:
        done.append(("follow_up", fid, person, due))

    side = GatewaySide(_Publisher(), audit, booked, lambda: 0.0, schedule_follow_up=follow_up)
    tasks: list[Awaitable[Any]] = []
    return ChildRequests(side, sent.append, tasks.append, counters), sent, done, counters


async def test_fire_and_forget_calls_are_done_here() -> None:
    r, sent, done, counters = _requests()
    r.call(Call(0, "audit", ({"tool": "x", "ok": True},)))
    r.call(Call(0, "schedule_follow_up", ("f1", "dad", date(2026, 12, 1))))
    assert done == [("audit", {"tool": "x", "ok": True}), ("follow_up", "f1", "dad",
                    date(2026, 12, 1))]  # fmt: skip
    assert sent == [] and counters["refused_calls"] == 0


async def test_unknown_ops_and_mismatched_ids_are_refused() -> None:
    r, sent, done, counters = _requests()
    r.call(Call(7, "audit", ({"tool": "x"},)))  # a fire-and-forget op asking for a result
    r.call(Call(0, "generate", ("s", "d", {}, 8, 1.0)))  # a result-bearing op without an id
    r.call(Call(8, "shell", ()))  # type: ignore[arg-type]  # not an op at all
    assert done == [] and counters["refused_calls"] == 3
    assert sent == [Answer(8, error="refused")]


async def test_generate_without_a_model_answers_unavailable() -> None:
    sent: list[ToChild] = []
    side = GatewaySide(_Publisher(), lambda r: None, _never, lambda: 0.0)
    tasks: list[Any] = []
    r = ChildRequests(side, sent.append, tasks.append, {"refused_calls": 0})
    r.call(Call(3, "generate", ("s", "d", {}, 8, 1.0)))
    await asyncio.gather(*tasks)
    assert sent == [Answer(3, {"error": "unavailable"})]


async def _never(person: str, spec: str | None, run_id: str) -> None:
    raise AssertionError("no booking here")
