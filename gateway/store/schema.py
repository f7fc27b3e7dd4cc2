"""The local store's tables, columns and row formats: one place for the SQL the writer,
the spill files and the queries share."""

from __future__ import annotations

import functools
import json
import operator
import sqlite3
from collections.abc import Mapping
from typing import Any

from gateway.contract.vitals import SCALAR_VITALS, VITALS

_DAY_S = 86_400.0

# Columns in the order of the INSERT parameters (also the keys of a spilled row).
READING_COLS: tuple[str, ...] = (
    "person",
    "device",
    "ts",
    "seq",
    *SCALAR_VITALS,
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
# Booleans SQLite keeps as 0/1, turned back into bools on the way out.
_BOOL_COLS = tuple(v.name for v in VITALS if v.tsdb == "bool")
_NO_SEQ = -1  # seq is NOT NULL so the unique key also covers devices that send no seq

# One line per vital column, in READING_COLS order (gateway/contract/vitals.py has their types).
_VITAL_COLUMNS = "\n".join(f"    {v.name} {v.column}," for v in VITALS if v.column is not None)

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS readings (
    id INTEGER PRIMARY KEY,
    person TEXT NOT NULL,
    device TEXT NOT NULL,
    ts REAL NOT NULL,
    seq INTEGER NOT NULL DEFAULT -1,
{_VITAL_COLUMNS}
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


def _errname(exc: BaseException) -> str:
    """An error label that carries no data: the SQLite code name, or the class name."""
    return str(getattr(exc, "sqlite_errorname", None) or type(exc).__name__)


# One encoder for every row: json.dumps with options builds a new encoder per call.
_encode = json.JSONEncoder(separators=(",", ":"), default=str).encode


def _dumps(value: Any) -> str:
    return _encode(value)


# The vital columns' values of a Reading in one C-level call (this runs for every reading).
_vital_values = operator.attrgetter(*SCALAR_VITALS)


def _reading_params(item: tuple[Any, ...]) -> tuple[Any, ...]:
    _, r, news2_total, news2_level, anomaly, flags, added_at = item
    return (
        r.person,
        r.device,
        r.ts,
        _NO_SEQ if r.seq is None else r.seq,
        *_vital_values(r),
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
