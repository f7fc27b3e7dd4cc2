"""Issue 26 item 2: the SOS path is not behind bulk I/O. With every fsync taking 2 s (a disk
busy with readings, spill files and the tsdb outbox; `Database.sync` is the one place an
fsync happens, so a sleep there stands in for that disk), a hard SOS still texts within the
1 s bound, nothing fsyncs on the event loop, and the run's last write is fsynced before the
run ends (the press is acknowledged after it). The ladder's durable writes leave the loop too.
Real text queue and SDK -> local sink; the playbooks' test gateway (test_playbooks.py)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.playbooks.ladder import SosLadder
from gateway.base.db import Database
from gateway.contract.events import HardSosPayload
from gateway.contract.topics import EventType
from gateway.contract.values import Event
from gateway.notify.dispatcher import TextDispatcher
from gateway.notify.sms import TwilioSender
from simulators.sms_sink import SmsSink
from tests.agents import ALICE_CONTACTS, AMB_WEST
from tests.agents.playbooks.test_playbooks import Gateway

SID = "AC" + "e5" * 16
TOKEN = "tok"
SYNC_S = 2.0


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, float]]:
    """Every Database.sync as (on the event loop's thread?, when), each taking SYNC_S."""
    calls: list[tuple[bool, float]] = []
    real = Database.sync

    def slow(self: Database) -> None:
        calls.append((threading.current_thread() is threading.main_thread(), time.monotonic()))
        time.sleep(SYNC_S)
        real(self)

    monkeypatch.setattr(Database, "sync", slow)
    return calls


@pytest.fixture
def sink() -> Iterator[SmsSink]:
    with SmsSink(account_sid=SID, auth_token=TOKEN) as s:
        yield s


@pytest.fixture
def gw(tmp_path: Path, sink: SmsSink) -> Iterator[Gateway]:
    db = Database(tmp_path / "safety.db")
    texts = TextDispatcher(db, TwilioSender(SID, TOKEN, "+15005550006", sink.url, timeout=5))
    texts.start()
    g = Gateway(tmp_path / "safety.db", texts)  # type: ignore[arg-type]
    yield g
    texts.stop(timeout=SYNC_S * 3)
    g.close()
    db.close()


async def loop_lag(stop: asyncio.Event) -> float:
    """The longest the event loop was away, in s, until `stop`."""
    worst, last = 0.0, time.monotonic()
    while not stop.is_set():
        await asyncio.sleep(0.005)
        now = time.monotonic()
        worst, last = max(worst, now - last), now
    return worst


async def test_a_slow_fsync_delays_no_sos_text(
    gw: Gateway, sink: SmsSink, fsyncs: list[tuple[bool, float]]
) -> None:
    stop = asyncio.Event()
    lag = asyncio.create_task(loop_lag(stop))
    t0 = time.monotonic()
    assert await gw.runner.start("alice", device=None, location=None, trigger="button")
    ended = time.monotonic()
    stop.set()
    texts = sink.wait_for(1 + len(ALICE_CONTACTS))
    # The texts go out on several worker threads at once: their order at the provider is
    # the scheduler's (a run with the CPUs busy saw a contact's before the ambulance's).
    assert [m.to for m in texts].count(AMB_WEST) == 1
    assert all(m.received_at - t0 < 1.0 for m in texts)  # the ambulance's and the contacts'
    assert ended - t0 >= SYNC_S  # the run's last write waited for its fsync ...
    assert not [c for c in fsyncs if c[0]]  # ... off the loop: none ran on it
    assert await lag < 0.5


async def test_the_ladder_writes_off_the_loop(
    gw: Gateway, fsyncs: list[tuple[bool, float]]
) -> None:
    ladder = SosLadder(gw.db, gw.registry, gw.hh, gw.clock, gw._emit,
                       gw.journal.assigned_ambulance, window_s=60)  # fmt: skip
    stop = asyncio.Event()
    lag = asyncio.create_task(loop_lag(stop))
    payload = HardSosPayload("run-1", "button", None, "AMB-west").to_data()
    await ladder.on_event(Event(EventType.HARD_SOS, "alice", gw.clock.now(), payload))
    assert [r["run_id"] for r in ladder.waiting()] == ["run-1"]
    assert await ladder.ack("alice", "sms:Bob")
    stop.set()
    assert len(fsyncs) == 2 and not [c for c in fsyncs if c[0]]
    assert await lag < 0.5
