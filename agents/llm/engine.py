"""The one local model every agent role shares (parameter sharing), as an async client.

`LocalModel` runs llama.cpp in its own spawned, niced process (agents/llm/worker.py, kept
alive by agents/llm/supervisor.py) and talks to it over a pipe read by the event loop
(`add_reader`), so nothing here blocks the loop or holds the GIL while the model works. Requests are served one at a time, FIFO; at
most `max_queue` callers wait, more get "busy" at once. `generate` never raises for a
model problem: it returns a `Generation` whose `error` says what went wrong, and callers
fall back to their deterministic behaviour.

Error codes: "unavailable" (no model, not started, failed to load, or restarts used up),
"busy", "timeout" (the caller gets it at once; the worker is told to abandon the request
and its late answer is discarded by id; a worker still busy with it after
max(`stuck_factor` x timeout, `stuck_min_s`) is killed and restarted on the next call), "worker_died" (the
process died under this call; the next call restarts it, at most `max_restarts` times per
`restart_window_s`), "truncated" (max_tokens reached before the JSON closed), "invalid_json",
"schema" (parsed JSON that does not satisfy the caller's output contract, a pydantic model
class: checked here by `parse_output`, never guessed), "bad_schema" (the contract has no
JSON schema, or llama.cpp cannot build a grammar from it), "too_long" (prompt + max_tokens
over n_ctx), "internal".
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic

from agents.llm.output import M, OutputError, grammar_schema, parse_output
from agents.llm.stats import _Stats
from agents.llm.supervisor import Supervisor, WorkerProcess
from agents.llm.worker import DEFAULT_SEED, WorkerConfig

log = logging.getLogger(__name__)

__all__ = ["Generation", "LocalModel"]


@dataclass(frozen=True, slots=True)
class Generation(Generic[M]):
    data: M | None  # the answer as the caller's output contract, or None
    error: str | None  # see the module docstring for the codes
    first_token_ms: float | None  # in the worker: request start to first sampled token
    total_ms: float  # what the caller waited, queueing included
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0  # prompt tokens whose KV cache was reused (prefix match)

    @property
    def ok(self) -> bool:
        return self.error is None and self.data is not None


class LocalModel:
    """The local GGUF model in its own low-priority process. See the module docstring."""

    def __init__(
        self,
        model_path: Path | None,
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        nice: int = 19,
        seed: int = DEFAULT_SEED,
        max_queue: int = 8,
        load_timeout_s: float = 120.0,
        max_restarts: int = 3,
        restart_window_s: float = 600.0,
        stuck_factor: float = 4.0,
        stuck_min_s: float = 20.0,
        prime_static: str | None = None,
        sha256: str | None = None,
    ) -> None:
        self.model_path = model_path
        self._prime_static = prime_static
        # The worker checks the file against `sha256` itself before each load (runner.py).
        self._config = (
            WorkerConfig(
                str(model_path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                nice=nice,
                seed=seed,
                sha256=sha256,
            )
            if model_path is not None
            else None
        )
        self._max_queue = max_queue
        self._load_timeout_s = load_timeout_s
        self._sup = Supervisor(
            self._config,
            load_timeout_s=load_timeout_s,
            max_restarts=max_restarts,
            restart_window_s=restart_window_s,
            stuck_factor=stuck_factor,
            stuck_min_s=stuck_min_s,
            on_used_up=self._off,
        )
        # new | starting | ready | absent | failed | stopped
        self._state = "new"
        self._lock = asyncio.Lock()
        self._waiting = 0
        self._ids = itertools.count(1)
        self._stats = _Stats()
        self._unstable_prefix = 0

    # -- lifecycle --------------------------------------------------------------------

    @property
    def available(self) -> bool:
        return self._state == "ready"

    @property
    def pid(self) -> int | None:
        """The worker's pid (None when no worker runs)."""
        w = self._sup.worker
        return w.pid if w is not None and not w.dead else None

    async def start(self) -> None:
        """Spawn the worker and wait (at most load_timeout_s) until the model is loaded,
        then evaluate `prime_static` if given. No model, or a load failure, leaves
        `available` False; it never raises for that."""
        if self._state in ("ready", "stopped"):
            return
        if self._config is None:
            self._state = "absent"
            return
        self._state = "starting"
        w = await self._sup.ensure(count_restart=False)
        if self._state == "starting":
            self._state = "ready" if w is not None else "failed"
        if self._state == "ready" and self._prime_static:
            g = await self.prime(self._prime_static, timeout_s=self._load_timeout_s)
            if g.error is not None:
                log.warning("llm: priming the static prefix failed: %s", g.error)

    async def stop(self) -> None:
        """Stop the worker (asked first, then terminated, then killed). Idempotent."""
        if self._state == "stopped":
            return
        self._state = "stopped"
        await self._sup.stop()

    def _off(self) -> None:
        """The worker's restarts are used up: the model stays off."""
        self._state = "failed"

    # -- requests ---------------------------------------------------------------------

    async def generate(
        self,
        static: str,
        dynamic: str,
        output: type[M],
        *,
        max_tokens: int = 96,
        timeout_s: float = 3.0,
    ) -> Generation[M]:
        """One JSON answer, an `output`: its JSON schema is the grammar, and the answer is
        validated against it. `static` is the shared system prompt (keep it byte-identical
        across calls: its KV cache is reused), `dynamic` the per-call user message. Never
        raises for a model problem; see `Generation.error`."""
        t0 = time.perf_counter()
        if self._state != "ready":
            return self._finish(t0, "unavailable")
        try:
            schema = grammar_schema(output)
        except OutputError as e:
            log.error("llm: %s", e)
            return self._finish(t0, "bad_schema")
        resp = await self._request(static, dynamic, schema, max_tokens, timeout_s)
        if isinstance(resp, str):
            return self._finish(t0, resp)
        return self._answer(t0, resp, output)

    async def _request(
        self, static: str, dynamic: str, schema: dict[str, Any], max_tokens: int, timeout_s: float
    ) -> dict[str, Any] | str:
        """One greedy, grammar-constrained request to the worker: its answer dict, or the
        error word `_call` gives."""
        payload = {"static": static, "dynamic": dynamic, "schema": schema,
                   "max_tokens": max_tokens, "temperature": 0.0}  # fmt: skip
        return await self._call(payload, timeout_s)

    async def generate_json(
        self,
        static: str,
        dynamic: str,
        schema: dict[str, Any],
        *,
        max_tokens: int = 96,
        timeout_s: float = 3.0,
    ) -> Generation[Any]:
        """`generate` for a caller in another process (agents/assistant_proc): the grammar
        comes as a JSON schema already, and `data` is the raw JSON answer, which the caller
        checks against its own output contract. Counted in `stats()` like `generate`."""
        t0 = time.perf_counter()
        if self._state != "ready":
            return self._finish(t0, "unavailable")
        resp = await self._request(static, dynamic, schema, max_tokens, timeout_s)
        if isinstance(resp, str):
            return self._finish(t0, resp)
        if not resp.get("ok"):
            return self._finish(t0, str(resp.get("error") or "internal"), None, resp)
        return self._finish(t0, None, resp.get("data"), resp)

    async def prime(self, static: str, *, timeout_s: float = 120.0) -> Generation[Any]:
        """Evaluate `static` alone so the first real call finds its KV cache warm (a cold
        static prefix of several hundred tokens takes seconds on a small CPU). `data` is
        always None; `error` None means primed. Not counted in `stats()` calls."""
        t0 = time.perf_counter()
        if self._state != "ready":
            return self._finish(t0, "unavailable", record=False)
        resp = await self._call({"prime": True, "static": static}, timeout_s)
        if isinstance(resp, str):
            return self._finish(t0, resp, record=False)
        err = None if resp.get("ok") else str(resp.get("error") or "internal")
        return self._finish(t0, err, None, resp, record=False)

    async def _call(self, payload: dict[str, Any], timeout_s: float) -> dict[str, Any] | str:
        """Send one request when it is this caller's turn; its response, or an error code."""
        if self._waiting >= self._max_queue:
            return "busy"
        loop = asyncio.get_running_loop()
        self._waiting += 1
        queued = True
        w: WorkerProcess | None = None
        fut: asyncio.Future[dict[str, Any]] | None = None
        rid = 0
        try:
            async with asyncio.timeout(timeout_s), self._lock:
                self._waiting -= 1
                queued = False
                w = await self._sup.ensure()
                if w is None:
                    return "unavailable"
                rid = next(self._ids)
                fut = loop.create_future()
                w.pending[rid] = fut
                try:
                    w.conn.send({"id": rid, **payload})
                except (OSError, ValueError):
                    self._sup.gone(w, "worker_died")
                return await fut
        except TimeoutError:
            return "timeout"
        finally:
            if queued:
                self._waiting -= 1
            # Still pending (a timeout cancels `fut` itself, so ask the worker's table):
            if w is not None and rid in w.pending:
                self._sup.abandon(w, rid, timeout_s)

    def _answer(self, t0: float, resp: Mapping[str, Any], output: type[M]) -> Generation[M]:
        error: str | None = None
        data: M | None = None
        if not resp.get("ok"):
            error = str(resp.get("error") or "internal")
            if resp.get("detail"):
                log.warning("llm: %s: %s", error, resp["detail"])
        else:
            if resp.get("static_tokens") == 0:
                # The static part did not tokenize to a prefix of the prompt: its KV cache
                # cannot be reused. Counted in stats; should never happen with a chat
                # template that puts the system message first.
                self._unstable_prefix += 1
            try:
                data = parse_output(output, resp.get("data"))
            except OutputError:
                error = "schema"
        return self._finish(t0, error, data, resp)

    def _finish(
        self,
        t0: float,
        error: str | None,
        data: M | None = None,
        resp: Mapping[str, Any] | None = None,
        *,
        record: bool = True,
    ) -> Generation[M]:
        r = resp or {}
        first = r.get("first_token_ms")
        g = Generation(
            data=data if error is None else None,
            error=error,
            first_token_ms=float(first) if first is not None else None,
            total_ms=round((time.perf_counter() - t0) * 1000.0, 2),
            prompt_tokens=int(r.get("prompt_tokens") or 0),
            completion_tokens=int(r.get("completion_tokens") or 0),
            cached_tokens=int(r.get("cached_tokens") or 0),
        )
        if record:
            self._stats.record(g)
        return g

    def stats(self) -> dict[str, Any]:
        """Calls, errors by code, timeouts, mean/p95 total and first-token ms, restarts."""
        sup = self._sup
        w = sup.worker
        out = self._stats.summary()
        out.update(
            {
                "available": self.available,
                "state": self._state,
                "pid": self.pid,
                "queued": self._waiting,
                "spawns": sup.spawns,
                "worker_deaths": sup.deaths,
                "stuck_kills": sup.stuck_kills,
                "late_discarded": dict(sup.late),
                "unstable_static_prefix": self._unstable_prefix,
                "load_ms": sup.last_load_ms,
                "nice": w.info.get("nice") if w is not None else None,
                "n_threads": w.info.get("n_threads") if w is not None else None,
            }
        )
        return out
