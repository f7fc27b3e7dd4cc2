"""Dead letters: off the event loop, capped per record, per source per day, per file, in
total and in count, and pruned by age."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from gateway.edge.deadletter import DeadLetter, DeadLetterBox, DeadLetterLimits, source_of


def _letter(
    topic: str = "health/dad/watch-jon/vitals", size: int = 100, ts: float = 0
) -> DeadLetter:
    return DeadLetter(ts or time.time(), topic, "schema", "heart_rate: not a number", b"x" * size)


def _lines(box: DeadLetterBox) -> list[dict[str, object]]:
    return [json.loads(ln) for p in box.files() for ln in p.read_text().splitlines()]


def test_the_quota_is_per_person_not_per_device() -> None:
    assert source_of("health/dad/watch-jon/vitals") == "health/dad"
    assert source_of("health/dad/invented-9/vitals") == "health/dad"
    assert source_of("weird") == "weird"


def test_invented_device_ids_share_one_quota(tmp_path: Path) -> None:
    box = DeadLetterBox(
        tmp_path, DeadLetterLimits(max_record_bytes=1000, source_daily_bytes=10_000)
    )
    box.start()
    for i in range(50):  # a simulator account making up a new device for each message
        while not box.put(_letter(f"health/dad/fake-{i}/vitals", size=1000)):
            time.sleep(0.001)
    box.flush()
    box.stop()
    assert sum(p.stat().st_size for p in box.files()) <= 10_000
    assert box.stats["quota"] > 30


def test_put_cuts_the_payload_before_it_is_queued(tmp_path: Path) -> None:
    box = DeadLetterBox(tmp_path, DeadLetterLimits(max_record_bytes=64))  # not started
    box.put(_letter(size=1 << 20))
    queued = box._q.get_nowait()
    assert queued is not None and len(queued.payload) == 64 and queued.size == 1 << 20


def test_the_total_cap_holds_without_waiting_for_the_periodic_prune(tmp_path: Path) -> None:
    lim = DeadLetterLimits(
        max_record_bytes=1000, source_daily_bytes=10**9, max_file_bytes=3_000, max_total_bytes=9_000
    )
    box = DeadLetterBox(tmp_path, lim)
    box.start()
    for i in range(60):
        while not box.put(_letter(f"health/p{i}/d/vitals", size=1000)):
            time.sleep(0.001)
    box.flush()
    assert sum(p.stat().st_size for p in box.files()) <= 9_000 + 3_000  # at most one file over
    box.stop()


def test_writes_happen_on_the_box_thread_not_the_caller(tmp_path: Path) -> None:
    box = DeadLetterBox(tmp_path / "dl")
    writers: list[str] = []
    real_open = os.open

    def spy(path: str, *a: object, **kw: object) -> int:
        writers.append(threading.current_thread().name)
        return real_open(path, *a, **kw)  # type: ignore[arg-type]

    os.open = spy  # type: ignore[assignment]
    try:
        box.start()
        assert box.put(_letter())
        assert box.flush()
    finally:
        os.open = real_open
        box.stop()
    assert writers == ["deadletter"]
    assert (tmp_path / "dl").stat().st_mode & 0o777 == 0o700
    (f,) = box.files()
    assert f.stat().st_mode & 0o777 == 0o600


def test_a_record_keeps_at_most_max_record_bytes(tmp_path: Path) -> None:
    box = DeadLetterBox(tmp_path, DeadLetterLimits(max_record_bytes=64))
    box.start()
    box.put(_letter(size=10_000))
    box.flush()
    box.stop()
    (rec,) = _lines(box)
    assert rec["bytes"] == 10_000 and rec["truncated"] is True
    assert len(bytes.fromhex(str(rec["payload_hex"]))) == 64
    assert box.stats["truncated"] == 1


def test_one_account_cannot_fill_the_disk(tmp_path: Path) -> None:
    lim = DeadLetterLimits(max_record_bytes=1000, source_daily_bytes=20_000)
    box = DeadLetterBox(tmp_path, lim)
    box.start()
    for _ in range(200):  # ~2.3 kB each: an attacker's flood from one device account
        while not box.put(_letter("health/dad/watch-jon/vitals", size=1000)):
            time.sleep(0.001)
    box.put(_letter("health/grandma/watch-maria/vitals", size=100))
    box.flush()
    box.stop()
    recs = _lines(box)
    flood = [r for r in recs if str(r["topic"]).startswith("health/dad/")]
    written = sum(p.stat().st_size for p in box.files())
    assert written <= 20_000 + 1000  # the flood's share, plus grandma's single record
    assert box.stats["quota"] == 200 - len(flood) > 0
    # Another account still gets its dead letters kept.
    assert any(str(r["topic"]).startswith("health/grandma/") for r in recs)


def test_the_quota_survives_a_restart(tmp_path: Path) -> None:
    lim = DeadLetterLimits(max_record_bytes=1000, source_daily_bytes=10_000)
    for _ in range(2):
        box = DeadLetterBox(tmp_path, lim)
        box.start()
        for _ in range(20):
            box.put(_letter(size=1000))
        box.flush()
        box.stop()
    assert sum(p.stat().st_size for p in box.files()) <= 10_000


def test_files_roll_over_and_the_directory_is_pruned_to_its_caps(tmp_path: Path) -> None:
    lim = DeadLetterLimits(
        max_record_bytes=1000,
        source_daily_bytes=10**9,
        max_file_bytes=5_000,
        max_total_bytes=12_000,
        max_files=100,
    )
    box = DeadLetterBox(tmp_path, lim)
    box.start()
    for i in range(30):
        while not box.put(_letter(f"health/p{i}/d/vitals", size=1000)):
            time.sleep(0.001)
    box.flush()
    box.stop()
    assert len(box.files()) >= 2  # rolled over (parts), the oldest pruned
    assert all(p.stat().st_size <= 5_000 for p in box.files())
    assert box.stats["pruned_files"] > 0  # the oldest went as the cap was reached
    box.prune(time.time())
    assert sum(p.stat().st_size for p in box.files()) <= 12_000
    # The newest records are the ones kept.
    assert "health/p29/d/vitals" in [r["topic"] for r in _lines(box)]


def test_prune_by_count_and_by_age(tmp_path: Path) -> None:
    box = DeadLetterBox(tmp_path, DeadLetterLimits(max_files=3, retention_days=30))
    ages = [50, 45, 40, 20, 15, 10, 5]  # days; the first three are past retention
    for day, age in enumerate(ages, start=1):
        p = tmp_path / f"2026-01-0{day}.jsonl"
        p.write_text("{}\n")
        old = time.time() - age * 86400
        os.utime(p, (old, old))
    box.prune(time.time())
    assert [p.name for p in box.files()] == [
        "2026-01-05.jsonl",
        "2026-01-06.jsonl",
        "2026-01-07.jsonl",
    ]


def test_a_full_queue_is_counted_and_put_never_blocks(tmp_path: Path) -> None:
    box = DeadLetterBox(tmp_path, DeadLetterLimits(queue_size=5))  # not started: nothing drains
    results = [box.put(_letter()) for _ in range(8)]
    assert results == [True] * 5 + [False] * 3
    assert box.stats["queue_full"] == 3
