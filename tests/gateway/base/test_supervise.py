"""Supervision: a crashing asyncio loop is restarted with backoff and shows in ready(); a dead
thread (a text worker, the tsdb writer) is noticed and restarted; failures are counted and
announced as hub events, and logged without the exception's message (it may hold PHI)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.base.db import Database
from gateway.base.supervise import Supervisor
from gateway.contract.topics import EventType
from gateway.contract.values import Event
from gateway.notify.dispatcher import TextDispatcher
from gateway.tsdb.outbox import Outbox
from gateway.tsdb.writer import TimeSeriesWriter
from tests.brokers import Broker
from tests.harness import make_settings, running, watching


async def wait_for(pred: Callable[[], object], within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if pred():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached in time")


class Emitted:
    def __init__(self) -> None:
        self.events: list[Event] = []

    async def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: EventType, component: str) -> list[dict[str, Any]]:
        return [
            dict(e.data)
            for e in self.events
            if e.type is kind and e.data.get("component") == component
        ]


class Killed(BaseException):
    """Escapes every `except Exception`: the way a thread really dies."""


async def test_crashing_task_restarts_with_backoff_and_shows_in_ready(
    caplog: pytest.LogCaptureFixture,
) -> None:
    emitted = Emitted()
    sup = Supervisor(emitted, backoff=(0.1, 0.2))
    starts: list[float] = []
    forever = asyncio.Event()

    async def loop() -> None:
        starts.append(time.monotonic())
        if len(starts) <= 2:
            raise ValueError("heart rate 181 for grandma")  # PHI in the message
        await forever.wait()

    sup.task("monitor_tick", loop, critical=True)
    await asyncio.sleep(0.01)
    assert sup.ready() == {"monitor_tick": False}  # down during the first backoff
    await wait_for(lambda: len(starts) == 3)
    await asyncio.sleep(0.01)
    assert sup.ready() == {"monitor_tick": True}
    assert starts[1] - starts[0] >= 0.09 and starts[2] - starts[1] >= 0.19  # backoff grows
    st = sup.stats()["monitor_tick"]
    assert st["failures"] == 2 and st["restarts"] == 2 and st["last_error"] == "ValueError"
    failed = emitted.of(EventType.COMPONENT_FAILED, "monitor_tick")
    assert [f["restart_in_s"] for f in failed] == [0.1, 0.2]
    assert failed[0]["critical"] is True and failed[0]["error"] == "ValueError"
    assert len(emitted.of(EventType.COMPONENT_RESTARTED, "monitor_tick")) == 2
    assert all(e.person == "" for e in emitted.events)  # hub events
    logged = caplog.text
    assert "ValueError" in logged and "test_supervise.py" in logged  # class and code path
    assert "grandma" not in logged and "181" not in logged
    # Cancellation is a stop, not a crash.
    await sup.stop()
    assert sup.stats()["monitor_tick"]["failures"] == 2


async def test_a_loop_that_returns_is_restarted() -> None:
    sup = Supervisor(backoff=(0.05,))
    runs = 0

    async def once() -> None:
        nonlocal runs
        runs += 1

    sup.task("housekeeping", once, critical=False)
    await wait_for(lambda: runs >= 3)
    assert sup.ready() == {}  # not safety-critical: never makes /readyz fail
    assert sup.stats()["housekeeping"]["last_error"] == "Exited"
    await sup.stop()


async def test_dead_thread_is_detected_and_restarted() -> None:
    emitted = Emitted()
    sup = Supervisor(emitted, backoff=(0.05,), watch_interval_s=0.02)
    sup.bind()
    stop = threading.Event()
    box: list[threading.Thread] = []

    def spawn() -> None:
        t = threading.Thread(target=stop.wait, daemon=True)
        t.start()
        box.append(t)

    dying = threading.Thread(target=lambda: None)
    dying.start()
    dying.join()
    box.append(dying)
    sup.watch("worker", lambda: box[-1].is_alive(), spawn, critical=True)
    await sup.start()
    try:
        await wait_for(lambda: emitted.of(EventType.COMPONENT_FAILED, "worker"))
        await wait_for(lambda: sup.ready()["worker"])
        assert len(box) == 2 and box[-1].is_alive()
        await wait_for(lambda: emitted.of(EventType.COMPONENT_RESTARTED, "worker"))
        assert sup.stats()["worker"]["failures"] == 1
    finally:
        await sup.stop()
        stop.set()


async def test_watch_without_a_restart_hook_stays_down() -> None:
    sup = Supervisor(backoff=(0.01,), watch_interval_s=0.02)
    alive = False
    sup.watch("store", lambda: alive, None, critical=True)
    await sup.start()
    try:
        await wait_for(lambda: sup.ready() == {"store": False})
        await asyncio.sleep(0.1)
        assert sup.stats()["store"]["failures"] == 1  # counted once, not every check
        alive = True
        await wait_for(lambda: sup.ready() == {"store": True})
    finally:
        await sup.stop()


class DiesOnce:
    """An SMS sender whose first send kills the worker thread."""

    name = "dies-once"

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.killed = False

    def send(self, to: str, body: str) -> str:
        if not self.killed:
            self.killed = True
            raise Killed
        self.sent.append(to)
        return f"S{len(self.sent)}"

    def was_sent(self, to: str, marker: str, since: float) -> bool | None:
        return False


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
async def test_dead_text_worker_is_revived_and_its_text_still_goes(tmp_path: Path) -> None:
    sender = DiesOnce()
    db = Database(tmp_path / "safety.db")
    texts = TextDispatcher(db, sender, workers=1, backoff=(0.01,))
    sup = Supervisor(backoff=(0.05,), watch_interval_s=0.02)
    sup.watch("texts", texts.alive, texts.revive, critical=True)
    texts.start()
    await sup.start()
    try:
        texts.submit(to="+447700900111", body="SOS", key="k1", person="ana", purpose="sos:x")
        await wait_for(lambda: sup.stats()["texts"]["failures"] == 1)
        await wait_for(lambda: sender.sent == ["+447700900111"])  # handed back, sent once
        await wait_for(lambda: sup.ready() == {"texts": True} and texts.alive())
        assert sup.stats()["texts"]["restarts"] == 1
    finally:
        await sup.stop()
        texts.stop(timeout=5)
        db.close()


class DiesOnceSink:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.killed = False

    def write(self, lines: Any) -> None:
        if not self.killed:
            self.killed = True
            raise Killed
        self.lines.extend(lines)

    def close(self) -> None:
        pass


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
async def test_dead_tsdb_writer_is_revived(tmp_path: Path) -> None:
    sink = DiesOnceSink()
    w = TimeSeriesWriter(sink, Outbox(tmp_path / "outbox", 1 << 20), flush_s=0.02)
    sup = Supervisor(backoff=(0.05,), watch_interval_s=0.02)
    sup.watch("tsdb_writer", w.alive, w.revive, critical=False)
    w.start()
    await sup.start()
    try:
        w.add_line("gateway,gw=hub up=1i 1")
        await wait_for(lambda: sup.stats()["tsdb_writer"]["failures"] == 1)
        await wait_for(lambda: w.alive() and sup.stats()["tsdb_writer"]["up"])
        w.add_line("gateway,gw=hub up=2i 2")
        await wait_for(lambda: any("up=2i" in ln for ln in sink.lines))
    finally:
        await sup.stop()
        w.stop()


@pytest.mark.integration
async def test_gateway_monitor_tick_crash_shows_in_ready_and_is_announced(
    tmp_path: Path, broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = make_settings(tmp_path / "data", broker, None)
    async with running(s) as asm, watching(broker) as w:
        gw = asm.gateway
        assert gw.ready()["monitor_tick"] is True
        real = gw.monitor.tick
        calls = 0

        def tick() -> Any:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise RuntimeError("boom")
            return real()

        monkeypatch.setattr(gw.monitor, "tick", tick)
        await wait_for(lambda: not gw.ready()["monitor_tick"], 5)
        await wait_for(lambda: gw.ready()["monitor_tick"] and calls >= 2, 10)
        assert gw.stats()["components"]["monitor_tick"]["failures"] == 1
        failed = await w.wait(lambda: w.events("component_failed"))
        assert failed[0]["component"] == "monitor_tick" and failed[0]["person"] == ""
        await w.wait(lambda: w.events("component_restarted"))


async def test_readyz_shows_a_dead_non_critical_part_but_stays_ready(
    tmp_path: Path, broker: Broker
) -> None:
    """The dead-letter writer is not safety-critical: its death shows in /readyz's
    components (and is revived), but the hub stays ready."""
    import httpx

    from gateway.api.server import create_app
    from tests.harness import ADMIN

    s = make_settings(tmp_path / "data", broker, None)
    async with running(s) as asm:
        gw = asm.gateway
        app = create_app(gw.api, admin_token=ADMIN)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hub") as c:
            body = (await c.get("/readyz")).json()
            assert body["components"]["deadletter"] is True and body["ready"] is True
            gw.deadletters.stop()  # the thread ends, as if it had died
            await wait_for(lambda: not gw.components()["deadletter"], 10)
            r = await c.get("/readyz")
            assert r.status_code == 200 and "deadletter" not in r.json()["checks"]
            await wait_for(lambda: gw.components()["deadletter"], 20)
            assert gw.deadletters.is_alive()


async def test_a_dead_bus_pump_is_critical_and_revived(tmp_path: Path, broker: Broker) -> None:
    s = make_settings(tmp_path / "data", broker, None)
    async with running(s) as asm:
        gw = asm.gateway
        assert gw.ready()["event_bus"] is True
        pump = next(t for t in asyncio.all_tasks() if t.get_name() == "bus:store")
        pump.cancel()  # ends as only a BaseException could end it
        await wait_for(lambda: not gw.ready()["event_bus"], 10)
        await wait_for(lambda: gw.ready()["event_bus"], 20)
        assert gw.stats()["components"]["event_bus"]["restarts"] >= 1


def test_a_components_backoff_starts_again_after_a_stable_run() -> None:
    """The delays follow its schedule while it keeps failing (gateway/base/backoff.py), and
    start again from the first once it has stayed up `stable_s`."""
    sup = Supervisor(backoff=(1, 2, 4), stable_s=60.0)
    sup.watch("part", lambda: True, critical=False)
    comp = sup._components["part"]
    assert [comp.next_delay() for _ in range(4)] == [1.0, 2.0, 4.0, 4.0]
    comp.up, comp.up_since = True, time.monotonic() - 5  # back, but died again at once
    assert comp.next_delay() == 4.0
    comp.up_since = time.monotonic() - 61  # ran a minute: recovered
    assert comp.next_delay() == 1.0
