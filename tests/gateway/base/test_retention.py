"""Retention: every table and file that holds PHI is pruned, live rows are kept."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from gateway.base.db import Database
from gateway.base.retention import CHUNK, Retention, prune_jsonl
from gateway.base.settings import Settings
from healthgw.assembly.hub import assemble
from tests.harness import TRIAGE_CACHE

DAY = 86400.0
NOW = 1_800_000_000.0

EXAMPLE_HOUSEHOLD = Path(__file__).resolve().parents[3] / "examples" / "household.yaml"


def _db(tmp_path: Path) -> Database:
    db = Database(tmp_path / "t.db")
    db.ensure_schema(
        "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, ts REAL NOT NULL, state TEXT NOT NULL);"
    )
    return db


def _count(db: Database, table: str, where: str = "1") -> int:
    return int(db.conn().execute(f"SELECT count(*) FROM {table} WHERE {where}").fetchone()[0])


def test_old_rows_go_live_rows_stay(tmp_path: Path) -> None:
    db = _db(tmp_path)
    rows = [(NOW - 400 * DAY, "done")] * (CHUNK * 2 + 7)  # more than one chunk
    rows += [(NOW - 400 * DAY, "pending"), (NOW - 10 * DAY, "done")]
    with db.tx() as c:
        c.executemany("INSERT INTO notes (ts, state) VALUES (?, ?)", rows)
    r = Retention(365)
    r.add_table(db, "notes", "ts", keep_while="state = 'pending'")
    assert r.sweep(NOW)["notes"] == CHUNK * 2 + 7
    assert _count(db, "notes") == 2
    assert _count(db, "notes", "state = 'pending'") == 1
    # Live has a limit: past twice the retention period a pending row goes too.
    with db.tx() as c:
        c.execute("INSERT INTO notes (ts, state) VALUES (?, 'pending')", (NOW - 800 * DAY,))
    assert r.sweep(NOW)["notes"] == 1
    assert _count(db, "notes", "state = 'pending'") == 1


def test_a_missing_table_is_skipped_and_a_broken_one_does_not_stop_the_rest(
    tmp_path: Path,
) -> None:
    db = _db(tmp_path)
    with db.tx() as c:
        c.execute("INSERT INTO notes (ts, state) VALUES (?, 'x')", (NOW - 400 * DAY,))
    r = Retention(365)
    r.add_table(db, "not_here", "ts")
    r.add_table(db, "notes", "no_such_column")  # raises inside the sweep
    r.add_table(db, "notes", "ts")
    done = r.sweep(NOW)
    assert done["not_here"] == 0 and done["notes"] == 1
    assert r.stats["errors"] == 1


def test_policies_refuse_odd_identifiers(tmp_path: Path) -> None:
    r = Retention(30)
    with pytest.raises(ValueError):
        r.add_table(_db(tmp_path), "notes; DROP TABLE notes", "ts")
    with pytest.raises(ValueError):
        r.add_table(_db(tmp_path), "notes", "ts", keep_while="1; --")


def test_files_by_age_and_jsonl_by_record(tmp_path: Path) -> None:
    d = tmp_path / "spill"
    d.mkdir()
    old, new = d / "rejected-1.jsonl", d / "rejected-2.jsonl"
    for p in (old, new):
        p.write_text("{}\n")
    os.utime(old, (NOW - 400 * DAY, NOW - 400 * DAY))
    os.utime(new, (NOW - DAY, NOW - DAY))
    r = Retention(365)
    r.add_files(d, "rejected-*.jsonl")
    r.sweep(NOW)
    assert not old.exists() and new.exists()

    log = tmp_path / "outbox.jsonl"
    recs = [{"ts": NOW - 400 * DAY, "to": "+1"}, {"ts": NOW - DAY, "to": "+2"}]
    log.write_text("".join(json.dumps(x) + "\n" for x in recs) + "torn{\n")
    assert prune_jsonl(log, NOW - 365 * DAY) == 1
    assert log.read_text().splitlines() == [json.dumps(recs[1]), "torn{"]
    assert log.stat().st_mode & 0o777 == 0o600


# Tables not pruned by age, and why.
NOT_PHI = {
    # PHI (the pickled job names a person and a drug), but it lives exactly as long as its
    # active prescription: stopping the prescription removes the job.
    "scheduler_jobs",
    # Twilio MessageSids and when they came (no number, no text): pruned on insert after a
    # year by gateway/notify/replay.py, which is also how long a captured reply stays useless.
    "sms_seen",
}
STORE_PRUNES = {"readings", "events", "audit"}  # Store.prune


async def test_every_table_of_a_running_gateway_is_covered(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        household=EXAMPLE_HOUSEHOLD,
        api_token="retention-admin-token-0123456789",
        assistant_enabled=True,
        assistant_model="off",
        triage_cache_dir=TRIAGE_CACHE,
        ha_discovery_prefix="",
    )
    asm = assemble(settings)
    gw = asm.gateway
    await gw.start(offline=True)
    try:
        covered = {t.table for t in gw.retention.tables} | STORE_PRUNES | NOT_PHI
        for db in (gw.db, gw.safety_db):
            tables = {
                r[0]
                for r in db.conn().execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'"
                    " AND name NOT LIKE 'sqlite_%'"
                )
            }
            missing = tables - covered
            assert not missing, f"tables with no retention policy: {sorted(missing)}"
        # A year-old sent text goes, a pending one of the same age stays (it must still go).
        old = time.time() - (settings.retention_days + 1) * DAY
        with gw.safety_db.tx() as c:
            for i, state in enumerate(("sent", "pending")):
                c.execute(
                    "INSERT INTO messages (id, key, person, purpose, to_phone, body, marker,"
                    " state, next_attempt_at, created_at, updated_at)"
                    " VALUES (?, ?, 'dad', 'test', '+447700900001', 'b', ?, ?, 0, ?, ?)",
                    (f"m{i}", f"k{i}", f"ref {i}", state, old, old),
                )
        with gw.db.tx() as c:
            c.execute(
                "INSERT INTO complaints (id, person, ts, symptoms, created_at)"
                " VALUES ('c1', 'dad', '2025-01-01T10:00', 'chest pain', ?)",
                (old,),
            )
        # The offline text outbox (no Twilio here) keeps numbers and bodies too.
        outbox = settings.data_dir / "outbox.jsonl"
        with outbox.open("a") as fh:
            fh.write(json.dumps({"ts": old, "to": "+447700900201", "body": "b", "id": "x"}))
            fh.write("\n")
        done = gw.retention.sweep(time.time())
        assert done["messages"] == 1 and done["complaints"] == 1
        assert done["outbox.jsonl"] == 1
        assert _count(gw.safety_db, "messages", "state = 'pending'") == 1
    finally:
        await gw.stop()
