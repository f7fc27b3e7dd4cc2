"""The store's read side for the API, the monitor and the reports, and the synchronous
trajectory upsert (the SOS and assistant journals' copy). Every query reads through the
calling thread's own connection; the writer thread never waits on them (WAL)."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from gateway.base.db import Database
from gateway.base.errors import StorageError
from gateway.store.schema import _audit_dict, _dumps, _errname, _reading_dict, _steps

log = logging.getLogger("gateway.store")


class StoreQueries:
    """Mixed into Store: the queries need only the database."""

    _db: Database

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
        where, args = _equal(person=person)
        if types is not None:
            types = [str(t) for t in types]
            if not types:
                return []
            where.append(f"type IN ({', '.join('?' * len(types))})")
            args.extend(types)
        args.extend(self._window(where, since, until))
        sql = f"SELECT payload FROM events {_where(where)} ORDER BY ts DESC, rowid DESC LIMIT ?"
        rows = self._db.conn().execute(sql, (*args, limit)).fetchall()
        return [json.loads(r["payload"]) for r in rows]

    def trajectories(
        self, *, person: str | None = None, category: str | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        """Run summaries, newest started first."""
        where, args = _equal(person=person, category=category)
        sql = (
            "SELECT run_id, person, category, status, started_at, updated_at, steps"
            f" FROM trajectories {_where(where)} ORDER BY started_at DESC, run_id DESC LIMIT ?"
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
        where, args = _equal(tool=tool, run_id=run_id)
        args.extend(self._window(where, since, None))
        sql = f"SELECT * FROM audit {_where(where)} ORDER BY ts DESC, rowid DESC LIMIT ?"
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


def _equal(**filters: Any) -> tuple[list[str], list[Any]]:
    """`column = ?` conditions and their arguments for the filters given (None: not filtered).
    Column names come from the keyword names here, never from input."""
    given = [(col, value) for col, value in filters.items() if value is not None]
    return [f"{col} = ?" for col, _ in given], [value for _, value in given]


def _where(conditions: list[str]) -> str:
    return f"WHERE {' AND '.join(conditions)}" if conditions else ""


def distinct(db: Database, col: str, *, where: str = "", args: tuple[Any, ...] = ()) -> list[str]:
    """Distinct values of an indexed readings column by skip-scan: one index seek per
    value, so it costs O(values) rather than a scan of every reading."""
    cond = f"{where} AND " if where else ""
    conn = db.conn()
    out: list[str] = []
    row = conn.execute(
        f"SELECT {col} FROM readings {'WHERE ' + where if where else ''} ORDER BY {col} LIMIT 1",
        args,
    ).fetchone()
    while row is not None:
        out.append(row[0])
        row = conn.execute(
            f"SELECT {col} FROM readings WHERE {cond}{col} > ? ORDER BY {col} LIMIT 1",
            (*args, row[0]),
        ).fetchone()
    return out
