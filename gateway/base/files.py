"""The one durable write: how every file that must be found whole after a crash is written.

A file rewritten in place can be left empty or half-written by a crash, and after a power cut
even a renamed file can come back empty, or as the old file, unless its data and the rename
were flushed to disk. `write_durable` does all of that the same way everywhere: a temp file
in the same directory (the rename stays on one filesystem), created O_EXCL with its final
mode (never readable by others, not for a moment), written whole and fsynced, renamed over
the target, and the directory fsynced so the rename itself survives a power cut. A reader sees
the old content or the new, never a mix. docs/architecture.md lists which files use it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

# A temp file older than this is a crashed writer's, never a live one's (a live writer holds
# its temp file for one small write and an fsync).
ORPHAN_AGE_S = 600.0
# Errors that mean "this platform or filesystem cannot fsync a directory", not "the disk
# failed": the rename is then as durable as the platform allows.
_NO_DIR_FSYNC = {errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF, errno.EACCES,
                 errno.EPERM, errno.EISDIR}  # fmt: skip
_OPEN_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def fsync_dir(path: Path) -> None:
    """Make the creations, renames and unlinks in directory `path` durable. Best effort where
    directories cannot be fsynced (Windows, some filesystems); a real I/O error raises."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        if exc.errno in _NO_DIR_FSYNC:
            return
        raise
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _NO_DIR_FSYNC:
            raise
    finally:
        os.close(fd)


def write_durable(
    path: Path,
    data: bytes | str,
    *,
    mode: int = 0o600,
    owner: tuple[int, int] | None = None,
) -> None:
    """Replace `path` with `data` (text is UTF-8) so that a crash or power cut at any moment
    leaves the old content or the new, whole. The file gets exactly `mode` (default 0600,
    whatever the umask) and, when given, the (uid, gid) `owner`, both before it takes the
    name: a reader such as mosquitto never finds it unreadable. OSError when the disk
    refuses; the temp file is removed on any failure."""
    blob = data.encode("utf-8") if isinstance(data, str) else data

    def write(fd: int) -> None:
        view = memoryview(blob)  # TypeError for anything but bytes: cleaned up below
        while view:
            view = view[os.write(fd, view) :]

    write_durable_with(path, write, mode=mode, owner=owner)


def write_durable_with(
    path: Path,
    write: Callable[[int], T],
    *,
    mode: int = 0o600,
    owner: tuple[int, int] | None = None,
    mtime: float | None = None,
) -> T:
    """`write_durable` for content written by `write(fd)` (a stream too large for one buffer:
    an export), with the same temp file, modes, fsyncs and rename; `mtime` set before the
    rename when given. Returns what `write` returns."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, _OPEN_FLAGS, mode)
    try:
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, mode)  # the umask may have narrowed what the caller asked for
            if owner is not None:
                os.fchown(fd, *owner)
            out = write(fd)
            os.fsync(fd)
        finally:
            os.close(fd)
        if mtime is not None:
            os.utime(tmp, (mtime, mtime))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)
    _remove_orphans(path)
    return out


def _remove_orphans(path: Path) -> None:
    """Delete temp files of `path` left by writers killed mid-write (each has a unique name,
    so nothing else would ever remove them, and they may hold private data)."""
    pattern = re.compile(rf"\.{re.escape(path.name)}\.[0-9a-f]{{12}}\.tmp")
    cutoff = time.time() - ORPHAN_AGE_S
    with contextlib.suppress(OSError), os.scandir(path.parent) as entries:
        for entry in entries:
            if pattern.fullmatch(entry.name):
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                        os.unlink(entry.path)
