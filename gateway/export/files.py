"""An export written to a file through the one durable write (gateway/base/files.py
`write_durable_with`: a temp file beside the target, owner-only, fsynced, renamed, the
directory fsynced), streamed into it. A crash leaves no half-written export.

Retention: the file's modification time is set to the end of the period it holds (the
newest reading's time), so the retention sweep's file rule (gateway/base/retention.py,
`add_files`: by mtime) removes it when the store would have pruned its newest reading.
Exports written to the data folder's `exports/` are pruned there."""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from gateway.base.files import write_durable_with
from gateway.base.retention import FilePolicy, Retention, _prune_files

EXPORTS_DIR = "exports"
PATTERN = "*.fhir.json"
QUEUED = 4


def default_path(data_dir: Path, person: str, since: float, until: float) -> Path:
    """<data>/exports/<person>-<since>-<until>.fhir.json (UTC dates)."""
    day = time.strftime
    name = f"{person}-{day('%Y%m%d', time.gmtime(since))}-{day('%Y%m%d', time.gmtime(until))}"
    return data_dir / EXPORTS_DIR / f"{name}.fhir.json"


def write_stream(path: Path, chunks: Iterable[bytes], *, mtime: float | None = None) -> int:
    """Write `chunks` to `path` durably (mode 0600); the byte count. The temp file is removed
    on any failure (it may hold PHI)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    return write_durable_with(path, lambda fd: _write_behind(fd, chunks), mtime=mtime)


def _write_behind(fd: int, chunks: Iterable[bytes]) -> int:
    """Write on a second thread while this one builds the next chunks (the disk and the
    encoding overlap: a month is ~1.7 GB). At most QUEUED chunks wait: memory stays bounded."""
    q: queue.Queue[bytes | None] = queue.Queue(maxsize=QUEUED)
    failed: list[BaseException] = []

    def drain() -> None:
        with os.fdopen(fd, "wb", buffering=1 << 20, closefd=False) as fh:
            while (chunk := q.get()) is not None:
                if not failed:
                    try:
                        fh.write(chunk)
                    except BaseException as exc:  # reported on the caller's thread
                        failed.append(exc)

    writer = threading.Thread(target=drain, name="fhir-export-write", daemon=True)
    writer.start()
    size = 0
    try:
        for chunk in chunks:
            if failed:
                break
            q.put(chunk)
            size += len(chunk)
    finally:
        q.put(None)
        writer.join()
    if failed:
        raise failed[0]
    return size


def register_retention(retention: Retention, data_dir: Path) -> None:
    """The exports folder under the retention sweep (the gateway's composition calls it)."""
    retention.add_files(data_dir / EXPORTS_DIR, PATTERN)


def prune_exports(data_dir: Path, retention_days: int, now: float) -> int:
    """Exports in the data folder past retention (the CLI runs it before each export)."""
    directory = data_dir / EXPORTS_DIR
    if not directory.is_dir():
        return 0
    return _prune_files(FilePolicy(directory, PATTERN), now - retention_days * 86400.0)
