"""The gateway's lifecycle (gateway/runtime/extensions.py): parts start in order on one
AsyncExitStack and stop in exact reverse; a failed start stops what had started; the agents
side is handed in whole at construction."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

import pytest

from gateway.base.clock import ManualClock
from gateway.base.settings import Settings
from gateway.household.model import load_household
from gateway.runtime.extensions import Extensions, Step, enter
from gateway.runtime.gateway import Gateway

ROOT = Path(__file__).resolve().parents[3]
HH = load_household(ROOT / "examples" / "household.yaml")


class Recorder:
    def __init__(self, name: str, log: list[str], *, fail_start: bool = False) -> None:
        self.name = name
        self._log = log
        self._fail = fail_start

    async def start(self) -> None:
        if self._fail:
            raise RuntimeError(f"{self.name} would not start")
        self._log.append(f"start {self.name}")

    async def stop(self) -> None:
        self._log.append(f"stop {self.name}")


async def test_parts_stop_in_exact_reverse_and_a_failed_stop_does_not_block_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log: list[str] = []

    def broken() -> None:
        raise OSError("disk gone")

    async with contextlib.AsyncExitStack() as stack:
        await enter(stack, Recorder("a", log))
        await enter(stack, Step("b", lambda: log.append("start b"), broken))
        await enter(stack, Recorder("c", log))
    assert log == ["start a", "start b", "start c", "stop c", "stop a"]
    assert "stopping b failed" in caplog.text


def _settings(tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path,
        mqtt_url="mqtt://127.0.0.1:9",
        api_token="extensions-test-Qm7vT2pX9rLw4Kd8Zs",
        ha_discovery_prefix="",
    )


async def test_the_agents_side_is_handed_in_whole_and_runs_inside_the_core(
    tmp_path: Path,
) -> None:
    log: list[str] = []
    seen: dict[str, object] = {}

    def extend(gw: Gateway) -> Extensions:
        # Everything the agents use is built before they are.
        seen["store"], seen["bus"], seen["link"] = gw.store, gw.bus, gw.link
        return Extensions(parts=[Recorder("x", log), Recorder("y", log)], sos_open=lambda p: True)

    gw = Gateway(_settings(tmp_path), HH, clock=ManualClock(1_790_000_000.0), extend=extend)
    assert seen["store"] is gw.store and gw.person_state.sos_open is not None
    await gw.start(offline=True)
    assert gw.bus.alive() and gw.store.alive()  # the core was up before the parts started
    assert log == ["start x", "start y"]
    await gw.stop()
    assert log == ["start x", "start y", "stop y", "stop x"]
    assert not gw.store.alive()
    await gw.stop()  # a second stop is harmless
    assert log.count("stop x") == 1


async def test_a_part_that_fails_to_start_stops_what_had_started(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log: list[str] = []
    parts = [Recorder("x", log), Recorder("bad", log, fail_start=True), Recorder("z", log)]
    gw = Gateway(
        _settings(tmp_path),
        HH,
        clock=ManualClock(1_790_000_000.0),
        extend=lambda gw: Extensions(parts=parts),
    )
    caplog.set_level(logging.ERROR)
    with pytest.raises(RuntimeError, match="bad would not start"):
        await gw.start(offline=True)
    assert log == ["start x", "stop x"]  # z never started, x stopped again
    assert not gw.store.alive()  # the core that had started is stopped again


async def test_without_the_agents_a_hard_sos_is_refused_loudly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    gw = Gateway(_settings(tmp_path), HH, clock=ManualClock(1_790_000_000.0))
    await gw.start(offline=True)
    try:
        ok = await gw.sos.start("dad", device=None, location=None, trigger="api")
        assert ok is False and "no SOS playbooks" in caplog.text
        assert gw.ready()["sos_handler"] is False
    finally:
        await gw.stop()
