"""The loops that must keep ticking (the SOS ladder, prompt deadlines, the retained person
state, medication reminders) are supervised: a tick that keeps failing shows the part down
in ready() / stats()["components"] and announces `component_failed`; once ticks succeed
again it is back up (`component_restarted`). Failures are logged as the exception's class
and code location, never its message (it may quote a name, a phone or a reading)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.base.clock import ManualClock
from gateway.base.db import Database
from gateway.base.loop_health import TickHealth
from gateway.contract.topics import EventType
from gateway.contract.values import Event
from gateway.escalation.watcher import EscalationWatcher
from healthgw.assembly.hub import Assembly, assemble
from tests.brokers import Broker
from tests.gateway.escalation.test_watcher import Recorder
from tests.harness import make_settings

# What a failing tick's message might say: a name and a phone (the PHI guard fails the test
# if either reaches a log line) and a marker to look for.
SECRET = "tick-secret-2718 for Maria Lopez, call +447700900201"


async def wait_for(pred: Callable[[], object], within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if pred():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached in time")


def _ladder(asm: Assembly) -> Any:
    assert asm.gateway.ladder is not None
    return asm.gateway.ladder


# component -> (critical, the object whose loop ticks, the method each tick calls)
LOOPS: dict[str, tuple[bool, Callable[[Assembly], Any], str]] = {
    "sos_ladder": (True, _ladder, "tick"),
    "escalation": (True, lambda asm: asm.gateway.escalation, "tick"),
    "person_state": (False, lambda asm: asm.gateway.person_state, "flush"),
    "reminders": (False, lambda asm: asm.meds, "tick"),
}


@pytest.mark.integration
@pytest.mark.parametrize("name", list(LOOPS))
async def test_a_failing_tick_shows_the_loop_down_then_it_recovers(
    tmp_path: Path,
    broker: Broker,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    name: str,
) -> None:
    critical, owner, method = LOOPS[name]
    asm = assemble(make_settings(tmp_path / "data", broker, None))
    gw = asm.gateway
    # Fast loops, so three failures in a row take well under a second.
    _ladder(asm).poll_s = 0.05
    gw.escalation.poll_s = 0.05
    asm.meds.tick_s = 0.05
    gw.person_state._tick = 0.05
    events: list[Event] = []
    gw.add_event_hook(events.append)

    def of(kind: EventType) -> list[Event]:
        return [e for e in events if e.type is kind and e.data.get("component") == name]

    obj = owner(asm)
    real = getattr(obj, method)
    broken = True

    async def tick(*args: Any, **kwargs: Any) -> Any:
        if broken:
            raise RuntimeError(SECRET)
        return await real(*args, **kwargs)

    await gw.start()
    try:
        assert gw.components()[name] is True
        assert (name in gw.ready()) is critical  # safety-critical parts gate /readyz
        with caplog.at_level(logging.INFO):
            monkeypatch.setattr(obj, method, tick)
            await wait_for(lambda: not gw.components()[name])
            if critical:
                assert gw.ready()[name] is False
            stats = gw.stats()["components"][name]
            assert stats["up"] is False and stats["failures"] >= 1
            await wait_for(lambda: of(EventType.COMPONENT_FAILED))
            failed = of(EventType.COMPONENT_FAILED)[0]
            assert failed.person == "" and failed.data["critical"] is critical
            broken = False  # the fault is gone: the next tick succeeds
            await wait_for(lambda: gw.components()[name])
            await wait_for(lambda: of(EventType.COMPONENT_RESTARTED))
            if critical:
                assert gw.ready()[name] is True
    finally:
        await gw.stop()
    assert "RuntimeError at" in caplog.text  # the class and the code location ...
    assert "tick-secret" not in caplog.text and "Maria" not in caplog.text  # ... never the message


async def test_a_loop_whose_task_died_is_started_again(tmp_path: Path) -> None:
    """The watch's restart hook brings a dead loop back, and never starts a second one."""
    rec = Recorder()
    w = EscalationWatcher(Database(tmp_path / "safety.db"), rec, rec, rec.emit, ManualClock(),
                          contacts=rec, poll_s=0.01)  # fmt: skip
    await w.start()
    first = w._task
    await w.start()  # alive: no second loop
    assert w._task is first and w.running()
    assert first is not None
    first.cancel()
    await asyncio.sleep(0.01)
    assert not w.running()
    await w.start()
    assert w.running() and w._task is not first
    await w.stop()


async def test_a_failed_escalation_is_not_dropped(tmp_path: Path) -> None:
    """An escalation whose SOS event could not be sent is due again on the next tick (as
    after a crash), instead of vanishing from the pending prompts."""
    clock, rec = ManualClock(), Recorder()
    w = EscalationWatcher(Database(tmp_path / "safety.db"), rec, rec, rec.emit, clock,
                          contacts=rec, window_s=60)  # fmt: skip
    pid = await w.on_fall("dad", "watch-jon")
    clock.advance(61)
    real = rec.emit
    calls = 0

    async def emit(e: Event) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError(SECRET)
        await real(e)

    w._emit = emit
    with pytest.raises(RuntimeError):
        await w.tick()
    assert [p["prompt_id"] for p in w.pending("dad")] == [pid]
    await w.tick()
    assert rec.sos == [("dad", "fall_no_movement")] and w.pending() == []


def test_tick_health_needs_three_failures_in_a_row(caplog: pytest.LogCaptureFixture) -> None:
    h = TickHealth("demo")
    try:
        raise ValueError(SECRET)
    except ValueError as e:
        exc = e
    for _ in range(2):
        h.failed(exc)
    assert h.healthy()
    h.ok()
    for _ in range(3):
        h.failed(exc)
    assert not h.healthy() and h.as_dict() == {"consecutive_failures": 3, "tick_failures": 5}
    h.ok()
    assert h.healthy()
    assert "ValueError at" in caplog.text and "tick-secret" not in caplog.text
