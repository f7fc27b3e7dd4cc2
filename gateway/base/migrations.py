"""Versioned schema changes for the gateway's SQLite files (`PRAGMA user_version`).

Each file has one ordered list of steps, kept in one place (healthgw/schema.py, the
composition root, which knows every part that stores something). `migrate` applies the steps
above the file's version in order, each in one durable transaction together with its version
stamp, so a crash mid-upgrade leaves the file at the last whole step and the next start
carries on. A file stamped above the last step was made by a newer release: it is refused
(SchemaTooNew), never downgraded or written to.

Components still declare their own tables with CREATE ... IF NOT EXISTS, so each part works
alone (tests, tools); every change after a file's baseline (a new column, an index, a data
fix) is a step here, never an ad-hoc ALTER in a component."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from gateway.base.db import Database
from gateway.base.errors import ConfigError

log = logging.getLogger(__name__)


class SchemaTooNew(ConfigError):
    """The file's schema version is above this release's last step."""


@dataclass(frozen=True, slots=True)
class Step:
    version: int
    name: str
    sql: str = ""  # statements run in order (CREATE ... IF NOT EXISTS, ALTER, UPDATE)
    apply: Callable[[sqlite3.Connection], None] | None = None  # for conditional changes


def check_steps(steps: Sequence[Step]) -> None:
    """Versions are 1, 2, 3... in order: a gap or a repeat is a programming error."""
    for want, step in enumerate(steps, 1):
        if step.version != want:
            raise ValueError(f"migration {step.name!r} has version {step.version}, expected {want}")


def schema_version(db: Database) -> int:
    return int(db.conn().execute("PRAGMA user_version").fetchone()[0])


def migrate(db: Database, steps: Sequence[Step]) -> list[str]:
    """Bring the file to the last step's version; returns the names of the steps applied."""
    check_steps(steps)
    current = schema_version(db)
    latest = len(steps)
    if current > latest:
        raise SchemaTooNew(
            f"{db.path.name}: schema version {current} was made by a newer healthgw "
            f"(this release knows up to {latest}); restore that release or a backup"
        )
    applied: list[str] = []
    for step in steps[current:]:
        with db.tx(durable=True) as c:
            for statement in _statements(step.sql):
                c.execute(statement)
            if step.apply is not None:
                step.apply(c)
            c.execute(f"PRAGMA user_version = {step.version:d}")
        applied.append(step.name)
        log.info("%s: schema step %d applied (%s)", db.path.name, step.version, step.name)
    return applied


def has_column(c: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in c.execute(f"PRAGMA table_info({table})"))


def _statements(script: str) -> Iterator[str]:
    """One statement at a time (sqlite3 runs one per execute; executescript would commit the
    step's transaction early)."""
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if _code(buf):
                yield buf
            buf = ""
    if _code(buf):
        yield buf


def _code(text: str) -> str:
    """The text without comment lines and semicolons: empty for a comment-only chunk."""
    lines = (ln for ln in text.splitlines() if not ln.strip().startswith("--"))
    return "".join(lines).replace(";", "").strip()
