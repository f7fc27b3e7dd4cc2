"""The embedded database holds PHI: owner-only files, and pruned rows overwritten."""

from __future__ import annotations

import os
from pathlib import Path

from gateway.base.db import Database


def test_database_files_are_owner_only_and_deletes_are_secure(tmp_path: Path) -> None:
    old = os.umask(0o022)  # a typical default: files would be world-readable
    try:
        db = Database(tmp_path / "x.db")
        db.ensure_schema("CREATE TABLE t (v TEXT);")
        with db.tx() as c:
            c.execute("INSERT INTO t VALUES ('Maria Lopez, chest pain')")
    finally:
        os.umask(old)
    for name in ("x.db", "x.db-wal", "x.db-shm"):
        p = tmp_path / name
        if p.exists():
            assert p.stat().st_mode & 0o077 == 0, name
    assert db.conn().execute("PRAGMA secure_delete").fetchone()[0] == 1
    with db.tx() as c:
        c.execute("DELETE FROM t")
    db.conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    assert b"chest pain" not in (tmp_path / "x.db").read_bytes()
