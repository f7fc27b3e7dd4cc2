"""The newest reading per (person, device), kept in memory for the API and the monitor's
start-up seed, so neither needs a query per device (gateway.store.Store.latest)."""

from __future__ import annotations

import threading
from typing import Any

from gateway.base.db import Database
from gateway.contract.values import Reading
from gateway.store.queries import distinct
from gateway.store.schema import READING_COLS, _reading_dict, _reading_params


class LatestCache:
    """(person, device) -> [ts, source, last_seen]; source is either the writer's queue item
    (its dict built lazily in snapshot()) or a ready row dict from the database. Producers,
    the writer thread and readers share it under one lock."""

    def __init__(self) -> None:
        self._latest: dict[tuple[str, str], list[Any]] = {}
        self._lock = threading.Lock()

    def note(self, reading: Reading, item: tuple[Any, ...], now: float) -> None:
        """A reading was accepted (the hot path: no dict is built here)."""
        key = (reading.person, reading.device)
        with self._lock:
            entry = self._latest.get(key)
            if entry is None or reading.ts >= entry[0]:
                self._latest[key] = [reading.ts, item, reading.received_at or now]
            else:  # a late, older reading: the device was still heard from
                entry[2] = max(entry[2], reading.received_at or now)

    def note_row(self, params: tuple[Any, ...]) -> None:
        """A stored row this run's add_reading never saw (a previous run's spill file)."""
        d = _reading_dict(dict(zip(READING_COLS, params, strict=True)))
        key = (d["person"], d["device"])
        with self._lock:
            cur = self._latest.get(key)
            if cur is None or d["ts"] > cur[0]:
                self._latest[key] = [d["ts"], d, d["received_at"]]

    def seed(self, db: Database) -> None:
        """From the database at start: one index seek per person and device."""
        conn = db.conn()
        seeded: dict[tuple[str, str], list[Any]] = {}
        for person in distinct(db, "person"):
            for device in distinct(db, "device", where="person = ?", args=(person,)):
                row = conn.execute(
                    "SELECT * FROM readings WHERE person = ? AND device = ?"
                    " ORDER BY ts DESC, seq DESC LIMIT 1",
                    (person, device),
                ).fetchone()
                d = _reading_dict(row)
                seeded[(person, device)] = [d["ts"], d, d["received_at"]]
        with self._lock:
            for key, entry in seeded.items():
                cur = self._latest.get(key)
                if cur is None or entry[0] > cur[0]:
                    self._latest[key] = entry

    def snapshot(self) -> dict[tuple[str, str], dict[str, Any]]:
        with self._lock:
            entries = [(k, e[1], e[2]) for k, e in self._latest.items()]
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for key, source, last_seen in entries:
            if isinstance(source, dict):  # copy what is mutable: the cache stays intact
                row = {**source, "flags": list(source["flags"])}
                if row["sleep"] is not None:
                    row["sleep"] = dict(row["sleep"])
            else:
                row = _reading_dict(dict(zip(READING_COLS, _reading_params(source), strict=True)))
            row["last_seen"] = last_seen
            out[key] = row
        return out
