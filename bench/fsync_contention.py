"""What one fsynced SQLite commit costs while the disk takes bulk writes (issue 26, item 2).

    .venv/bin/python bench/fsync_contention.py [--samples 150] [--load-s 4] [--dir /target]

Prints one JSON object. A probe commits one small row into its own WAL database (like an
SOS journal step or a text-queue row in safety.db) every `--gap-ms`, and times each commit.
Its baselines are measured in the same run on the same disk:

- `idle_full`: synchronous=FULL commits (an fsync each) with nothing else writing;
- `loaded_full`: the same commits while a load process writes like the hub under ingest
  overload: the readings store (batched WAL commits of readings-sized rows into
  healthgw.db's schema, with its checkpoints) and an append file fsynced periodically (the
  tsdb outbox, the spill files);
- `loaded_normal`: synchronous=NORMAL commits (no fsync: a WAL commit survives a killed
  process) under the same load, interleaved with `loaded_full` sample by sample, so both see
  the same disk;
- `loaded_normal_beside_full_writer`: a NORMAL commit while another thread of the same
  process commits FULL into the *same* file: SQLite holds the file's write lock during the
  WAL fsync, so the cheap commit waits for the other one's fsync;
- `loaded_normal_beside_sync_writer`: the same, but that thread commits NORMAL and then
  fsyncs the WAL file outside the lock (what `Database.tx(durable=True)` does now);
- `loaded_autocheckpoint`: NORMAL commits of an SOS run's size (~8 pages) into a file whose
  WAL fills up: every ~125th commit runs SQLite's automatic checkpoint inside it (two
  fsyncs and the copy, on the committing thread: the event loop for safety.db), against
  `loaded_background_checkpoint`, the same commits with `Database(background_checkpoint=
  True)` (a thread of its own checkpoints).

The load runs in its own process, so the GIL plays no part in the probe's numbers: only
the disk (and the CPU the load process takes). Ratios, not absolute times, are the result:
this machine's disk is shared and noisy.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing as mp
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.store_write import make_readings
from gateway.base.db import Database
from gateway.store.schema import _SQL_READING, SCHEMA, _reading_params

PROBE_SCHEMA = """
CREATE TABLE IF NOT EXISTS probe (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, body TEXT NOT NULL, at REAL NOT NULL
);
"""
BODY = "x" * 200  # a text-queue row's size


def load(root: str, batch: int, append_kb: int, fsync_ms: float, stop: Any, counts: Any) -> None:
    """The hub's bulk writers, flat out until `stop`: readings into a WAL database in
    batches (the store writer), and an append file fsynced every `fsync_ms` (the outbox)."""
    db = Database(Path(root) / "healthgw.db")
    db.ensure_schema(SCHEMA)
    readings = make_readings(20_000, 200)
    params = [_reading_params(("r", r, 1, "low", 0.1, (), 0.0)) for r in readings]
    line = b"vitals,person=p1 heart_rate=72,spo2=97 1790000000000000000\n"
    chunk = line * max(1, append_kb * 1024 // len(line))
    rows = fsyncs = 0
    next_sync = time.monotonic()
    seq_base = 0
    with open(Path(root) / "outbox.lp", "ab") as fh:
        while not stop.is_set():
            batch_rows = params[(rows // batch * batch) % len(params) :][:batch]
            # A new seq each pass keeps the upsert an insert (the table keeps growing).
            batch_rows = [(*p[:3], p[3] + seq_base, *p[4:]) for p in batch_rows]
            with db.tx() as c:
                c.executemany(_SQL_READING, batch_rows)
            rows += len(batch_rows)
            if rows % len(params) == 0:
                seq_base += len(params)
            fh.write(chunk)
            if time.monotonic() >= next_sync:
                fh.flush()
                os.fsync(fh.fileno())
                fsyncs += 1
                next_sync = time.monotonic() + fsync_ms / 1000
    counts[0], counts[1] = rows, fsyncs
    db.close()


_KEYS = itertools.count()


def probe_commit(db: Database, mode: str) -> float:
    """One single-row commit in `mode` ("full" or "normal"), in ms."""
    c = db.conn()
    c.execute(f"PRAGMA synchronous={mode.upper()}")
    key = f"p{next(_KEYS)}"
    t = time.perf_counter()
    c.execute("BEGIN IMMEDIATE")
    c.execute("INSERT INTO probe (key, body, at) VALUES (?, ?, ?)", (key, BODY, t))
    c.execute("COMMIT")
    ms = (time.perf_counter() - t) * 1000
    c.execute("PRAGMA synchronous=NORMAL")
    return ms


def stats(xs: list[float]) -> dict[str, float]:
    s = sorted(xs)
    p99 = s[min(len(s) - 1, round(0.99 * (len(s) - 1)))]
    return {
        "p50": round(statistics.median(s), 3),
        "p99": round(p99, 3),
        "max": round(s[-1], 3),
        "n": len(s),
    }


def sampled(db: Database, modes: list[str], samples: int, gap_s: float) -> dict[str, list[float]]:
    """`samples` commits per mode, the modes interleaved one by one."""
    out: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(samples):
        for m in modes:
            out[m].append(probe_commit(db, m))
            time.sleep(gap_s)
    return out


def beside_writer(root: Path, samples: int, gap_s: float, *, lock_free: bool) -> list[float]:
    """NORMAL commits on this thread while another thread commits durably into the same
    file: FULL (the fsync under SQLite's write lock) or NORMAL + a WAL fsync after it."""
    path = root / ("beside-sync.db" if lock_free else "beside-full.db")
    db = Database(path)
    db.ensure_schema(PROBE_SCHEMA)
    stop = threading.Event()

    def writer() -> None:
        c = db.conn()
        n = 0
        while not stop.is_set():
            n += 1
            if lock_free:
                with db.tx() as w:
                    w.execute("INSERT INTO probe (key, body, at) VALUES (?, ?, 0)", (f"w{n}", BODY))
                db.sync()  # the WAL fsynced after the commit, outside SQLite's write lock
            else:
                c.execute("PRAGMA synchronous=FULL")
                c.execute("BEGIN IMMEDIATE")
                c.execute("INSERT INTO probe (key, body, at) VALUES (?, ?, 0)", (f"w{n}", BODY))
                c.execute("COMMIT")
            time.sleep(0.002)
        db.close()

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    time.sleep(0.05)
    try:
        return sampled(db, ["normal"], samples, gap_s)["normal"]
    finally:
        stop.set()
        t.join()
        db.close()


def checkpointing(root: Path, commits: int, *, background: bool) -> list[float]:
    """NORMAL commits of ~30 KB (an SOS run's journal and text rows are ~50 pages) into a
    fresh file, so the WAL fills and is checkpointed every ~125 commits."""
    db = Database(root / f"ckpt-{background}.db", background_checkpoint=background)
    db.ensure_schema(PROBE_SCHEMA)
    blob = "y" * 30_000
    out = []
    for _ in range(commits):
        key = f"c{next(_KEYS)}"
        t = time.perf_counter()
        with db.tx() as c:
            c.execute("INSERT INTO probe (key, body, at) VALUES (?, ?, ?)", (key, blob, t))
        out.append((time.perf_counter() - t) * 1000)
        time.sleep(0.002)
    db.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--samples", type=int, default=150, help="commits per mode and phase")
    ap.add_argument("--gap-ms", type=float, default=10.0, help="pause between probe commits")
    ap.add_argument("--batch", type=int, default=500, help="readings per load commit")
    ap.add_argument("--append-kb", type=int, default=256, help="outbox bytes per load batch")
    ap.add_argument("--fsync-ms", type=float, default=50.0, help="outbox fsync interval")
    ap.add_argument("--warmup-s", type=float, default=2.0, help="load before sampling")
    ap.add_argument("--checkpoint-commits", type=int, default=500, help="per checkpoint mode")
    ap.add_argument("--dir", type=Path, default=None, help="where the files go (the disk)")
    args = ap.parse_args()
    gap = args.gap_ms / 1000
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        probe = Database(root / "safety.db")
        probe.ensure_schema(PROBE_SCHEMA)
        sampled(probe, ["full", "normal"], 10, gap)  # warm the file and the page cache
        idle = sampled(probe, ["full", "normal"], args.samples, gap)
        stop = mp.Event()
        counts = mp.Array("q", 2)
        loader = mp.Process(
            target=load,
            args=(str(root), args.batch, args.append_kb, args.fsync_ms, stop, counts),
            daemon=True,
        )
        t0 = time.perf_counter()
        loader.start()
        try:
            time.sleep(args.warmup_s)
            loaded = sampled(probe, ["full", "normal"], args.samples, gap)
            beside_full = beside_writer(root, args.samples, gap, lock_free=False)
            beside_sync = beside_writer(root, args.samples, gap, lock_free=True)
            auto = checkpointing(root, args.checkpoint_commits, background=False)
            bg = checkpointing(root, args.checkpoint_commits, background=True)
        finally:
            stop.set()
            loader.join(60)
        load_s = time.perf_counter() - t0
        probe.close()
    res = {
        "idle_full": stats(idle["full"]),
        "idle_normal": stats(idle["normal"]),
        "loaded_full": stats(loaded["full"]),
        "loaded_normal": stats(loaded["normal"]),
        "loaded_normal_beside_full_writer": stats(beside_full),
        "loaded_normal_beside_sync_writer": stats(beside_sync),
        "loaded_autocheckpoint": stats(auto),
        "loaded_background_checkpoint": stats(bg),
    }

    def ratio(a: str, b: str, q: str) -> float:
        return round(res[a][q] / max(res[b][q], 1e-6), 1)

    print(
        json.dumps(
            {
                "bench": "fsync_contention",
                "samples": args.samples,
                "gap_ms": args.gap_ms,
                "cpus": os.cpu_count(),
                "loadavg_1m": round(os.getloadavg()[0], 2),
                "python": platform.python_version(),
                "sqlite": sqlite3.sqlite_version,
                "load_rows_per_s": round(counts[0] / load_s),
                "load_outbox_fsyncs_per_s": round(counts[1] / load_s, 1),
                **res,
                "ratio_loaded_full_to_idle_full_p50": ratio("loaded_full", "idle_full", "p50"),
                "ratio_loaded_full_to_idle_full_p99": ratio("loaded_full", "idle_full", "p99"),
                "ratio_loaded_full_to_loaded_normal_p50": ratio(
                    "loaded_full", "loaded_normal", "p50"
                ),
                "ratio_loaded_full_to_loaded_normal_p99": ratio(
                    "loaded_full", "loaded_normal", "p99"
                ),
                "ratio_beside_full_to_beside_sync_p99": ratio(
                    "loaded_normal_beside_full_writer", "loaded_normal_beside_sync_writer", "p99"
                ),
                "ratio_autocheckpoint_to_background_max": ratio(
                    "loaded_autocheckpoint", "loaded_background_checkpoint", "max"
                ),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
