"""The local store: readings, events, audit rows and SOS trajectories in SQLite.

Hot path: `add_reading` / `add_event` / `add_audit` only put a tuple on a bounded queue; one
writer thread turns the queue into transactions of up to `batch_size` rows (multi-row
INSERTs of up to 512 rows each, see `_padded`).

Nothing accepted is silently lost:
- queue full (slow disk, locked DB) -> the row is appended to a JSON-lines spill file under
  `spill_dir` instead; once the queue is empty the writer replays the spill files in order and
  deletes them. While spilling, new rows keep going to the spill file so order is kept.
- a failing transaction (locked, disk I/O) is retried with backoff, forever while running; on
  stop, after STOP_GRACE_S, what is still in memory is written to a spill file for the next start.
- a row the database refuses for good (bad type, constraint) goes to a `rejected-*.jsonl`
  dead-letter file next to the spill files and is counted, never dropped quietly.
- leftover spill files (a crash) are replayed when the writer starts. Replay is idempotent:
  readings are unique on (person, device, ts, seq), events and audit rows on their id. The
  last batch of each replayed file commits with fsync before the file is deleted.
Limit: rows still in the in-memory queue when the process is killed outright are lost; that
is the price of an add_* that never blocks (normally under flush_interval_s of rows).

Logs carry counts and SQLite error codes only, never values or names (PHI).

Spill file names are `spill-<gen>.jsonl`; replay order is gen order. Files the producers write
get even gens; a rescue file written at stop takes the odd gen just before the file producers
are spilling to, because its rows are older than that file's and newer than any earlier one.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import queue
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from gateway.db import Database
from gateway.errors import StorageError
from gateway.model import Event, Reading

log = logging.getLogger(__name__)

_DAY_S = 86_400.0

# Columns in the order of the INSERT parameters (also the keys of a spilled row).
READING_COLS: tuple[str, ...] = (
    "person",
    "device",
    "ts",
    "seq",
    "heart_rate",
    "spo2",
    "systolic_bp",
    "diastolic_bp",
    "temperature_c",
    "respiratory_rate",
    "steps",
    "on_supplemental_o2",
    "consciousness",
    "fall_detected",
    "battery",
    "latitude",
    "longitude",
    "sleep",
    "received_at",
    "news2_total",
    "news2_level",
    "anomaly",
    "flags",
)
EVENT_COLS: tuple[str, ...] = ("id", "type", "person", "ts", "payload")
AUDIT_COLS: tuple[str, ...] = (
    "id",
    "ts",
    "actor",
    "tool",
    "run_id",
    "args",
    "ok",
    "result",
    "error",
    "latency_ms",
)
_BOOL_COLS = ("on_supplemental_o2", "fall_detected")
_NO_SEQ = -1  # seq is NOT NULL so the unique key also covers devices that send no seq

SCHEMA = """
CREATE TABLE IF NOT EXISTS readings (
    id INTEGER PRIMARY KEY,
    person TEXT NOT NULL,
    device TEXT NOT NULL,
    ts REAL NOT NULL,
    seq INTEGER NOT NULL DEFAULT -1,
    heart_rate REAL,
    spo2 REAL,
    systolic_bp REAL,
    diastolic_bp REAL,
    temperature_c REAL,
    respiratory_rate REAL,
    steps INTEGER,
    on_supplemental_o2 INTEGER,
    consciousness TEXT,
    fall_detected INTEGER,
    battery REAL,
    latitude REAL,
    longitude REAL,
    sleep TEXT,
    received_at REAL NOT NULL,
    news2_total INTEGER,
    news2_level TEXT,
    anomaly REAL,
    flags TEXT
);
-- Idempotency key; also serves per-device range queries and the latest-per-device seed.
CREATE UNIQUE INDEX IF NOT EXISTS readings_key ON readings(person, device, ts, seq);
-- Per-person range queries and per-person pruning.
CREATE INDEX IF NOT EXISTS readings_person_ts ON readings(person, ts);
-- clean_history: unflagged rows only (flags is NULL when there are none).
CREATE INDEX IF NOT EXISTS readings_clean ON readings(person, ts) WHERE flags IS NULL;

