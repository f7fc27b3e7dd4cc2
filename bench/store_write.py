"""Store write path: cost of add_reading on the event loop and sustained rows/s written.

    python bench/store_write.py [--rows 100000] [--repeat 3] [--rate 5000] [--dir /target/disk]

Prints one JSON object. Baselines are measured in the same run on the same disk, paired
runs interleaved and best-of-N:
- add_reading (writer idle) vs a bare queue.Queue.put_nowait of the same item: the floor
  for any queue hand-off;
- writer_rows_per_s (the writer thread draining a full queue: conversion, batching,
  upsert, commit) vs a raw executemany of the same parameter rows into the same schema and
  batch size, one thread, no queue.
Also: a producer adding flat out while the writer runs (GIL contention), a paced producer
like the event loop (does the writer keep up without spilling?), the spill path, and the
writer draining while another thread runs pure Python flat out with the gateway's 1 ms GIL
switch interval (the event loop during an ingest drain), against a raw executemany under
the same busy thread: executemany takes the GIL back once per row, so it crawls there.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import queue
import random
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.base.db import Database
from gateway.contract.values import Reading
from gateway.store import Store
from gateway.store.schema import _SQL_READING, SCHEMA, _reading_params

T0 = 1_790_000_000.0


def make_readings(n: int, devices: int) -> list[Reading]:
    rnd = random.Random(7)
    out = []
    for i in range(n):
        d = i % devices
        out.append(
            Reading(
                person=f"p{d // 2}",
                device=f"d{d}",
                ts=T0 + i / devices,
                seq=i // devices,
                heart_rate=rnd.uniform(50, 110),
                spo2=rnd.uniform(90, 100),
                systolic_bp=rnd.uniform(100, 140),
                diastolic_bp=rnd.uniform(60, 90),
                temperature_c=rnd.uniform(36, 38),
                respiratory_rate=rnd.uniform(10, 20),
                steps=rnd.randrange(0, 50),
                battery=80.0,
                received_at=T0 + i / devices + 0.05,
            )
        )
    return out


def per_call_us(elapsed: float, n: int) -> float:
    return round(elapsed / n * 1e6, 3)


def bench_put_baseline(readings: list[Reading]) -> float:
    q: queue.Queue[tuple[Any, ...]] = queue.Queue(maxsize=len(readings))
    t = time.perf_counter()
    for r in readings:
        q.put_nowait(("r", r, 1, "low", 0.1, (), time.time()))
    return per_call_us(time.perf_counter() - t, len(readings))


def bench_add_then_drain(root: Path, readings: list[Reading], batch_size: int) -> tuple[float, int]:
    """add_reading with the writer not started (the pure hand-off cost), then the writer
    alone draining the full queue (rows/s)."""
    db = Database(root / "drain.db")
    store = Store(db, spill_dir=root / "spill", batch_size=batch_size, queue_size=len(readings))
    t = time.perf_counter()
    for r in readings:
        store.add_reading(r, news2_total=1, news2_level="low", anomaly=0.1)
    add_us = per_call_us(time.perf_counter() - t, len(readings))
    t = time.perf_counter()
    store.start()
    assert store.flush(timeout=600), "flush timed out"
    rows_per_s = round(len(readings) / (time.perf_counter() - t))
    store.stop()
    assert count(db) == len(readings)
    db.close()
    (root / "drain.db").unlink()
    return add_us, rows_per_s


def bench_raw_executemany(root: Path, readings: list[Reading], batch_size: int) -> int:
    """The same parameter rows, same schema and batch size, one thread, no queue."""
    db = Database(root / "raw.db")
    db.ensure_schema(SCHEMA)
    params = [_reading_params(("r", r, 1, "low", 0.1, (), 0.0)) for r in readings]
    t = time.perf_counter()
    for i in range(0, len(params), batch_size):
        with db.tx() as c:
            c.executemany(_SQL_READING, params[i : i + batch_size])
    rows_per_s = round(len(readings) / (time.perf_counter() - t))
    assert count(db) == len(readings)
    db.close()
    (root / "raw.db").unlink()
    return rows_per_s


def bench_concurrent(root: Path, readings: list[Reading], batch_size: int) -> dict[str, Any]:
    """A producer adding flat out while the writer runs (both fight for the GIL)."""
    db = Database(root / "conc.db")
    store = Store(db, spill_dir=root / "spill", batch_size=batch_size, queue_size=len(readings))
    store.start()
    t0 = time.perf_counter()
    for r in readings:
        store.add_reading(r, news2_total=1, news2_level="low", anomaly=0.1)
    t_added = time.perf_counter()
    assert store.flush(timeout=600), "flush timed out"
    t_done = time.perf_counter()
    stats = store.stats()
    store.stop()
    assert count(db) == len(readings)
    db.close()
    return {
        "add_reading_us_flat_out_with_writer": per_call_us(t_added - t0, len(readings)),
        "flat_out_end_to_end_rows_per_s": round(len(readings) / (t_done - t0)),
        "flat_out_batches": stats["batches"],
    }


def bench_paced(root: Path, readings: list[Reading], rate: int, batch_size: int) -> dict[str, Any]:
    """Like the event loop: `rate` rows/s in 10 ms bursts, idle in between. Does the writer
    keep up without spilling, and what does a call cost?"""
    db = Database(root / "paced.db")
    store = Store(db, spill_dir=root / "spill-paced", batch_size=batch_size)
    store.start()
    per_tick = max(1, rate // 100)
    spent = 0.0
    max_queued = 0
    t0 = time.perf_counter()
    for i in range(0, len(readings), per_tick):
        t = time.perf_counter()
        for r in readings[i : i + per_tick]:
            store.add_reading(r)
        spent += time.perf_counter() - t
        max_queued = max(max_queued, store.stats()["queued"])
        next_tick = t0 + (i // per_tick + 1) * 0.01
        time.sleep(max(0.0, next_tick - time.perf_counter()))
    t_added = time.perf_counter()
    assert store.flush(timeout=600)
    lag = time.perf_counter() - t_added
    stats = store.stats()
    store.stop()
    assert count(db) == len(readings)
    db.close()
    return {
        "paced_rate_rows_per_s": rate,
        "paced_achieved_rows_per_s": round(len(readings) / (t_added - t0)),
        "paced_add_reading_us": per_call_us(spent, len(readings)),
        "paced_max_queued": max_queued,
        "paced_spilled": stats["spilled"],
        "paced_flush_lag_s": round(lag, 3),
    }


def bench_spill(root: Path, readings: list[Reading], batch_size: int) -> dict[str, Any]:
    """Queue full: every row goes to the spill file; then the writer replays it."""
    db = Database(root / "spill.db")
    store = Store(db, spill_dir=root / "spill-bench", batch_size=batch_size, queue_size=1)
    t = time.perf_counter()
    for r in readings:
        store.add_reading(r)
    add_us = per_call_us(time.perf_counter() - t, len(readings))
    t = time.perf_counter()
    store.start()
    assert store.flush(timeout=600)
    replay_s = time.perf_counter() - t
    spilled = store.stats()["spilled"]
    store.stop()
    assert count(db) == len(readings)
    db.close()
    return {
        "add_reading_us_when_spilling": add_us,
        "spilled": spilled,
        "replay_rows_per_s": round(len(readings) / replay_s),
    }


def _spin(stop: threading.Event) -> None:
    """Pure Python flat out, like an event loop with a backlog: holds the GIL but for
    the interpreter's switch interval."""
    d: dict[int, int] = {}
    while not stop.is_set():
        for i in range(1000):
            d[i] = d.get(i, 0) + 1


