from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gateway.base.db import Database
from gateway.contract.topics import EventType
from gateway.contract.values import Event, Reading
from gateway.store import Store

T0 = 1_790_000_000.0
DAY = 86_400.0


def rd(
    seq: int | None,
    *,
    ts: float | None = None,
    person: str = "alice",
    device: str = "watch",
    **kw: Any,
) -> Reading:
    base = seq if seq is not None else 0
    fields: dict[str, Any] = {"heart_rate": 60.0 + base % 40, "received_at": T0 + base + 0.5}
    fields.update(kw)
    return Reading(
        person=person, device=device, ts=T0 + base if ts is None else ts, seq=seq, **fields
    )


def count(db: Database, table: str) -> int:
    return int(db.conn().execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


def spill_files(d: Path) -> list[Path]:
    return sorted(d.glob("spill-*.jsonl"))


def spilled_lines(d: Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in spill_files(d))


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    d = Database(tmp_path / "gw.db")
    yield d
    d.close()


@pytest.fixture
def make_store(db: Database, tmp_path: Path) -> Iterator[Any]:
    stores: list[Store] = []

    def make(**kw: Any) -> Store:
        kw.setdefault("spill_dir", tmp_path / "spill")
        s = Store(kw.pop("db", db), **kw)
        stores.append(s)
        return s

    yield make
    for s in stores:
        s.stop()


# --- round trips ---------------------------------------------------------------------------


def test_reading_round_trip(make_store: Any) -> None:
    store = make_store()
    store.start()
    full = Reading(
        person="alice",
        device="watch",
        ts=T0,
        seq=7,
        heart_rate=72.5,
        spo2=97.0,
        systolic_bp=121.0,
        diastolic_bp=79.0,
        temperature_c=36.8,
        respiratory_rate=14.0,
        steps=1200,
        on_supplemental_o2=False,
        consciousness="A",
        sleep={"deep": 1.5, "light": 4.0, "rem": 1.0, "awake": 0.5},
        fall_detected=True,
        battery=81.0,
        latitude=51.5,
        longitude=-0.12,
        received_at=T0 + 0.2,
    )
    store.add_reading(
        full, news2_total=3, news2_level="low_medium", anomaly=0.42, flags=["spo2_low"]
    )
    store.add_reading(
        Reading(person="alice", device="ring", ts=T0 + 1, spo2=95.0, received_at=T0 + 1.1)
    )
    assert store.flush()

    rows = store.readings("alice")
    assert [r["device"] for r in rows] == ["watch", "ring"]
    assert rows[0] == {
        "person": "alice",
        "device": "watch",
        "ts": T0,
        "seq": 7,
        "heart_rate": 72.5,
        "spo2": 97.0,
        "systolic_bp": 121.0,
        "diastolic_bp": 79.0,
        "temperature_c": 36.8,
        "respiratory_rate": 14.0,
        "steps": 1200,
        "on_supplemental_o2": False,
        "consciousness": "A",
        "fall_detected": True,
        "battery": 81.0,
        "latitude": 51.5,
        "longitude": -0.12,
        "sleep": {"deep": 1.5, "light": 4.0, "rem": 1.0, "awake": 0.5},
        "received_at": T0 + 0.2,
        "news2_total": 3,
        "news2_level": "low_medium",
        "anomaly": 0.42,
        "flags": ["spo2_low"],
    }
    ring = rows[1]
    assert ring["seq"] is None  # stored as -1 for the unique key, returned as None
    assert ring["spo2"] == 95.0
    assert ring["heart_rate"] is None
    assert ring["on_supplemental_o2"] is None
    assert ring["flags"] == []
    assert ring["news2_total"] is None


def test_readings_filters_window_and_limit(make_store: Any) -> None:
    store = make_store()
    store.start()
    for i in range(10):
        store.add_reading(rd(i, device="watch"))
        store.add_reading(rd(i, device="ring", ts=T0 + i + 0.1))
    store.add_reading(rd(0, person="bob"))
    assert store.flush()

    assert len(store.readings("alice")) == 20
    assert [r["seq"] for r in store.readings("alice", device="ring")] == list(range(10))
    # since inclusive, until exclusive
    window = store.readings("alice", device="watch", since=T0 + 2, until=T0 + 5)
    assert [r["ts"] for r in window] == [T0 + 2, T0 + 3, T0 + 4]
    # the newest `limit` rows, in ascending order
    newest = store.readings("alice", limit=3)
    assert [(r["device"], r["seq"]) for r in newest] == [("ring", 8), ("watch", 9), ("ring", 9)]
    assert [r["person"] for r in store.readings("bob")] == ["bob"]
    assert store.readings("carol") == []


def test_event_round_trip_and_filters(make_store: Any) -> None:
    store = make_store()
    store.start()
    e1 = Event(EventType.SOFT_SOS, "alice", T0, {"vitals": {"spo2": 88}, "level": "medium"})
    e2 = Event(EventType.BATTERY_LOW, "alice", T0 + 10, {"device": "watch", "battery": 9})
    e3 = Event(EventType.SOFT_SOS, "bob", T0 + 20, {"level": "high"})
    for e in (e1, e2, e3):
        store.add_event(e)
    assert store.flush()

    all_events = store.events()
    assert all_events == [e3.to_payload(), e2.to_payload(), e1.to_payload()]  # newest first
    assert all_events[2] == {
        "type": "soft_sos",
        "ts": "2026-09-21T14:13:20.000Z",
        "person": "alice",
        "id": e1.id,
        "vitals": {"spo2": 88},
        "level": "medium",
    }
    assert [e["id"] for e in store.events(person="alice")] == [e2.id, e1.id]
    assert [e["id"] for e in store.events(types=[EventType.SOFT_SOS])] == [e3.id, e1.id]
    assert [e["id"] for e in store.events(since=T0 + 10, until=T0 + 20)] == [e2.id]
    assert [e["id"] for e in store.events(limit=1)] == [e3.id]
    assert store.events(types=[]) == []


def test_audit_round_trip_and_filters(make_store: Any) -> None:
    store = make_store()
    store.start()
    store.add_audit(
        {
            "ts": T0,
            "actor": "planner",
            "tool": "get_location",
            "run_id": "run-1",
            "args": {},
            "ok": True,
            "result": {"latitude": "<redacted>", "longitude": "<redacted>"},
            "error": None,
            "latency_ms": 3.5,
        }
    )
    store.add_audit(
        {
            "ts": T0 + 1,
            "actor": "planner",
            "tool": "send_message",
            "run_id": "run-1",
            "args": {"text": "<redacted>", "to_emergency_contacts": True},
            "ok": False,
            "result": None,
            "error": "upstream: timeout",
            "latency_ms": 1500,
        }
    )
    store.add_audit(
        {
            "ts": T0 + 2,
            "actor": "api",
            "tool": "notify_user",
            "run_id": None,
            "args": {"user_id": "alice"},
            "ok": True,
            "result": True,
            "error": None,
            "latency_ms": 1,
        }
    )
    assert store.flush()

    rows = store.audit()
    assert [r["tool"] for r in rows] == ["notify_user", "send_message", "get_location"]
    sent = rows[1]
    assert len(sent.pop("id")) == 32
    assert sent == {
        "ts": T0 + 1,
        "actor": "planner",
        "tool": "send_message",
        "run_id": "run-1",
        "args": {"text": "<redacted>", "to_emergency_contacts": True},
        "ok": False,
        "result": None,
        "error": "upstream: timeout",
        "latency_ms": 1500.0,
    }
    assert rows[2]["ok"] is True
    assert rows[2]["result"] == {"latitude": "<redacted>", "longitude": "<redacted>"}
    assert [r["tool"] for r in store.audit(run_id="run-1")] == ["send_message", "get_location"]
    assert [r["ts"] for r in store.audit(tool="get_location")] == [T0]
    assert [r["ts"] for r in store.audit(since=T0 + 1)] == [T0 + 2, T0 + 1]
    assert len(store.audit(limit=2)) == 2


def test_trajectory_upsert_and_summaries(make_store: Any) -> None:
    store = make_store()  # synchronous: works without the writer thread
    states: list[dict[str, Any]] = [
        {
            "from": "system",
            "value": {"user_details": {"user_id": "alice", "name": "A", "timestamp": "t"}},
        },
        {"from": "user", "value": "SOS"},
    ]
    store.save_trajectory(
        "run-1",
        person="alice",
        category="hard_sos",
        trajectory={"interaction_trajectory": states},
        status="running",
        started_at=T0,
        updated_at=T0,
    )
    states = [
        *states,
        {"from": "planner", "value": {"reason": "notify", "action": "notify_user"}},
        {
            "from": "caller",
            "value": {"tool": "notify_user", "parameters": {"user_id": "alice", "message": "m"}},
        },
        {"from": "observation", "value": {"result": True}},
    ]
    store.save_trajectory(
        "run-1",
        person="alice",
        category="hard_sos",
        trajectory={"interaction_trajectory": states},
        status="done",
        started_at=T0,
        updated_at=T0 + 30,
    )
    store.save_trajectory(
        "run-2",
        person="bob",
        category="end_sos",
        trajectory={"interaction_trajectory": []},
        status="running",
        started_at=T0 + 60,
        updated_at=T0 + 60,
    )

    assert store.trajectories() == [
        {
            "run_id": "run-2",
            "person": "bob",
            "category": "end_sos",
            "status": "running",
            "started_at": T0 + 60,
            "updated_at": T0 + 60,
            "steps": 0,
        },
        {
            "run_id": "run-1",
            "person": "alice",
            "category": "hard_sos",
            "status": "done",
            "started_at": T0,
            "updated_at": T0 + 30,
            "steps": 5,
        },
    ]
    assert [t["run_id"] for t in store.trajectories(person="alice")] == ["run-1"]
    assert [t["run_id"] for t in store.trajectories(category="end_sos")] == ["run-2"]
    assert [t["run_id"] for t in store.trajectories(limit=1)] == ["run-2"]
    full = store.trajectory("run-1")
    assert full is not None
    assert full["status"] == "done"
    assert full["trajectory"] == {"interaction_trajectory": states}
    assert store.trajectory("nope") is None


# --- batching, flush, ordering ------------------------------------------------------------


def test_rows_are_written_in_few_transactions(make_store: Any, db: Database) -> None:
    store = make_store(batch_size=100, queue_size=2000)
    for i in range(1000):  # queued before the writer runs, so every batch is full
        store.add_reading(rd(i))
    assert store.stats()["queued"] == 1000
    store.start()
    assert store.flush()
    stats = store.stats()
    assert stats["batches"] == 10
    assert stats["written"] == 1000
    assert stats["spilled"] == 0
    assert stats["errors"] == 0
    assert count(db, "readings") == 1000


def test_flush_waits_for_the_writer(make_store: Any) -> None:
    store = make_store(flush_interval_s=60)  # the writer would otherwise sit on a partial batch
    store.add_reading(rd(1))
    assert store.flush(timeout=0.1) is False  # nothing commits before start()
    store.start()
    assert store.flush()
    assert [r["seq"] for r in store.readings("alice")] == [1]
    store.add_reading(rd(2))
    assert store.flush()
    assert [r["seq"] for r in store.readings("alice")] == [1, 2]


def test_stop_writes_everything_queued(make_store: Any, db: Database, tmp_path: Path) -> None:
    store = make_store(flush_interval_s=60, batch_size=64)
    store.start()
    for i in range(300):
        store.add_reading(rd(i))
    store.add_event(Event(EventType.FALL_DETECTED, "alice", T0))
    store.stop()
    assert count(db, "readings") == 300
    assert count(db, "events") == 1
    assert spill_files(tmp_path / "spill") == []


def test_ordering_is_kept_per_table(make_store: Any, db: Database) -> None:
    store = make_store(batch_size=7)
    store.start()
    expected_readings, expected_events, expected_audit = [], [], []
    for i in range(50):
        store.add_reading(rd(i, ts=T0 - i))  # ts decreasing: insertion order != ts order
        expected_readings.append(i)
        if i % 3 == 0:
            e = Event(EventType.ALERT_UPDATED, "alice", T0 - i)
            store.add_event(e)
            expected_events.append(e.id)
        if i % 5 == 0:
            store.add_audit({"ts": T0, "tool": f"t{i}", "ok": True})
            expected_audit.append(f"t{i}")
    assert store.flush()
    c = db.conn()
    assert [r[0] for r in c.execute("SELECT seq FROM readings ORDER BY id")] == expected_readings
    assert [r[0] for r in c.execute("SELECT id FROM events ORDER BY rowid")] == expected_events
    assert [r[0] for r in c.execute("SELECT tool FROM audit ORDER BY rowid")] == expected_audit


# --- never silently drop ------------------------------------------------------------------


def test_spill_when_db_locked_nothing_blocks_nothing_lost(
    make_store: Any, db: Database, tmp_path: Path
) -> None:
    spill = tmp_path / "spill"
    store = make_store(batch_size=10, queue_size=50, flush_interval_s=0.05)
    store.start()
    locker = sqlite3.connect(db.path, isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")  # holds the write lock: the writer stalls in BEGIN
    try:
        events = []
        for i in range(500):  # add_* must return although nothing can be written
            store.add_reading(rd(i))
            if i % 25 == 0:
                e = Event(EventType.DEVICE_STALE, "alice", T0 + i)
                store.add_event(e)
                events.append(e.id)
        assert store.flush(timeout=0.2) is False  # nothing can commit while locked
        stats = store.stats()
        # Everything beyond the queue and the writer's in-flight batch went to disk.
        assert stats["spilled"] >= 520 - 50 - 10
        assert spilled_lines(spill) == stats["spilled"]
        assert stats["written"] == 0
        assert store.readings("alice") == []  # readers are not blocked (WAL)
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert store.flush(timeout=60)
    stats = store.stats()
    assert count(db, "readings") == 500
    assert count(db, "events") == 20
    assert stats["written"] == 520
    assert stats["replayed"] == stats["spilled"]
    assert stats["queued"] == 0
    assert spill_files(spill) == []
    # queued rows first, then the spilled ones: add order is kept
    assert [r[0] for r in db.conn().execute("SELECT seq FROM readings ORDER BY id")] == list(
        range(500)
    )
    assert [r[0] for r in db.conn().execute("SELECT id FROM events ORDER BY rowid")] == events


def test_spill_exact_counts_before_start(make_store: Any, db: Database, tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    store = make_store(queue_size=50, batch_size=20)
    for i in range(500):
        store.add_reading(rd(i))
    assert store.stats()["queued"] == 50
    assert store.stats()["spilled"] == 450
    assert spilled_lines(spill) == 450
    store.start()
    assert store.flush()
    assert store.stats()["replayed"] == 450
    assert store.stats()["written"] == 500
    assert [r[0] for r in db.conn().execute("SELECT seq FROM readings ORDER BY id")] == list(
        range(500)
    )
    assert spill_files(spill) == []
    # after draining, rows go through the queue again
    store.add_reading(rd(500))
    assert store.flush()
    assert store.stats()["spilled"] == 450
    assert count(db, "readings") == 501


def test_concurrent_producers_with_tiny_queue(make_store: Any, db: Database) -> None:
    store = make_store(queue_size=20, batch_size=16, flush_interval_s=0.01)
    store.start()

    def produce(device: str) -> None:
        for i in range(1500):
            store.add_reading(rd(i, device=device))

    threads = [threading.Thread(target=produce, args=(f"d{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.flush(timeout=60)
    assert count(db, "readings") == 6000
    assert store.stats()["written"] == 6000
    for n in range(4):  # each producer's own order survives the queue/spill switches
        seqs = [
            r[0]
            for r in db.conn().execute(
                "SELECT seq FROM readings WHERE device = ? ORDER BY id", (f"d{n}",)
            )
        ]
        assert seqs == list(range(1500))


class FlakyDatabase(Database):
    """Fails the first `failures` write transactions like a flaky SD card."""

    def __init__(self, path: Path, failures: int) -> None:
        super().__init__(path)
        self.failures = failures

    @contextmanager
    def tx(self, *, durable: bool = False) -> Iterator[sqlite3.Connection]:
        if self.failures > 0:
            self.failures -= 1
            raise sqlite3.OperationalError("disk I/O error")
        with super().tx(durable=durable) as c:
            yield c


def test_failed_batches_are_retried_not_lost(
    make_store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Store, "RETRY_BASE_S", 0.001)
    flaky = FlakyDatabase(tmp_path / "flaky.db", failures=0)
    store = make_store(db=flaky, batch_size=50)
    for i in range(120):
        store.add_reading(rd(i))
    flaky.failures = 3
    store.start()
    assert store.flush()
    stats = store.stats()
    assert stats["errors"] == 3
    assert stats["written"] == 120
    assert stats["batches"] == 3
    assert [r["seq"] for r in store.readings("alice", limit=500)] == list(range(120))
    flaky.close()


def test_stop_with_a_dead_db_keeps_rows_on_disk(
    make_store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Store, "RETRY_BASE_S", 0.001)
    monkeypatch.setattr(Store, "STOP_GRACE_S", 0.0)
    spill = tmp_path / "spill"
    dead = FlakyDatabase(tmp_path / "dead.db", failures=10**9)
    a = make_store(db=dead, queue_size=30, batch_size=10)
    for i in range(100):  # 30 queued, 70 spilled
        a.add_reading(rd(i))
    a.start()
    a.stop()  # cannot write: in-memory rows go to a rescue file before the spilled ones
    assert a.stats()["written"] == 0
    assert spilled_lines(spill) == 100
    dead.failures = 0
    b = make_store(db=dead)
    b.start()
    assert b.flush()
    assert [r[0] for r in dead.conn().execute("SELECT seq FROM readings ORDER BY id")] == list(
        range(100)
    )
    assert spill_files(spill) == []
    dead.close()


def test_row_the_db_refuses_is_dead_lettered(make_store: Any, db: Database, tmp_path: Path) -> None:
    store = make_store()
    for i in range(5):
        store.add_reading(rd(i))
    store.add_reading(rd(99, heart_rate=[1, 2]))  # sqlite cannot bind a list
    store.start()
    assert store.flush()
    store.add_reading(rd(98, sleep=5))  # not a mapping: cannot even be turned into a row
    assert store.flush()
    assert [r["seq"] for r in store.readings("alice")] == [0, 1, 2, 3, 4]
    stats = store.stats()
    assert stats["rejected"] == 2
    assert stats["written"] == 5
    lines = [json.loads(p.read_text()) for p in sorted((tmp_path / "spill").glob("rejected-*"))]
    assert len(lines) == 2
    kind, row, reason = lines[0]
    assert (kind, row["seq"], row["heart_rate"], reason) == ("r", 99, [1, 2], "ProgrammingError")
    kind, raw, reason = lines[1]
    assert (kind, reason) == ("raw", "unconvertible row")
    assert "seq=98" in raw[0]


def test_leftover_spill_file_is_replayed_on_start(
    make_store: Any, db: Database, tmp_path: Path
) -> None:
    crashed_dir = tmp_path / "crashed"
    a = make_store(queue_size=2, spill_dir=tmp_path / "a")
    for i in range(10):
        a.add_reading(rd(i))
    assert a.stats()["spilled"] == 8
    # What a crash leaves behind: the flushed spill file (the 2 queued rows die with the
    # process), ending in a torn line.
    shutil.copytree(tmp_path / "a", crashed_dir)
    (leftover,) = spill_files(crashed_dir)
    with leftover.open("a") as fh:
        fh.write('["r", {"person": "al')

    fresh = Database(tmp_path / "fresh.db")
    b = make_store(db=fresh, spill_dir=crashed_dir)
    b.start()
    assert b.flush()
    assert [r["seq"] for r in b.readings("alice")] == list(range(2, 10))
    assert b.stats()["replayed"] == 8
    assert b.stats()["rejected"] == 1  # the torn line is kept aside, not guessed at
    assert spill_files(crashed_dir) == []
    assert b.latest()[("alice", "watch")]["seq"] == 9  # replayed rows reach the cache
    # replaying the same file again (crash after commit, before delete) adds nothing
    shutil.copy(tmp_path / "a" / leftover.name, crashed_dir / leftover.name)
    c = make_store(db=fresh, spill_dir=crashed_dir)
    c.start()
    assert c.flush()
    assert c.stats()["duplicates"] == 8
    assert count(fresh, "readings") == 8
    fresh.close()


def test_stop_before_start_keeps_rows_for_next_start(
    make_store: Any, db: Database, tmp_path: Path
) -> None:
    a = make_store(queue_size=2)
    for i in range(10):
        a.add_reading(rd(i))
    a.stop()  # 2 queued rows go to a rescue file that sorts before the 8 spilled ones
    a.add_reading(rd(10))  # after stop: still kept on disk
    assert count(db, "readings") == 0
    b = make_store()
    b.start()
    assert b.flush()
    assert [r[0] for r in db.conn().execute("SELECT seq FROM readings ORDER BY id")] == list(
        range(11)
    )
    assert spill_files(tmp_path / "spill") == []


# --- idempotency, clean history, retention, latest ---------------------------------------


def test_readings_are_idempotent(make_store: Any, db: Database) -> None:
    store = make_store()
    store.start()
    store.add_reading(rd(1))
    store.add_reading(rd(1))
    store.add_reading(rd(None, ts=T0 + 5))
    store.add_reading(rd(None, ts=T0 + 5))
    store.add_reading(rd(None, ts=T0 + 6))
    e = Event(EventType.SOS_END, "alice", T0)
    store.add_event(e)
    store.add_event(e)
    assert store.flush()
    assert count(db, "readings") == 3
    assert count(db, "events") == 1
    stats = store.stats()
    assert stats["written"] == 4
    assert stats["duplicates"] == 3


def test_clean_history_excludes_flagged(make_store: Any) -> None:
    store = make_store()
    store.start()
    for i in range(8):
        store.add_reading(rd(i), flags=["implausible"] if i in (2, 5) else [])
    store.add_reading(rd(0, person="bob"))
    assert store.flush()
    assert [r["seq"] for r in store.clean_history("alice")] == [0, 1, 3, 4, 6, 7]
    assert [r["seq"] for r in store.clean_history("alice", limit=3)] == [4, 6, 7]
    assert all(r["flags"] == [] for r in store.clean_history("alice"))
    assert [r["seq"] for r in store.readings("alice") if r["flags"]] == [2, 5]


def test_prune_by_retention(make_store: Any, db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Store, "PRUNE_CHUNK", 2)  # several chunks per table
    store = make_store(retention_days=30)
    store.start()
    now = T0 + 100 * DAY
    old, new = now - 31 * DAY, now - 29 * DAY
    for i in range(5):
        store.add_reading(rd(i, ts=old + i))
        store.add_reading(rd(i, ts=new + i))
        store.add_reading(rd(i, ts=old + i, person="bob"))
    store.add_event(Event(EventType.DEVICE_OFFLINE, "alice", old))
    store.add_event(Event(EventType.DEVICE_ONLINE, "alice", new))
    store.add_audit({"ts": old, "tool": "old", "ok": True})
    store.add_audit({"ts": new, "tool": "new", "ok": True})
    store.save_trajectory(
        "r",
        person="alice",
        category="hard_sos",
        trajectory={},
        status="done",
        started_at=old,
        updated_at=old,
    )
    assert store.flush()

    assert store.prune(now) == 5 + 5 + 1 + 1
    assert [r["ts"] for r in store.readings("alice")] == [new + i for i in range(5)]
    assert store.readings("bob") == []
    assert [e["type"] for e in store.events()] == ["device_online"]
    assert [a["tool"] for a in store.audit()] == ["new"]
    assert store.trajectory("r") is not None  # SOS runs are not pruned
    assert store.prune(now) == 0


def test_latest_cache_and_seed_from_db(make_store: Any, db: Database) -> None:
    store = make_store()
    store.start()
    store.add_reading(rd(1, ts=T0 + 100, received_at=T0 + 101), news2_total=1, news2_level="low")
    store.add_reading(rd(3, ts=T0 + 300, received_at=T0 + 301), flags=["hr_high"])
    store.add_reading(rd(2, ts=T0 + 200, received_at=T0 + 400))  # late delivery of an old one
    store.add_reading(rd(1, device="ring", ts=T0 + 50, received_at=T0 + 51, spo2=96.0))
    store.add_reading(rd(1, person="bob", ts=T0 + 10, received_at=T0 + 11))

    latest = store.latest()
    assert set(latest) == {("alice", "watch"), ("alice", "ring"), ("bob", "watch")}
    watch = latest[("alice", "watch")]
    assert (watch["seq"], watch["ts"], watch["flags"]) == (3, T0 + 300, ["hr_high"])
    assert watch["last_seen"] == T0 + 400  # heard from later, via the old reading
    assert latest[("alice", "ring")]["spo2"] == 96.0
    store.stop()

    again = make_store()
    assert again.latest() == {}  # seeded at start
    again.start()
    seeded = again.latest()
    assert set(seeded) == set(latest)
    watch = seeded[("alice", "watch")]
    assert (watch["seq"], watch["ts"], watch["flags"], watch["heart_rate"]) == (
        3,
        T0 + 300,
        ["hr_high"],
        63.0,
    )
    assert watch["last_seen"] == T0 + 301  # the latest row's received_at
    assert seeded[("bob", "watch")]["ts"] == T0 + 10
    again.add_reading(rd(4, ts=T0 + 500, received_at=T0 + 501))
    assert again.latest()[("alice", "watch")]["seq"] == 4
    seeded[("alice", "ring")]["flags"].append("mutated")  # callers get copies
    assert again.latest()[("alice", "ring")]["flags"] == []


def test_big_batches_with_duplicates_inside_one_statement(make_store: Any, db: Database) -> None:
    # Rows go in as multi-row INSERTs (500 per statement): a batch spanning several
    # statements, with copies inside one statement and across two, keeps every row once,
    # in order, with every column where it belongs.
    store = make_store(batch_size=1300, queue_size=5000)
    for i in range(1200):
        store.add_reading(rd(i, spo2=90.0 + i % 10))
        if i % 100 == 7:
            store.add_reading(rd(i, spo2=90.0 + i % 10))  # the same key, same statement
    for i in (3, 499, 500, 1199):
        store.add_reading(rd(i))  # a copy in a later statement
    e = Event(EventType.SOS_END, "alice", T0)
    store.add_event(e)
    store.add_event(e)
    store.start()
    assert store.flush()
    stats = store.stats()
    assert stats["written"] == 1201
    assert stats["duplicates"] == 12 + 4 + 1
    rows = db.conn().execute("SELECT seq, heart_rate, spo2 FROM readings ORDER BY id").fetchall()
    assert [r["seq"] for r in rows] == list(range(1200))
    assert all(r["heart_rate"] == 60.0 + r["seq"] % 40 for r in rows)
    assert all(r["spo2"] == 90.0 + r["seq"] % 10 for r in rows)
    assert count(db, "events") == 1