CREATE TABLE IF NOT EXISTS events (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    person TEXT NOT NULL,
    ts REAL NOT NULL,
    payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_ts ON events(ts);
CREATE INDEX IF NOT EXISTS events_person_ts ON events(person, ts);

CREATE TABLE IF NOT EXISTS trajectories (
    run_id TEXT PRIMARY KEY,
    person TEXT NOT NULL,
    category TEXT NOT NULL,
    status TEXT NOT NULL,
    started_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    steps INTEGER NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS trajectories_started ON trajectories(started_at);
CREATE INDEX IF NOT EXISTS trajectories_person_started ON trajectories(person, started_at);

CREATE TABLE IF NOT EXISTS audit (
    id TEXT PRIMARY KEY,
    ts REAL NOT NULL,
    actor TEXT,
    tool TEXT,
    run_id TEXT,
    args TEXT,
    ok INTEGER NOT NULL,
    result TEXT,
    error TEXT,
    latency_ms REAL
);
CREATE INDEX IF NOT EXISTS audit_ts ON audit(ts);
CREATE INDEX IF NOT EXISTS audit_tool_ts ON audit(tool, ts);
CREATE INDEX IF NOT EXISTS audit_run_ts ON audit(run_id, ts);
"""

# Upserts that do nothing on a key conflict (replays, upstream duplicates) but, unlike
# INSERT OR IGNORE, still raise on NOT NULL / type problems so such rows are dead-lettered.
_SQL_READING = (
    f"INSERT INTO readings ({', '.join(READING_COLS)}) "
    f"VALUES ({', '.join('?' * len(READING_COLS))}) "
    "ON CONFLICT(person, device, ts, seq) DO NOTHING"
)
_SQL_EVENT = (
    f"INSERT INTO events ({', '.join(EVENT_COLS)}) "
    f"VALUES ({', '.join('?' * len(EVENT_COLS))}) ON CONFLICT(id) DO NOTHING"
)
_SQL_AUDIT = (
    f"INSERT INTO audit ({', '.join(AUDIT_COLS)}) "
    f"VALUES ({', '.join('?' * len(AUDIT_COLS))}) ON CONFLICT(id) DO NOTHING"
)

# Queue item kinds. A reading item keeps the frozen Reading and is only turned into SQL
# parameters on the writer thread, so add_reading stays a tuple build and a put.
_R, _E, _A, _WAKE = "r", "e", "a", "w"
_COLS = {_R: READING_COLS, _E: EVENT_COLS, _A: AUDIT_COLS}
_SQL = {_R: _SQL_READING, _E: _SQL_EVENT, _A: _SQL_AUDIT}
_WAKE_ITEM: tuple[Any, ...] = (_WAKE,)
# Rows per INSERT: a power of two, and SQLite's 32,766 parameters per statement (3.32+).
_ROWS_PER_INSERT = {
    k: min(512, 1 << (32_000 // len(cols)).bit_length() - 1) for k, cols in _COLS.items()
}


def _padded(n: int) -> int:
    """Statement size for n rows: the next power of two. sqlite3 caches up to 128 prepared
    statements per connection, ~0.9 MB each at 500 rows: one per batch size grew the
    gateway by 110 MB under load. Padded with copies of the last row (a no-op: ON CONFLICT
    DO NOTHING, and rowcount counts rows inserted), there are ten sizes per table."""
    return 1 << (n - 1).bit_length()


@functools.lru_cache(maxsize=64)
def _multi_insert(kind: str, n: int) -> str:
    """`_SQL[kind]` with n rows of placeholders (same ON CONFLICT clause)."""
    head, _, tail = _SQL[kind].partition(" VALUES ")
    group, _, conflict = tail.partition(") ")
    return f"{head} VALUES {', '.join([group + ')'] * n)} {conflict}"


Row = tuple[str, tuple[Any, ...]]  # (kind, SQL parameters)

# Errors retrying cannot fix: the row itself is bad. Everything else from sqlite3
# (locked, busy, disk I/O, full) is treated as transient and retried.
_PERMANENT: tuple[type[BaseException], ...] = (
    sqlite3.IntegrityError,
    sqlite3.InterfaceError,
    sqlite3.ProgrammingError,
    sqlite3.DataError,
    TypeError,
    ValueError,
    OverflowError,
)

_SPILL_RE = re.compile(r"^spill-(\d{12})\.jsonl$")


def _spill_gen(path: Path) -> int:
    m = _SPILL_RE.match(path.name)
    return int(m.group(1)) if m else 0


def _errname(exc: BaseException) -> str:
    """An error label that carries no data: the SQLite code name, or the class name."""
    return str(getattr(exc, "sqlite_errorname", None) or type(exc).__name__)


# One encoder for every row: json.dumps with options builds a new encoder per call.
_encode = json.JSONEncoder(separators=(",", ":"), default=str).encode


def _dumps(value: Any) -> str:
    return _encode(value)


def _reading_params(item: tuple[Any, ...]) -> tuple[Any, ...]:
    _, r, news2_total, news2_level, anomaly, flags, added_at = item
    return (
        r.person,
        r.device,
        r.ts,
        _NO_SEQ if r.seq is None else r.seq,
        r.heart_rate,
        r.spo2,
        r.systolic_bp,
        r.diastolic_bp,
        r.temperature_c,
        r.respiratory_rate,
        r.steps,
        r.on_supplemental_o2,
        r.consciousness,
        r.fall_detected,
        r.battery,
        r.latitude,
        r.longitude,
        None if r.sleep is None else _dumps(dict(r.sleep)),
        r.received_at or added_at,
        news2_total,
        news2_level,
        anomaly,
        _dumps(list(flags)) if flags else None,
    )


def _to_row(item: tuple[Any, ...]) -> Row:
    kind = item[0]
    if kind == _R:
        return (_R, _reading_params(item))
    return (kind, item[1])


def _reading_dict(params: Mapping[str, Any]) -> dict[str, Any]:
    """A stored reading (row or parameters by column name) as the dict the queries return."""
    out = {c: params[c] for c in READING_COLS}
    if out["seq"] == _NO_SEQ:
        out["seq"] = None
    for c in _BOOL_COLS:
        if out[c] is not None:
            out[c] = bool(out[c])
    out["sleep"] = None if out["sleep"] is None else json.loads(out["sleep"])
    out["flags"] = [] if out["flags"] is None else json.loads(out["flags"])
    return out


def _audit_dict(row: sqlite3.Row) -> dict[str, Any]:
    out = {c: row[c] for c in AUDIT_COLS}
    out["ok"] = bool(out["ok"])
    out["args"] = None if out["args"] is None else json.loads(out["args"])
    out["result"] = None if out["result"] is None else json.loads(out["result"])
    return out


def _steps(trajectory: Mapping[str, Any]) -> int:
    states = trajectory.get("interaction_trajectory")
    return len(states) if isinstance(states, list) else 0


class Store:
    # Backoff for failing transactions; class attributes so tests can shorten them.
    RETRY_BASE_S = 0.05
    RETRY_MAX_S = 2.0
    # How long stop() keeps retrying a failing database before spilling what is in memory.
    STOP_GRACE_S = 10.0
    # Rows per DELETE in prune, so the writer is never locked out for long.
    PRUNE_CHUNK = 5000
    # While a batch fills, how often the writer looks at the queue.
    POLL_S = 0.005

    def __init__(
        self,
        db: Database,
        *,
        spill_dir: Path,
        batch_size: int = 500,
        flush_interval_s: float = 0.5,
        queue_size: int = 50_000,
        retention_days: int = 365,
    ) -> None:
        if batch_size < 1 or queue_size < 1 or flush_interval_s <= 0 or retention_days < 1:
            raise ValueError("batch_size, queue_size, flush_interval_s, retention_days > 0")
        self._db = db
        self._spill_dir = Path(spill_dir)
        self._spill_dir.mkdir(parents=True, exist_ok=True)
        self._batch_size = batch_size
        self._flush_interval = flush_interval_s
        self._retention_days = retention_days
        self._q: queue.Queue[tuple[Any, ...]] = queue.Queue(maxsize=queue_size)
        db.ensure_schema(SCHEMA)

        # Spill state, guarded by _spill_lock. While _spilling, producers append to the
        # current file instead of the queue; the writer clears it when it takes the file.
        self._spill_lock = threading.Lock()
        self._spilling = False
        self._closed = False
        self._spill_logged_at = -1e9
        self._spill_fh: IO[str] | None = None
        self._spill_gen = 0  # gen of the open spill file
        self._taken: list[Path] = []  # own files closed for replay (writer thread only)
        self._leftover = self._scan_spill_files()  # a previous run's files, replayed first
        last = max((_spill_gen(p) for p in self._leftover), default=0)
        self._next_gen = last + 2 + (last % 2)  # even, and leaves an odd gen free above `last`
        self._replay_progress: dict[Path, tuple[int, int]] = {}  # resume points, see _replay

        # flush(): rows accepted by add_* vs rows of ours the writer has finished with.
        self._count_lock = threading.Lock()
        self._accepted = 0
        self._done = 0
        self._done_cv = threading.Condition()
        # Durability tickets (gateway/mqtt_acks.py): rows put on the queue vs queue rows the
        # writer has finished with. The queue is FIFO and written in order, so done >= a
        # ticket means every row queued before it is committed; spilled rows are on disk
        # before add_* returns and need no ticket.
        self._queued = 0
        self._queue_done = 0
        self._on_commit: Callable[[], None] | None = None
        # Health episodes (writer thread): on_state(False, reason) once when writes start to
        # fail (a full disk, an I/O error), on_state(True, "") once they succeed again.
        self.on_state: Callable[[bool, str], None] | None = None
        self._failing_since: float | None = None

        # latest(): (person, device) -> [ts, source, last_seen]; source is either the queue
        # item (dict built lazily in latest()) or a ready row dict from the database.
        self._latest: dict[tuple[str, str], list[Any]] = {}
        self._latest_lock = threading.Lock()

        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._stop_at = 0.0
        self._stats = {
            "written": 0,
            "duplicates": 0,
            "spilled": 0,
            "replayed": 0,
            "rejected": 0,
            "batches": 0,
            "errors": 0,
            "lost": 0,  # rows neither queued nor spilled (memory bound hit, spill refused)
        }

    # --- lifecycle ------------------------------------------------------------------------

    def alive(self) -> bool:
        """The writer thread is running (readiness)."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self._thread is not None or self._stopping.is_set():
            raise RuntimeError("Store.start() may be called once")
        self._seed_latest()
        self._thread = threading.Thread(target=self._run, name="store-writer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Write everything queued or spilled, then join the writer. If the database keeps
        failing for STOP_GRACE_S, what is still in memory goes to a spill file instead."""
        if self._thread is not None:
            self._stop_at = time.monotonic()
            self._stopping.set()
            self._wake()
            self._thread.join()
        self._stopping.set()
        with self._spill_lock:
            # From now on add_* appends to spill files (replayed by the next Store).
            self._closed = True
            self._spilling = True
        # Rows still queued: never started, a give-up at stop, or a late add during stop.
        self._give_up([])
        with self._spill_lock:
            if self._spill_fh is not None:
                self._spill_fh.close()
                self._spill_fh = None

    # --- hot path -------------------------------------------------------------------------

    def add_reading(
        self,
        reading: Reading,
        *,
        news2_total: int | None = None,
        news2_level: str | None = None,
        anomaly: float | None = None,
        flags: Sequence[str] = (),
    ) -> None:
        if isinstance(flags, str):
            flags = (flags,)
        now = time.time()
        item = (_R, reading, news2_total, news2_level, anomaly, tuple(flags), now)
        self._submit(item)
        key = (reading.person, reading.device)
        with self._latest_lock:
            entry = self._latest.get(key)
            if entry is None or reading.ts >= entry[0]:
                self._latest[key] = [reading.ts, item, reading.received_at or now]
            else:  # a late, older reading: the device was still heard from
                entry[2] = max(entry[2], reading.received_at or now)

    def add_event(self, event: Event) -> None:
        # Serialised here (events are rare) so a non-JSON payload fails at the caller.
        params = (event.id, str(event.type), event.person, event.ts, _dumps(event.to_payload()))
        self._submit((_E, params))

    def add_audit(self, record: Mapping[str, Any]) -> None:
        latency = record.get("latency_ms")
        params = (
            str(record.get("id") or uuid.uuid4().hex),  # an id makes spill replays idempotent
            float(record.get("ts") or time.time()),
            record.get("actor"),
            record.get("tool"),
            record.get("run_id"),
            _dumps(record.get("args")),
            1 if record.get("ok") else 0,
            _dumps(record.get("result")),
            None if record.get("error") is None else str(record.get("error")),
            None if latency is None else float(latency),
        )
        self._submit((_A, params))

    def _submit(self, item: tuple[Any, ...]) -> None:
        if not self._spilling:
            try:
                self._q.put_nowait(item)
            except queue.Full:
                pass
            else:
                with self._count_lock:
                    self._accepted += 1
                    self._queued += 1
                return
        self._spill(item)

    def _spill(self, item: tuple[Any, ...]) -> None:
        kind, params = _to_row(item)
        line = _dumps([kind, dict(zip(_COLS[kind], params, strict=True))]) + "\n"
        with self._spill_lock:
            # Re-check under the lock: the writer may have drained the spill meanwhile.
            if not self._spilling:
                try:
                    self._q.put_nowait(item)
                except queue.Full:
                    self._spilling = True
                    now = time.monotonic()
                    if now - self._spill_logged_at > 60:  # one line a minute under overload
                        self._spill_logged_at = now
                        log.warning(
                            "store: queue full (%d rows), spilling to disk (%d spilled so far)",
                            self._q.maxsize,
                            self._stats["spilled"],
                        )
                else:
                    with self._count_lock:
                        self._accepted += 1
                        self._queued += 1
                    return
            try:
                if self._spill_fh is None:
                    self._spill_gen = self._next_gen
                    self._next_gen += 2
                    path = self._spill_path(self._spill_gen)
                    self._spill_fh = open(path, "a", encoding="utf-8")  # noqa: SIM115
                self._spill_fh.write(line)
                # Flushed (not fsynced): survives a process crash, which is the common case.
                self._spill_fh.flush()
            except OSError as exc:
                self._stats["errors"] += 1
                self._stats["lost"] += 1
                n = self._stats["lost"]
                if not n & (n - 1):  # 1, 2, 4...: a full disk must not flood the log
                    log.error("store: cannot write spill file (%s); %d rows lost so far",
                              _errname(exc), n)  # fmt: skip
                raise StorageError("queue full and spill file not writable") from exc
            self._stats["spilled"] += 1
        with self._count_lock:
            self._accepted += 1

    # --- durable, synchronous -------------------------------------------------------------

    def save_trajectory(
        self,
        run_id: str,
        *,
        person: str,
        category: str,
        trajectory: Mapping[str, Any],
        status: str,
        started_at: float,
        updated_at: float,
        durable: bool = True,
    ) -> None:
        """Upsert one run, fsynced before returning unless `durable` is False (an assistant's
        step in progress: the next step rewrites it, and fsyncs compete with the SOS
        journal's). Raises StorageError on failure (the 30 s busy timeout of the connection
        already waits out a locked database)."""
        body = _dumps(dict(trajectory))
        try:
            with self._db.tx(durable=durable) as c:
                c.execute(
                    "INSERT INTO trajectories (run_id, person, category, status, started_at,"
                    " updated_at, steps, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT(run_id) DO UPDATE SET person = excluded.person,"
                    " category = excluded.category, status = excluded.status,"
                    " started_at = excluded.started_at, updated_at = excluded.updated_at,"
                    " steps = excluded.steps, body = excluded.body",
                    (
                        run_id,
                        person,
                        category,
                        status,
                        started_at,
                        updated_at,
                        _steps(trajectory),
                        body,
                    ),
                )
        except sqlite3.Error as exc:
            log.error("store: save_trajectory failed (%s)", _errname(exc))
            raise StorageError(f"save_trajectory failed: {_errname(exc)}") from exc

    def flush(self, timeout: float = 10) -> bool:
        """Block until every row added before this call is committed (spilled rows
        included), and a previous run's spill files are replayed. False on timeout, e.g.
        while the database stays locked or before start()."""
        with self._count_lock:
            target = self._accepted
        self._wake()
        with self._done_cv:
            return self._done_cv.wait_for(
                lambda: self._done >= target and not self._leftover, timeout
            )

    # --- durability tickets (gateway.mqtt_acks.Durability) -------------------------------

    def durable_ticket(self) -> int:
        return self._queued

    def is_durable(self, ticket: int) -> bool:
        return self._queue_done >= ticket

    def commit_soon(self) -> None:
        self._wake()

    def on_commit(self, callback: Callable[[], None] | None) -> None:
        self._on_commit = callback

    def _queue_rows_done(self, n: int) -> None:
        """Writer thread: n rows taken from the queue are committed or dead-lettered."""
        with self._count_lock:
            self._queue_done += n
        callback = self._on_commit
        if callback is not None:
            try:
                callback()
            except Exception as exc:  # a listener must never stop the writer
                log.error("store: commit listener failed (%s)", _errname(exc))

    # --- queries --------------------------------------------------------------------------

    def readings(
        self,
        person: str,
        *,
        device: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 1000,
    ) -> list[dict[str, Any]]:
        """The newest `limit` readings with since <= ts < until, in ascending ts order."""
        where: list[str] = ["person = ?"]
        args: list[Any] = [person]
        if device is not None:
            where.append("device = ?")
            args.append(device)
        args.extend(self._window(where, since, until))
        order = "ts DESC, seq DESC" if device is not None else "ts DESC, id DESC"
        sql = f"SELECT * FROM readings WHERE {' AND '.join(where)} ORDER BY {order} LIMIT ?"
        rows = self._db.conn().execute(sql, (*args, limit)).fetchall()
        return [_reading_dict(r) for r in reversed(rows)]

    def clean_history(self, person: str, *, limit: int = 5000) -> list[dict[str, Any]]:
        """The most recent `limit` readings without flags, ascending ts (training data for
        the anomaly model, which must never learn from flagged readings)."""
        rows = (
            self._db.conn()
            .execute(
                "SELECT * FROM readings WHERE person = ? AND flags IS NULL"
                " ORDER BY ts DESC LIMIT ?",
                (person, limit),
            )
            .fetchall()
        )
        return [_reading_dict(r) for r in reversed(rows)]

    def latest(self) -> dict[tuple[str, str], dict[str, Any]]:
        with self._latest_lock:
            snapshot = [(k, e[1], e[2]) for k, e in self._latest.items()]
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for key, source, last_seen in snapshot:
            if isinstance(source, dict):  # copy what is mutable: the cache stays intact
                row = {**source, "flags": list(source["flags"])}
                if row["sleep"] is not None:
                    row["sleep"] = dict(row["sleep"])
            else:
                row = _reading_dict(dict(zip(READING_COLS, _reading_params(source), strict=True)))
            row["last_seen"] = last_seen
            out[key] = row
        return out

    def events(
        self,
        *,
        person: str | None = None,
        types: Sequence[str] | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """Event payloads with since <= ts < until, newest first."""
        where: list[str] = []
        args: list[Any] = []
        if person is not None:
            where.append("person = ?")
            args.append(person)
        if types is not None:
            types = [str(t) for t in types]
            if not types:
                return []
            where.append(f"type IN ({', '.join('?' * len(types))})")
            args.extend(types)
        args.extend(self._window(where, since, until))
        cond = f"WHERE {' AND '.join(where)}" if where else ""
        sql = f"SELECT payload FROM events {cond} ORDER BY ts DESC, rowid DESC LIMIT ?"
        rows = self._db.conn().execute(sql, (*args, limit)).fetchall()
        return [json.loads(r["payload"]) for r in rows]

    def trajectories(
        self, *, person: str | None = None, category: str | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        """Run summaries, newest started first."""
        where: list[str] = []
        args: list[Any] = []
        if person is not None:
            where.append("person = ?")
            args.append(person)
        if category is not None:
            where.append("category = ?")
            args.append(category)
        cond = f"WHERE {' AND '.join(where)}" if where else ""
        sql = (
            "SELECT run_id, person, category, status, started_at, updated_at, steps"
            f" FROM trajectories {cond} ORDER BY started_at DESC, run_id DESC LIMIT ?"
        )
        return [dict(r) for r in self._db.conn().execute(sql, (*args, limit)).fetchall()]

    def trajectory(self, run_id: str) -> dict[str, Any] | None:
        row = (
            self._db.conn()
            .execute("SELECT * FROM trajectories WHERE run_id = ?", (run_id,))
            .fetchone()
        )
        if row is None:
            return None
        out = dict(row)
        out["trajectory"] = json.loads(out.pop("body"))
        return out

    def audit(
        self,
        *,
        tool: str | None = None,
        run_id: str | None = None,
        since: float | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """Audit rows with ts >= since, newest first."""
        where: list[str] = []
        args: list[Any] = []
        if tool is not None:
            where.append("tool = ?")
            args.append(tool)
        if run_id is not None:
            where.append("run_id = ?")
            args.append(run_id)
        args.extend(self._window(where, since, None))
        cond = f"WHERE {' AND '.join(where)}" if where else ""
        sql = f"SELECT * FROM audit {cond} ORDER BY ts DESC, rowid DESC LIMIT ?"
        return [_audit_dict(r) for r in self._db.conn().execute(sql, (*args, limit)).fetchall()]

    @staticmethod
    def _window(where: list[str], since: float | None, until: float | None) -> list[float]:
        args: list[float] = []
        if since is not None:
            where.append("ts >= ?")
            args.append(since)
        if until is not None:
            where.append("ts < ?")
            args.append(until)
        return args

    # --- maintenance ----------------------------------------------------------------------

    def prune(self, now: float) -> int:
        """Delete readings, events and audit rows older than retention_days. Deletes in
        chunks of PRUNE_CHUNK rows, each its own short transaction."""
        cutoff = now - self._retention_days * _DAY_S
        deleted = 0
        for person in self._distinct("person"):
            deleted += self._delete_chunks(
                "DELETE FROM readings WHERE id IN"
                " (SELECT id FROM readings WHERE person = ? AND ts < ? LIMIT ?)",
                (person, cutoff),
            )
        for table in ("events", "audit"):
            deleted += self._delete_chunks(
                f"DELETE FROM {table} WHERE rowid IN"
                f" (SELECT rowid FROM {table} WHERE ts < ? LIMIT ?)",
                (cutoff,),
            )
        if deleted:
            log.info("store: pruned %d rows older than %d days", deleted, self._retention_days)
        return deleted

    def _delete_chunks(self, sql: str, args: tuple[Any, ...]) -> int:
        total = 0
        while True:
            with self._db.tx() as c:
                n = c.execute(sql, (*args, self.PRUNE_CHUNK)).rowcount
            total += n
            if n < self.PRUNE_CHUNK:
                return total

    def _distinct(self, col: str, *, where: str = "", args: tuple[Any, ...] = ()) -> list[str]:
        """Distinct values of an indexed readings column by skip-scan: one index seek per
        value, so it costs O(values) rather than a scan of every reading."""
        cond = f"{where} AND " if where else ""
        conn = self._db.conn()
        out: list[str] = []
        row = conn.execute(
            f"SELECT {col} FROM readings {'WHERE ' + where if where else ''}"
            f" ORDER BY {col} LIMIT 1",
            args,
        ).fetchone()
        while row is not None:
            out.append(row[0])
            row = conn.execute(
                f"SELECT {col} FROM readings WHERE {cond}{col} > ? ORDER BY {col} LIMIT 1",
                (*args, row[0]),
            ).fetchone()
        return out

    def stats(self) -> dict[str, int]:
        """queued, written (new rows), spilled, batches (transactions), errors, plus
        duplicates (idempotent no-ops), replayed (rows read back from spill files) and
        rejected (dead-lettered rows)."""
        return {"queued": self._q.qsize(), **self._stats}

    # --- latest cache ---------------------------------------------------------------------

    def _seed_latest(self) -> None:
        conn = self._db.conn()
        seeded: dict[tuple[str, str], list[Any]] = {}
        for person in self._distinct("person"):
            for device in self._distinct("device", where="person = ?", args=(person,)):
                row = conn.execute(
                    "SELECT * FROM readings WHERE person = ? AND device = ?"
                    " ORDER BY ts DESC, seq DESC LIMIT 1",
                    (person, device),
                ).fetchone()
                d = _reading_dict(row)
                seeded[(person, device)] = [d["ts"], d, d["received_at"]]
        with self._latest_lock:
            for key, entry in seeded.items():
                cur = self._latest.get(key)
                if cur is None or entry[0] > cur[0]:
                    self._latest[key] = entry

    def _note_replayed_reading(self, params: tuple[Any, ...]) -> None:
        """Rows from a previous run's spill files were never seen by add_reading."""
        d = _reading_dict(dict(zip(READING_COLS, params, strict=True)))
        key = (d["person"], d["device"])
        with self._latest_lock:
            cur = self._latest.get(key)
            if cur is None or d["ts"] > cur[0]:
                self._latest[key] = [d["ts"], d, d["received_at"]]

    # --- writer thread --------------------------------------------------------------------

    def _wake(self) -> None:
        # The sentinel only ends the writer's wait for a fuller batch; its place in the
        # queue does not matter. A full queue means the writer is not waiting anyway.
        with contextlib.suppress(queue.Full):
            self._q.put_nowait(_WAKE_ITEM)

    def _run(self) -> None:
        try:
            self._loop()
        finally:
            self._db.close()  # this thread's connection

    def _loop(self) -> None:
        carry: list[Row] = []  # a batch that hit an unexpected error: retried, never dropped
        delay = self.RETRY_BASE_S
        while True:
            try:
                while self._leftover:  # a previous run's rows are older than anything queued
                    if not self._replay(self._leftover[0], own=False):
                        self._give_up([])
                        return
                    self._leftover.pop(0)
                    if not self._leftover:
                        self._settle(0)  # wakes flush(), which also waits for these
                rows = carry or self._convert(self._collect())
                carry = rows
                if rows and not self._write(rows, own=True):
                    self._give_up(rows)
                    return
                carry = []
                if self._q.empty() and (self._spilling or self._taken) and not self._replay_spill():
                    self._give_up([])
                    return
                if (
                    self._stopping.is_set()
                    and self._q.empty()
                    and not self._spilling
                    and not self._taken
                ):
                    return
                delay = self.RETRY_BASE_S
            except Exception as exc:  # a bug or an I/O error must not kill the writer
                self._stats["errors"] += 1
                log.error("store: writer error (%s); retry in %.2fs", _errname(exc), delay)
                if self._stopping.is_set() and time.monotonic() - self._stop_at > self.STOP_GRACE_S:
                    self._give_up(carry)
                    return
                time.sleep(delay)
                delay = min(delay * 2, self.RETRY_MAX_S)

    def _convert(self, items: list[tuple[Any, ...]]) -> list[Row]:
        rows: list[Row] = []
        bad: list[Row] = []
        for item in items:
            try:
                rows.append(_to_row(item))
            except Exception:  # e.g. a Reading built by hand with a non-mapping sleep
                bad.append(("raw", (repr(item[1:]),)))
        if bad:
            self._dead_letter(bad, "unconvertible row")
            self._settle(len(bad))
            self._queue_rows_done(len(bad))
        return rows

    def _settle(self, n: int) -> None:
        """n of our accepted rows are finished with (committed or dead-lettered)."""
        with self._done_cv:
            self._done += n
            self._done_cv.notify_all()

    def _collect(self) -> list[tuple[Any, ...]]:
        """Up to batch_size items: waits for the first, then for more until batch_size or
        flush_interval_s after the first (sooner when woken by flush/stop or spilling)."""
        stopping = self._stopping.is_set()
        try:
            first = self._q.get(timeout=0.05 if stopping else self._flush_interval)
        except queue.Empty:
            return []
        batch: list[tuple[Any, ...]] = []
        wait_more = not stopping
        if first[0] == _WAKE:
            wait_more = False
        else:
            batch.append(first)
        deadline = time.monotonic() + self._flush_interval
        while len(batch) < self._batch_size:
            try:
                item = self._q.get_nowait()
            except queue.Empty:
                # While spilling nothing new enters the queue: write now, then replay.
                if not wait_more or self._spilling:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                # Poll, not wait: a writer waiting on the queue is woken by every put, and
                # takes the GIL from the event loop once per reading (the ingest profile).
                time.sleep(min(remaining, self.POLL_S))
                continue
            if item[0] == _WAKE:
                wait_more = False
            else:
                batch.append(item)
        return batch

    def _write(self, rows: list[Row], *, own: bool, durable: bool = False) -> bool:
        """Commit `rows`, retrying transient failures with backoff. Rows the database
        refuses for good are dead-lettered. False only when stopping and the database
        kept failing past STOP_GRACE_S (the caller then keeps the rows on disk)."""
        delay = self.RETRY_BASE_S
        pending = list(rows)
        one_by_one = False
        while True:
            try:
                if one_by_one:
                    self._commit_each(pending, durable=durable)
                else:
                    self._commit(pending, durable=durable)
                break
            except _PERMANENT as exc:
                # Find the bad row(s): commit row by row, dead-lettering those that fail.
                log.warning(
                    "store: batch of %d rows refused (%s); retrying row by row",
                    len(pending),
                    _errname(exc),
                )
                one_by_one = True
            except sqlite3.Error as exc:
                self._stats["errors"] += 1
                self._set_failing(_errname(exc))
                if self._stopping.is_set() and time.monotonic() - self._stop_at > self.STOP_GRACE_S:
                    log.error("store: giving up on a failing database at stop (%s)", _errname(exc))
                    return False
                log.warning(
                    "store: write of %d rows failed (%s); retry in %.2fs",
                    len(pending),
                    _errname(exc),
                    delay,
                )
                time.sleep(delay)
                delay = min(delay * 2, self.RETRY_MAX_S)
        if self._failing_since is not None:
            self._set_failing(None)
        if own:
            self._settle(len(rows))
            self._queue_rows_done(len(rows))
        return True

    def _set_failing(self, reason: str | None) -> None:
        """Writer thread: report the start (reason) or the end (None) of a failing episode."""
        if (reason is not None) == (self._failing_since is not None):
            return
        self._failing_since = time.monotonic() if reason is not None else None
        if reason is None:
            log.warning("store: writes succeed again")
        callback = self.on_state
        if callback is not None:
            try:
                callback(reason is None, reason or "")
            except Exception as exc:
                log.error("store: state listener failed (%s)", _errname(exc))

    def _commit(self, rows: list[Row], *, durable: bool = False) -> None:
        by_kind: dict[str, list[tuple[Any, ...]]] = {}
        for kind, params in rows:  # per-table order is kept; one tx makes them atomic
            by_kind.setdefault(kind, []).append(params)
        inserted = 0
        with self._db.tx(durable=durable) as c:
            for kind, params_list in by_kind.items():
                # Many rows per statement, not executemany: that re-takes the GIL for every
                # row (sqlite3 releases it around each step), and with the event loop busy
                # each re-take waits a switch interval: the writer crawled at 4.4k rows/s
                # during an ingest drain against 86k/s alone.
                step = _ROWS_PER_INSERT[kind]
                for i in range(0, len(params_list), step):
                    chunk = params_list[i : i + step]
                    flat = [v for params in chunk for v in params]
                    size = _padded(len(chunk))
                    flat.extend(chunk[-1] * (size - len(chunk)))
                    inserted += c.execute(_multi_insert(kind, size), flat).rowcount
        self._stats["batches"] += 1
        self._stats["written"] += inserted
        self._stats["duplicates"] += len(rows) - inserted

    def _commit_each(self, pending: list[Row], *, durable: bool = False) -> None:
        """Row by row; removes rows from `pending` as they are settled so a transient
        failure midway resumes where it stopped."""
        while pending:
            row = pending[0]
            try:
                self._commit([row], durable=durable)
            except _PERMANENT as exc:
                self._dead_letter([row], _errname(exc))
            pending.pop(0)

    def _dead_letter(self, rows: list[Row], reason: str) -> None:
        """Keep rows the database will never take in a rejected-*.jsonl file."""
        path = self._spill_dir / f"rejected-{time.time_ns()}.jsonl"
        self._stats["rejected"] += len(rows)
        self._stats["errors"] += len(rows)
        try:
            with open(path, "a", encoding="utf-8") as fh:
                for kind, params in rows:
                    cols = _COLS.get(kind)
                    row = dict(zip(cols, params, strict=True)) if cols else list(params)
                    fh.write(_dumps([kind, row, reason]) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            log.critical(
                "store: %d refused rows (%s) could not be kept (%s) and are lost",
                len(rows),
                reason,
                _errname(exc),
            )
            return
        log.error("store: %d rows refused (%s), kept in %s", len(rows), reason, path.name)

    def _replay_spill(self) -> bool:
        """Take the current spill file (producers go back to the queue, whose new rows are
        newer than everything spilled) and replay all taken files in order."""
        with self._spill_lock:
            if self._spill_fh is not None:
                self._spill_fh.close()
                self._spill_fh = None
                self._taken.append(self._spill_path(self._spill_gen))
            self._spilling = False
        while self._taken:
            if not self._replay(self._taken[0], own=True):
                return False
            self._taken.pop(0)
        return True

    def _replay(self, path: Path, *, own: bool) -> bool:
        """Write one spill file's rows in batches, then delete it. The last batch commits
        durably (fsync), so the rows cannot vanish from both the file and the database on
        power loss. Progress is remembered, so a retry after an error resumes; a crash midway
        replays the file again next start, which the unique keys make harmless."""
        # (lines already written, rows of ours written but not yet reported to flush())
        start, unsettled = self._replay_progress.get(path, (0, 0))
        n = 0
        with open(path, encoding="utf-8") as fh:
            batches = self._read_spill(fh, start, own=own)
            current = next(batches, None)
            while current is not None:
                end, batch = current
                following = next(batches, None)  # look ahead: is this the last batch?
                if not self._write(batch, own=False, durable=following is None):
                    return False
                # Each batch is reported once the next one is in, the last after the
                # unlink, so flush() never returns while a replayed file is still on disk.
                if own:
                    self._settle(unsettled)
                    unsettled = len(batch)
                self._replay_progress[path] = (end, unsettled)
                self._stats["replayed"] += len(batch)
                n += len(batch)
                current = following
        path.unlink()
        self._replay_progress.pop(path, None)
        if own:
            self._settle(unsettled)
        log.info("store: replayed %d spilled rows", n)
        return True

    def _read_spill(self, fh: IO[str], start: int, *, own: bool) -> Iterator[tuple[int, list[Row]]]:
        """(lines consumed, rows) per batch of up to batch_size rows, from line `start`."""
        batch: list[Row] = []
        lineno = start
        for lineno, line in enumerate(fh, 1):
            if lineno <= start:
                continue
            try:
                kind, row = json.loads(line)
                params = tuple(row[c] for c in _COLS[kind])
            except (ValueError, TypeError, KeyError):
                # A torn last line after a crash: keep the raw text, do not guess.
                self._dead_letter([("raw", (line.rstrip("\n"),))], "unreadable spill line")
                if own:  # it was counted as accepted; settle it so flush() returns
                    self._settle(1)
                continue
            if not own and kind == _R:
                self._note_replayed_reading(params)
            batch.append((kind, params))
            if len(batch) >= self._batch_size:
                yield lineno, batch
                batch = []
        if batch:
            yield lineno, batch

    def _give_up(self, rows: list[Row]) -> None:
        """Stopping with a failing database: keep in-memory rows on disk for next start."""
        with self._spill_lock:
            rows = rows + self._convert(self._drain_queue())
            if not rows:
                return
            try:
                self._write_rescue_locked(rows)
            except OSError as exc:
                self._stats["errors"] += len(rows)
                log.critical(
                    "store: %d rows could not be written anywhere (%s) and are lost",
                    len(rows),
                    _errname(exc),
                )

    def _drain_queue(self) -> list[tuple[Any, ...]]:
        items: list[tuple[Any, ...]] = []
        while True:
            try:
                item = self._q.get_nowait()
            except queue.Empty:
                return items
            if item[0] != _WAKE:
                items.append(item)

    def _write_rescue_locked(self, rows: list[Row]) -> None:
        """Write rows from memory to a spill file that replays after every file older than
        them and before the file producers are spilling to now (caller holds _spill_lock)."""
        gen = self._spill_gen - 1 if self._spill_fh is not None else self._next_gen - 1
        path = self._spill_path(gen)
        with open(path, "a", encoding="utf-8") as fh:
            for kind, params in rows:
                fh.write(_dumps([kind, dict(zip(_COLS[kind], params, strict=True))]) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self._next_gen += 2  # never reuse `gen` for a later rescue
        self._stats["spilled"] += len(rows)
        log.warning("store: %d in-memory rows kept in %s for the next start", len(rows), path.name)

    # --- spill files ----------------------------------------------------------------------

    def _spill_path(self, gen: int) -> Path:
        return self._spill_dir / f"spill-{gen:012d}.jsonl"

    def _scan_spill_files(self) -> list[Path]:
        return sorted(p for p in self._spill_dir.iterdir() if _SPILL_RE.match(p.name))
