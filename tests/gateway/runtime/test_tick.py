"""One tick (gateway/runtime/gateway.py Gateway.tick): the running gateway's 1 s loop and an
offline caller's `tick()` run the same method, so a passed "are you OK?" deadline is acted
on either way. Running, the escalation watcher's own supervised loop ticks the deadlines;
the monitor's tick does not also run them, so a failing escalation cannot take the monitor's
tick down with it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.base.clock import ManualClock
from gateway.base.settings import Settings
from gateway.household.model import load_household
from gateway.runtime.extensions import Extensions
from gateway.runtime.gateway import Gateway
from tests.brokers import Broker

ROOT = Path(__file__).resolve().parents[3]
HH = load_household(ROOT / "examples" / "household.yaml")
FALL_WINDOW_S = 30.0


class RecordingSos:
    """The SOS playbooks' port: records what the gateway asked for."""

    def __init__(self) -> None:
        self.started: list[tuple[str, str]] = []

    async def start(
        self, person: str, *, device: str | None, location: tuple[float, float] | None, trigger: str
    ) -> bool:
        self.started.append((person, trigger))
        return True

    async def end(self, person: str, *, device: str | None, trigger: str) -> bool:
        return True


def _gateway(tmp_path: Path, sos: RecordingSos, mqtt_url: str = "mqtt://127.0.0.1:9") -> Gateway:
    settings = Settings(
        data_dir=tmp_path / "data",
        mqtt_url=mqtt_url,
        api_token="tick-test-Qm7vT2pX9rLw4Kd8Zs",
        ha_discovery_prefix="",
        fall_window_s=FALL_WINDOW_S,
    )
    return Gateway(
        settings, HH, clock=ManualClock(1_790_000_000.0), extend=lambda gw: Extensions(sos=sos)
    )


async def _until(pred: Callable[[], bool], within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not pred():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("path", ["tick", "loop"])
async def test_a_passed_fall_deadline_is_escalated_by_the_loop_as_by_tick(
    tmp_path: Path, path: str
) -> None:
    sos = RecordingSos()
    gw = _gateway(tmp_path, sos)
    await gw.start(offline=True)
    try:
        await gw.escalation.on_fall("dad", "watch-jon")
        assert gw.escalation.pending("dad") and sos.started == []
        gw.clock.advance(FALL_WINDOW_S + 1)  # type: ignore[attr-defined]
        if path == "tick":
            await gw.tick()
        else:  # the running gateway's monitor_tick task, with nothing else ticking
            loop = asyncio.create_task(gw._tick_loop())
            try:
                await _until(lambda: bool(sos.started))
            finally:
                loop.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await loop
        assert sos.started == [("dad", "fall_no_movement")]
        assert gw.escalation.pending("dad") == [] and gw.escalation.escalations == 1
    finally:
        await gw.stop()


@pytest.mark.integration
async def test_running_a_deadline_is_escalated_and_a_failing_escalation_leaves_the_monitor_tick(
    tmp_path: Path, broker: Broker
) -> None:
    sos = RecordingSos()
    gw = _gateway(tmp_path, sos, broker.url)
    await gw.start()
    try:
        await _until(lambda: gw.components().get("monitor_tick", False))
        # The running gateway acts on a passed deadline (the watcher's own loop, 0.25 s).
        await gw.escalation.on_fall("dad", "watch-jon")
        gw.clock.advance(FALL_WINDOW_S + 1)  # type: ignore[attr-defined]
        await _until(lambda: bool(sos.started))
        assert sos.started == [("dad", "fall_no_movement")]
        assert gw.escalation.pending("dad") == [] and gw.escalation.escalations == 1

        # Prompt deadlines that cannot be ticked show the escalation down, not the monitor.
        async def broken() -> None:
            raise OSError("safety.db unreadable")

        gw.escalation.tick = broken  # type: ignore[method-assign]
        await _until(lambda: not gw.escalation.running())
        await asyncio.sleep(1.5)  # at least one more monitor tick
        assert gw.components()["monitor_tick"] is True
        assert gw.supervisor.stats()["monitor_tick"]["failures"] == 0
    finally:
        await gw.stop()
