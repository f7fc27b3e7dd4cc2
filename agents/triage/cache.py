"""The trained triage model on disk, loaded only when this process can vouch for the file.

A joblib file is a pickle: loading one runs whatever code it names. So a cache file is
loaded only when all of these hold, and otherwise the caller retrains (~10 s) instead:

* the cache dir is a real directory owned by this user and writable by nobody else (it is
  created 0700, and narrowed to 0700 when it is ours);
* the file is a regular file (not a symlink), owned by this user, writable by nobody else;
* its SHA-256 equals the one in the sidecar `<file>.sha256` (`sha256sum -c` format) that
  save() wrote next to it. The bytes that were hashed are the bytes unpickled.

The sidecar catches a file replaced or corrupted behind the gateway's back (a copied cache,
a half-written file, disk errors); the ownership checks keep other local users out of both.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import logging
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import joblib

from gateway.base.files import write_durable

log = logging.getLogger(__name__)

SIDECAR_SUFFIX = ".sha256"
_UNSAFE_BITS = stat.S_IWGRP | stat.S_IWOTH


def sidecar(path: Path) -> Path:
    return path.with_name(path.name + SIDECAR_SUFFIX)


def prepare_dir(cache_dir: Path) -> None:
    """Create the dir 0700 (parents as usual); narrow an existing one of ours to 0700."""
    cache_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.stat(cache_dir)
    if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(cache_dir, 0o700)


def _owned_problem(st: os.stat_result, what: str) -> str | None:
    if st.st_uid != os.geteuid():
        return f"{what} belongs to uid {st.st_uid}, not to this user"
    if st.st_mode & _UNSAFE_BITS:
        return f"{what} is writable by other users"
    return None


def _problem(dir_st: os.stat_result, st: os.stat_result) -> str | None:
    if not stat.S_ISDIR(dir_st.st_mode):
        return "its directory is not a directory"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    return _owned_problem(dir_st, "its directory") or _owned_problem(st, "the file")


def load(path: Path) -> Any | None:
    """The unpickled object in `path`, or None (logged) when it is absent or not trusted."""
    try:
        dir_st = os.stat(path.parent)
        # No symlinks; O_NONBLOCK so a FIFO planted there cannot hang us before the S_ISREG check.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:  # ELOOP: the file is a symlink
        log.warning("triage cache %s not loaded (%s); retraining", path, exc.strerror or exc)
        return None
    with os.fdopen(fd, "rb") as f:
        problem = _problem(dir_st, os.fstat(f.fileno()))
        if problem is not None:
            log.warning("triage cache %s not loaded: %s; retraining", path, problem)
            return None
        data = f.read()
    expected = _read_sidecar(path)
    actual = hashlib.sha256(data).hexdigest()
    if expected is None or not hmac.compare_digest(actual, expected):
        why = "no checksum file" if expected is None else "checksum mismatch"
        log.warning("triage cache %s not loaded (%s); retraining", path, why)
        return None
    # Unpickles only the bytes just hashed, which match the sidecar this process family wrote.
    return joblib.load(io.BytesIO(data))


def _read_sidecar(path: Path) -> str | None:
    side = sidecar(path)
    try:
        st = os.lstat(side)
        if not stat.S_ISREG(st.st_mode) or _owned_problem(st, "sidecar") is not None:
            return None
        first = side.read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        return None
    if len(first) != 2 or first[1] != path.name or len(first[0]) != 64:
        return None
    return first[0].lower()


def save(state: Mapping[str, Any], path: Path) -> None:
    """Write `state` and its sidecar with gateway/base/files.py (temp file + rename, both 0600
    from their first byte), then remove other versions' caches. OSError when the dir cannot
    be written. Only a cache (a torn file fails its checksum and is retrained), but one that
    is unpickled, so it takes the one write that is private and whole."""
    prepare_dir(path.parent)
    buf = io.BytesIO()
    joblib.dump(dict(state), buf)
    data = buf.getvalue()
    write_durable(path, data)
    digest = hashlib.sha256(data).hexdigest()
    write_durable(sidecar(path), f"{digest}  {path.name}\n")
    for stale in path.parent.glob("triage-*.joblib*"):  # models of older KB/code versions
        if stale not in (path, sidecar(path)):
            with contextlib.suppress(OSError):
                stale.unlink()