def bench_busy_loop(root: Path, readings: list[Reading], batch_size: int) -> dict[str, Any]:
    """Writer rows/s with the GIL contended, against raw executemany under the same load."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.001)  # as `healthgw run` sets it
    stop = threading.Event()
    spinner = threading.Thread(target=_spin, args=(stop,), daemon=True)
    spinner.start()
    try:
        db = Database(root / "busy.db")
        store = Store(db, spill_dir=root / "spill-busy", batch_size=batch_size,
                      queue_size=len(readings))  # fmt: skip
        for r in readings:
            store.add_reading(r, news2_total=1, news2_level="low", anomaly=0.1)
        t = time.perf_counter()
        store.start()
        assert store.flush(timeout=600)
        writer = round(len(readings) / (time.perf_counter() - t))
        store.stop()
        assert count(db) == len(readings)
        db.close()
        raw = bench_raw_executemany(root, readings, batch_size)
    finally:
        stop.set()
        spinner.join()
        sys.setswitchinterval(old)
    return {
        "busy_loop_writer_rows_per_s": writer,
        "busy_loop_raw_executemany_rows_per_s": raw,
        "busy_loop_writer_vs_raw_ratio": round(writer / raw, 2),
    }


def count(db: Database) -> int:
    return int(db.conn().execute("SELECT COUNT(*) FROM readings").fetchone()[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--devices", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3, help="best of N for the paired runs")
    ap.add_argument("--rate", type=int, default=5000, help="paced producer rows/s")
    ap.add_argument("--dir", type=Path, default=None, help="where the databases go")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)  # the spill run warns by design

    readings = make_readings(args.rows, args.devices)
    small = readings[: max(1, args.rows // 10)]
    puts, adds, drains, raws = [], [], [], []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        # Pairs interleaved and best-of-N, so a busy machine hits store and baseline alike.
        for _ in range(args.repeat):
            puts.append(bench_put_baseline(readings))
            add_us, drain = bench_add_then_drain(root, readings, args.batch_size)
            adds.append(add_us)
            drains.append(drain)
            raws.append(bench_raw_executemany(root, readings, args.batch_size))
        conc = bench_concurrent(root, readings, args.batch_size)
        paced = bench_paced(root, readings[: args.rate * 3], args.rate, args.batch_size)
        spill = bench_spill(root, small, args.batch_size)
        busy = bench_busy_loop(root, small, args.batch_size)

    put_us, add_us, drain, raw = min(puts), min(adds), max(drains), max(raws)
    print(
        json.dumps(
            {
                "rows": args.rows,
                "devices": args.devices,
                "batch_size": args.batch_size,
                "repeat": args.repeat,
                "cpus": os.cpu_count(),
                "loadavg_1m": round(os.getloadavg()[0], 2),
                "python": platform.python_version(),
                "sqlite": sqlite3.sqlite_version,
                "add_reading_us": add_us,
                "baseline_queue_put_us": put_us,
                "add_reading_vs_put_ratio": round(add_us / put_us, 2),
                "writer_rows_per_s": drain,
                "baseline_raw_executemany_rows_per_s": raw,
                "writer_vs_raw_ratio": round(drain / raw, 3),
                **conc,
                **paced,
                **spill,
                **busy,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
