"""Versioned SQLite migrations (gateway/base/migrations.py; the steps in healthgw/schema.py): a
data directory made by the previous release is upgraded in place and keeps its data, a
file from a newer release is refused with a clear error, and a crash mid-step leaves the
file at the last whole step."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gateway.base.db import Database
from gateway.base.migrations import SchemaTooNew, Step, check_steps, migrate, schema_version
from gateway.base.settings import Settings
from gateway.contract.topics import vitals_topic
from gateway.notify import text_rows
from healthgw.assembly.hub import assemble
from healthgw.schema import FILES, migrate_data_dir

ROOT = Path(__file__).resolve().parents[3]
# Made by the release that landed before versioning (commit 801c63b): `healthgw` assembled
# offline over examples/household.yaml, five readings for its first person, then stopped.
PREVIOUS = ROOT / "tests" / "fixtures" / "release-801c63b"


def _previous_release(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    for name in FILES:
        shutil.copy(PREVIOUS / name, data / name)
    return data


def _version(path: Path) -> int:
    with sqlite3.connect(path) as c:
        return int(c.execute("PRAGMA user_version").fetchone()[0])


def test_the_fixture_is_the_previous_release() -> None:
    for name in FILES:
        assert _version(PREVIOUS / name) == 0  # before versioning


async def test_a_previous_release_data_dir_is_upgraded_and_keeps_its_data(tmp_path: Path) -> None:
    data = _previous_release(tmp_path)
    settings = Settings(
        data_dir=data, household=ROOT / "examples" / "household.yaml",
        mqtt_url="mqtt://127.0.0.1:9", api_token="migration-test-Qm7vT2pX9rLw4Kd8Zs",
        assistant_model="off", gateway_id="fixture",
    )  # fmt: skip
    gw = assemble(settings).gateway  # migrates before any part opens a file
    for name, steps in FILES.items():
        assert _version(data / name) == len(steps)
    await gw.start(offline=True)
    try:
        person = gw.household.persons[0]
        old = gw.store.readings(person.id, limit=100)
        assert [r["heart_rate"] for r in old] == [70.0, 71.0, 72.0, 73.0, 74.0]
        # The upgraded files take new rows: a reading through the gateway is stored.
        payload = {"ts": time.time(), "seq": 99, "heart_rate": 66, "spo2": 98}
        await gw.on_message(
            vitals_topic(person.id, person.devices[0].id), json.dumps(payload).encode()
        )
        assert gw.store.flush(10)
        assert len(gw.store.readings(person.id, limit=100)) == 6
    finally:
        await gw.stop()
    # A second start applies nothing.
    assert migrate_data_dir(data) == {name: [] for name in FILES}


def test_a_messages_table_from_before_delivery_reports_gets_the_column(tmp_path: Path) -> None:
    db = Database(tmp_path / "safety.db")
    # The messages table as it was before delivery reports (today's, minus that column).
    c = db.conn()
    c.executescript(text_rows.SCHEMA.replace(
        "    updated_at REAL NOT NULL,\n    delivery TEXT", "    updated_at REAL NOT NULL\n"
    ).split("CREATE INDEX")[0])  # fmt: skip
    assert "delivery" not in [r[1] for r in c.execute("PRAGMA table_info(messages)")]
    c.execute(
        "INSERT INTO messages (id, key, person, purpose, to_phone, body, marker, state,"
        " next_attempt_at, created_at, updated_at) VALUES"
        " ('m1', 'k1', 'dad', 'sos:contact', '+440', 'hi', 'ref M1', 'sent', 0, 0, 0)"
    )
    applied = migrate(db, FILES["safety.db"])
    assert applied[-1].startswith("messages.delivery")
    cols = [r[1] for r in db.conn().execute("PRAGMA table_info(messages)")]
    assert "delivery" in cols
    assert db.conn().execute("SELECT key FROM messages").fetchall()[0][0] == "k1"
    db.close()


def test_a_file_from_a_newer_release_is_refused_and_left_alone(tmp_path: Path) -> None:
    db = Database(tmp_path / "healthgw.db")
    db.conn().execute("PRAGMA user_version = 99")
    with pytest.raises(SchemaTooNew, match="newer healthgw"):
        migrate(db, FILES["healthgw.db"])
    assert schema_version(db) == 99
    assert db.conn().execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    db.close()


def test_healthgw_run_refuses_a_newer_file_with_a_clear_message(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with sqlite3.connect(data / "safety.db") as c:
        c.execute("PRAGMA user_version = 7")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEALTHGW_")}
    env |= {"HEALTHGW_DATA_DIR": str(data), "HEALTHGW_API_TOKEN": "migration-test-Qm7vT2pX9rLw4Kd8Zs",
            "HEALTHGW_HOUSEHOLD": str(ROOT / "examples" / "household.yaml"),
            "HEALTHGW_MQTT_URL": "mqtt://127.0.0.1:9"}  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "healthgw.cli", "run"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "safety.db: schema version 7 was made by a newer healthgw" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_failing_step_leaves_the_file_at_the_last_whole_step(tmp_path: Path) -> None:
    def boom(c: sqlite3.Connection) -> None:
        c.execute("CREATE TABLE half (x)")
        raise sqlite3.OperationalError("disk I/O error")

    steps = (Step(1, "one", sql="CREATE TABLE one (x);"), Step(2, "two", apply=boom))
    db = Database(tmp_path / "x.db")
    with pytest.raises(sqlite3.OperationalError):
        migrate(db, steps)
    assert schema_version(db) == 1
    tables = {r[0] for r in db.conn().execute("SELECT name FROM sqlite_master")}
    assert tables == {"one"}  # step 2 rolled back whole
    db.close()


def test_step_versions_must_count_up_from_one() -> None:
    check_steps((Step(1, "a"), Step(2, "b")))
    with pytest.raises(ValueError, match="expected 2"):
        check_steps((Step(1, "a"), Step(3, "c")))
