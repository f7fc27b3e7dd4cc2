"""The local model's own process: its priority, its pipe and its request loop.

`serve` is the target of a `multiprocessing` *spawn* process (see engine.LocalModel): it
lowers its own priority (nice 19 by default) so the gateway's safety paths keep the CPU
while the model generates, loads the model once (a `Runner`, agents/llm/runner.py), then
answers requests from its pipe one at a time. llama-cpp-python's Python sampling loop runs
here, so it never holds the gateway's GIL.

Request (dict): {id, static, dynamic, schema, max_tokens, temperature}, or
{id, prime: True, static} to evaluate the static part alone (warms the cache).
Response (dict): {id, ok, text, data, error, finish_reason, prompt_tokens,
completion_tokens, cached_tokens, static_tokens, first_token_ms, total_ms}

The model file is verified by the Runner right before llama.cpp opens it, on every
(re)start: a file swapped after the gateway's startup check is never parsed
(model_path.verified_model).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Protocol

from agents.llm.runner import Runner, elapsed_ms

DEFAULT_SEED = 1234


class CancelFlag(Protocol):
    """A shared int (multiprocessing RawValue): the highest request id to abandon."""

    value: int


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    model_path: str
    n_ctx: int = 2048
    n_threads: int | None = None  # None: os.cpu_count()
    nice: int = 19  # absolute niceness to reach (0 = leave as is)
    seed: int = DEFAULT_SEED
    # The configured file's expected SHA-256 (None: the bundled file's recorded one; any
    # other file is then refused). Checked by `verified_model`.
    sha256: str | None = None


def lower_priority(nice: int) -> int:
    """Raise this process's niceness to `nice` (never lowers it). Returns the niceness."""
    current = os.nice(0)
    if nice > current:
        try:
            return os.nice(nice - current)
        except OSError:
            return current
    return current


def serve(conn: Connection, cancel: CancelFlag, config: WorkerConfig) -> None:
    """Process entry point: load, say "ready" (or "failed"), then serve until None/EOF."""
    niceness = lower_priority(config.nice)
    t0 = time.perf_counter()
    try:
        runner = Runner(config)
    except BaseException as e:
        conn.send({"type": "failed", "error": f"{type(e).__name__}: {e}"[:500]})
        conn.close()
        return
    conn.send(
        {
            "type": "ready",
            "pid": os.getpid(),
            "load_ms": elapsed_ms(t0),
            "nice": niceness,
            "n_threads": runner.n_threads,
            "n_ctx": config.n_ctx,
        }
    )
    while True:
        try:
            req = conn.recv()
        except (EOFError, OSError):
            return  # the gateway is gone
        if req is None:
            runner.close()
            return
        resp = runner.handle(req, cancel)
        try:
            conn.send(resp)
        except OSError:
            return
