"""What an export reads and who asked: the databases, the household, the audit sink, and the
request (person, period, downsampling, name, redaction), checked before anything streams.

Bad input is an `ExportError` with the HTTP status it maps to (the CLI exits 2 on any): an
unknown person 404, a period that ends before it starts or a date that does not parse 422,
a period with neither readings nor texts 404. Nothing of the person's record is in a message."""

from __future__ import annotations

import json
import sqlite3
import time as _time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

from gateway.base.db import Database
from gateway.base.errors import HealthGWError
from gateway.export.codes import iso as _iso
from gateway.household.model import Household, Person
from gateway.store.schema import AUDIT_COLS

Downsample = Literal["none", "minute", "hour"]
WINDOW_S: dict[str, float] = {"minute": 60.0, "hour": 3600.0}
# Readings read per query: keyset pages by (ts, id), so memory stays flat however long the period.
CHUNK_ROWS = 1024
_COLS = (
    "id, device, ts, seq, heart_rate, respiratory_rate, spo2, temperature_c, systolic_bp,"
    " diastolic_bp, on_supplemental_o2, consciousness"
)
READING_COLS = tuple(c.strip() for c in _COLS.split(","))
# Literal SQL (no formatting): the first page, then each page after the last (ts, id) read.
_FIRST_PAGE = (
    "SELECT id, device, ts, seq, heart_rate, respiratory_rate, spo2, temperature_c, systolic_bp,"
    " diastolic_bp, on_supplemental_o2, consciousness FROM readings"
    " WHERE person = ? AND ts >= ? AND ts < ? ORDER BY ts, id LIMIT ?"
)
_NEXT_PAGE = (
    "SELECT id, device, ts, seq, heart_rate, respiratory_rate, spo2, temperature_c, systolic_bp,"
    " diastolic_bp, on_supplemental_o2, consciousness FROM readings"
    " WHERE person = ? AND ts < ? AND (ts > ? OR (ts = ? AND id > ?)) ORDER BY ts, id LIMIT ?"
)
_AUDIT = (
    "INSERT INTO audit (id, ts, actor, tool, run_id, args, ok, result, error, latency_ms)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
AUDIT_TOOL = "fhir_export"
_MIN_TS, _MAX_TS = -2_208_988_800.0, 253_339_200_000.0  # 1900-01-01, ~9998


class ExportError(HealthGWError, ValueError):
    """`field`: the query parameter / option at fault (a 422 names it), else None."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.field = field


@dataclass(frozen=True, slots=True)
class ExportSource:
    """What the running gateway (gateway/runtime/api_backend.py) or the CLI hands an export."""

    household: Household
    readings: Database  # healthgw.db
    texts: Database | None  # safety.db (the texts); None: no Communications
    audit: Callable[[Mapping[str, Any]], None]  # the store's add_audit


@dataclass(frozen=True, slots=True)
class ExportRequest:
    person: Person
    since: float  # epoch seconds, inclusive
    until: float  # exclusive
    downsample: Downsample = "none"
    include_name: bool = True
    # The family's redaction of free text (gateway/api/redact.py scrub_text); None: admin.
    scrub: Callable[[str], str] | None = None

    def audit_record(self, actor: str, **extra: Any) -> dict[str, Any]:
        """Who exported what, when: the audit row (no PHI beyond the person's id)."""
        return {
            "actor": actor,
            "tool": AUDIT_TOOL,
            "args": {
                "person": self.person.id,
                "since": _iso(self.since),
                "until": _iso(self.until),
                "downsample": self.downsample,
                "name": self.include_name,
                "redacted": self.scrub is not None,
                **extra,
            },
            "ok": True,
        }


def parse_instant(text: str, tz: ZoneInfo, *, end: bool, field: str = "") -> float:
    """ISO 8601 date or date-time. A date is a local day: its start, or with `end` the start
    of the next day (an `until` date is included, as a GP asking "until 31 May" means). A
    date-time without an offset is household-local."""
    text = text.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            start = datetime.combine(day + timedelta(days=1 if end else 0), time(), tz)
            return start.timestamp()
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
        return (dt if dt.tzinfo is not None else dt.replace(tzinfo=tz)).timestamp()
    except (ValueError, OverflowError):
        raise ExportError(
            422, f"{field or 'time'}: not an ISO 8601 date or date-time", field
        ) from None


def make_request(
    source: ExportSource,
    person_id: str,
    since: str,
    until: str,
    *,
    downsample: str = "none",
    include_name: bool = True,
    scrub: Callable[[str], str] | None = None,
) -> ExportRequest:
    """The request, checked: ExportError (with its status) for anything an export refuses."""
    person = source.household.person(person_id)
    if person is None:
        raise ExportError(404, f"no such person: {person_id[:64]!r}")
    if downsample not in ("none", "minute", "hour"):
        raise ExportError(422, "downsample must be none, minute or hour", "downsample")
    tz = ZoneInfo(source.household.timezone)
    start = parse_instant(since, tz, end=False, field="since")
    stop = parse_instant(until, tz, end=True, field="until")
    if stop <= start:
        raise ExportError(422, "until: the period ends before it starts", "until")
    if not (start >= _MIN_TS and stop <= _MAX_TS):
        raise ExportError(422, "since/until: outside the years 1900 to 9998", "since")
    req = ExportRequest(person, start, stop, downsample, include_name, scrub)  # type: ignore[arg-type]
    if not has_data(source, req):
        raise ExportError(
            404,
            f"no readings or texts for {person_id} from {_iso(start)} to {_iso(stop)}",
        )
    return req


def insert_audit(db: Database, record: Mapping[str, Any]) -> None:
    """An audit row written at once (the CLI: no store writer thread is running; the API
    uses the store's queued add_audit). Same columns and encoding as the store's."""
    assert _AUDIT.startswith(f"INSERT INTO audit ({', '.join(AUDIT_COLS)})")  # the store's columns
    row = {**dict.fromkeys(AUDIT_COLS), "id": uuid.uuid4().hex, "ts": _time.time(), **record}
    row["ok"] = 1 if row["ok"] else 0
    for col in ("args", "result"):
        row[col] = json.dumps(row[col], separators=(",", ":"), default=str)
    with db.tx(durable=True) as c:
        c.execute(_AUDIT, [row[k] for k in AUDIT_COLS])


def has_data(source: ExportSource, req: ExportRequest) -> bool:
    args = (req.person.id, req.since, req.until)
    sql = "SELECT 1 FROM readings WHERE person = ? AND ts >= ? AND ts < ? LIMIT 1"
    if _exists(source.readings, sql, args):
        return True
    sql = "SELECT 1 FROM messages WHERE person = ? AND created_at >= ? AND created_at < ? LIMIT 1"
    return source.texts is not None and _exists(source.texts, sql, args)


def _exists(db: Database, sql: str, args: tuple[Any, ...]) -> bool:
    try:
        return db.conn().execute(sql, args).fetchone() is not None
    except sqlite3.OperationalError:  # that table does not exist (yet) in this data folder
        return False


def reading_pages(db: Database, req: ExportRequest) -> Iterator[list[sqlite3.Row]]:
    """The person's readings in [since, until), ascending (ts, id), CHUNK_ROWS at a time. Each
    page is its own query on the calling thread's connection: no cursor is held between
    pages (a streamed response may read each on another thread)."""
    args = (req.person.id, req.since, req.until, CHUNK_ROWS)
    rows = db.conn().execute(_FIRST_PAGE, args).fetchall()
    while rows:
        yield rows
        if len(rows) < CHUNK_ROWS:
            return
        ts, last_id = rows[-1]["ts"], rows[-1]["id"]
        rows = (
            db.conn()
            .execute(_NEXT_PAGE, (req.person.id, req.until, ts, ts, last_id, CHUNK_ROWS))
            .fetchall()
        )


def messages(db: Database | None, req: ExportRequest) -> list[dict[str, Any]]:
    """The texts the hub sent about the person in the period, oldest first (few: held whole)."""
    if db is None:
        return []
    try:
        rows = (
            db.conn()
            .execute(
                "SELECT id, purpose, to_phone, body, state, created_at, updated_at FROM messages"
                " WHERE person = ? AND created_at >= ? AND created_at < ? ORDER BY created_at",
                (req.person.id, req.since, req.until),
            )
            .fetchall()
        )
    except sqlite3.OperationalError:
        return []
    return [dict(r) for r in rows]
