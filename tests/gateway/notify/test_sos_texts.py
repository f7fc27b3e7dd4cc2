"""SOS texts go to a worker before their row is written (gateway/notify/text_submit.py): no
SOS text waits for the disk, a key still sends once, a refused row still sends, and a crash
between the send and the row can send a text twice but never loses it.

A slow disk cannot be made on demand, so `SlowDisk` stands in for one: a Database whose
writes on the submitting thread (the event loop in the gateway) and/or whose fsyncs
(`Database.sync`, the one place an fsync happens) sleep. Real SDK -> local sink."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gateway.base.db import Database
from gateway.notify.dispatcher import TextDispatcher
from gateway.notify.sms import TwilioSender
from simulators.sms_sink import SmsSink

SID = "AC" + "e5" * 16
TOKEN = "tok"
FROM = "+15005550006"
AMBULANCE = "+447700900111"
BODY = "SOS: Ana Silva needs help at 51.5007,-0.1246"
ROOT = Path(__file__).resolve().parents[3]


class SlowDisk(Database):
    """`row_s`: each transaction of a submitting thread (any but the queue's workers) sleeps
    before it commits (the SOS row written while the disk is busy); `sync_s`: each fsync
    sleeps. `fail_rows`: a submitting thread's transactions fail as on a full disk."""

    def __init__(self, path: Path, *, row_s: float = 0.0, sync_s: float = 0.0) -> None:
        super().__init__(path)
        self.row_s, self.sync_s = row_s, sync_s
        self.fail_rows = False
        self.syncs: list[tuple[str, float, float]] = []  # (thread, start, end) per fsync

    @contextmanager
    def tx(self, *, durable: bool = False) -> Iterator[sqlite3.Connection]:
        main = not threading.current_thread().name.startswith("sms-")
        if main and self.fail_rows:
            raise sqlite3.OperationalError("database or disk is full")
        with super().tx(durable=durable) as c:
            yield c
            if main:
                time.sleep(self.row_s)

    def sync(self) -> None:
        t0 = time.monotonic()
        time.sleep(self.sync_s)
        super().sync()
        self.syncs.append((threading.current_thread().name, t0, time.monotonic()))


@pytest.fixture
def sink() -> Iterator[SmsSink]:
    with SmsSink(account_sid=SID, auth_token=TOKEN) as s:
        yield s


Factory = Callable[..., tuple[TextDispatcher, SlowDisk]]


@pytest.fixture
def make(sink: SmsSink, tmp_path: Path) -> Iterator[Factory]:
    made: list[tuple[TextDispatcher, SlowDisk]] = []

    def build(*, start: bool = True, **slow: Any) -> tuple[TextDispatcher, SlowDisk]:
        db = SlowDisk(tmp_path / "safety.db", **slow)
        d = TextDispatcher(db, TwilioSender(SID, TOKEN, FROM, sink.url, timeout=5),
                           backoff=(0.01, 0.02))  # fmt: skip
        made.append((d, db))
        if start:
            d.start()
        return d, db

    yield build
    for d, db in made:
        d.stop(timeout=5)
        db.close()


def sos(d: TextDispatcher, key: str = "run-1:3:abc", purpose: str = "sos:direct") -> str:
    return d.submit(to=AMBULANCE, body=BODY, key=key, person="ana", purpose=purpose)


def state(tmp_path: Path, msg_id: str) -> str | None:
    db = Database(tmp_path / "safety.db")
    try:
        r = db.conn().execute("SELECT state FROM messages WHERE id = ?", (msg_id,)).fetchone()
        return None if r is None else str(r["state"])
    finally:
        db.close()


def test_sos_text_is_sent_while_its_row_is_still_being_written(
    make: Factory, sink: SmsSink, tmp_path: Path
) -> None:
    d, _ = make(row_s=1.5)
    msg_id = sos(d)
    returned = time.time()
    [m] = sink.wait_for(1)
    assert m.received_wall < returned - 1.0  # out long before the row was committed
    assert d.wait_idle(10)
    assert state(tmp_path, msg_id) == "sent"  # the worker waited for the row to record it
    assert d.unjournaled == 0 and d.unrecorded == 0


def test_sos_submit_never_waits_for_an_fsync(make: Factory, sink: SmsSink, tmp_path: Path) -> None:
    d, db = make(sync_s=2.0)
    t0 = time.monotonic()
    msg_id = sos(d)
    assert time.monotonic() - t0 < 1.0
    sink.wait_for(1, timeout=1.0)
    assert not db.syncs  # the text is out and nothing has been fsynced yet
    assert d.wait_idle(10)
    # The row went to disk with the outcome, on the worker's thread.
    assert db.syncs and all(name.startswith("sms-") for name, _, _ in db.syncs)
    assert state(tmp_path, msg_id) == "sent"


def test_other_texts_are_on_disk_before_they_are_sent(make: Factory, sink: SmsSink) -> None:
    # Not SOS (a family alert): fsynced first, so it goes out once whatever crashes.
    d, db = make(sync_s=1.0)
    sos(d, key="med:1", purpose="medication_missed:contact")
    [(name, _, synced)] = db.syncs
    assert name == "MainThread"
    [m] = sink.wait_for(1)
    assert m.received_at >= synced


@pytest.mark.parametrize("purpose", ["sos:direct", "medication_missed:contact"])
def test_one_key_from_many_threads_sends_once(make: Factory, sink: SmsSink, purpose: str) -> None:
    d, _ = make()
    barrier = threading.Barrier(8)
    ids: list[str] = []

    def press() -> None:
        barrier.wait(5)
        ids.append(sos(d, key="run-7:3:abc", purpose=purpose))

    threads = [threading.Thread(target=press) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(ids) == 8 and len(set(ids)) == 1
    assert d.wait_idle(10)
    assert len(sink.wait_for(2, timeout=0.5)) == 1
    assert len(d.messages()) == 1


def test_a_key_submitted_while_its_row_is_written_sends_once(make: Factory, sink: SmsSink) -> None:
    d, _ = make(row_s=1.0)  # the first submit is still writing its row ...
    first: list[str] = []
    t = threading.Thread(target=lambda: first.append(sos(d)))
    t.start()
    sink.wait_for(1)  # ... and its text is out
    assert sos(d) == sos(d)  # from another thread: the in-memory map answers
    t.join(5)
    assert first == [sos(d)]
    assert d.wait_idle(10)
    assert len(sink.wait_for(2, timeout=0.5)) == 1


def test_a_key_from_before_a_restart_sends_nothing(make: Factory, sink: SmsSink) -> None:
    a, _ = make()
    msg_id = sos(a)
    assert a.wait_idle(10)
    a.stop()
    b, _ = make()
    assert sos(b) == msg_id
    assert b.wait_idle(10)
    assert len(sink.wait_for(2, timeout=0.5)) == 1


def test_a_refused_row_still_sends_once(make: Factory, sink: SmsSink, tmp_path: Path) -> None:
    d, db = make()
    db.fail_rows = True  # the disk is full
    msg_id = sos(d)
    assert sos(d) == msg_id  # the same key again: nothing new
    [m] = sink.wait_for(1)
    assert m.to == AMBULANCE
    assert d.wait_idle(10)
    assert d.unjournaled == 1
    assert state(tmp_path, msg_id) is None  # sent from memory
    assert len(sink.wait_for(2, timeout=0.5)) == 1


_CHILD = """
import sys, time, threading
from pathlib import Path
from gateway.notify.dispatcher import TextDispatcher
from gateway.notify.sms import TwilioSender
from tests.gateway.notify.test_sos_texts import SlowDisk, AMBULANCE, BODY, SID, TOKEN, FROM
db = SlowDisk(Path(sys.argv[1]), row_s=60.0)  # the row's commit never comes: killed first
d = TextDispatcher(db, TwilioSender(SID, TOKEN, FROM, sys.argv[2], timeout=5))
d.start()
d.submit(to=AMBULANCE, body=BODY, key="run-1:3:abc", person="ana", purpose="sos:direct")
"""


def test_kill_9_between_send_and_row_sends_again_never_loses(
    make: Factory, sink: SmsSink, tmp_path: Path
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path / "safety.db"), sink.url],
        env=os.environ | {"PYTHONPATH": str(ROOT)},
    )
    try:
        [first] = sink.wait_for(1, timeout=30)  # sent; its row is not committed yet
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    # The restarted gateway resumes the run, which submits the same key again.
    d, _ = make()
    msg_id = sos(d)
    assert d.wait_idle(10)
    texts = sink.wait_for(3, timeout=0.5)
    assert len(texts) == 2  # twice (the price of not waiting for the disk), never zero
    assert texts[1].body.split(" [ref")[0] == first.body.split(" [ref")[0] == BODY
    assert state(tmp_path, msg_id) == "sent"
