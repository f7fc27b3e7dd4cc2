"""The one local model every agent role shares (parameter sharing), as an async client.

`LocalModel` runs llama.cpp in its own spawned, niced process (agents/llm/worker.py) and
talks to it over a pipe read by the event loop (`add_reader`), so nothing here blocks the
loop or holds the GIL while the model works. Requests are served one at a time, FIFO; at
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
import contextlib
import ctypes
import itertools
import logging
import multiprocessing as mp
import sys
import time
import types
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, Generic

from agents.llm.output import M, OutputError, grammar_schema, parse_output
from agents.llm.stats import _Stats
from agents.llm.worker import DEFAULT_SEED, WorkerConfig, serve

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


# --------------------------------------------------------------------------------------
# the worker process, seen from the event loop
# --------------------------------------------------------------------------------------


class _Worker:
    def __init__(self, proc: BaseProcess, conn: Connection, cancel: Any) -> None:
        self.proc = proc
        self.conn = conn
        self.cancel = cancel  # ctypes c_int64 in shared memory: highest id to abandon
        self.ready: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.late: set[int] = set()  # abandoned ids whose answer has not come back yet
        self.info: dict[str, Any] = {}
        self.dead = False
        self.stopping = False  # asked to exit: its EOF is not a death

    @property
    def pid(self) -> int | None:
        return self.proc.pid

    def abandon(self, rid: int) -> None:
        self.pending.pop(rid, None)
        self.late.add(rid)
        if self.cancel.value < rid:
            self.cancel.value = rid


def _start_process(proc: BaseProcess) -> None:
    """Start a spawn-context process without the child re-running the parent's `__main__`
    (the whole gateway, a bench script, pytest): the worker only needs its own module, and
    a script without an `if __name__ == "__main__"` guard would otherwise start itself
    again. Synchronous on purpose (a few ms, on the loop thread) so the swap is brief."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")  # no __file__, no __spec__
    try:
        proc.start()
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def _failed_response(rid: int, error: str) -> dict[str, Any]:
    return {"id": rid, "ok": False, "error": error}


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
        # The worker checks the file against `sha256` itself before each load (worker.py).
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
        self._max_restarts = max_restarts
        self._restart_window_s = restart_window_s
        self._stuck_factor = stuck_factor
        self._stuck_min_s = stuck_min_s
        # new | starting | ready | absent | failed | stopped
        self._state = "new"
        self._worker: _Worker | None = None
        self._spawning: asyncio.Task[_Worker | None] | None = None
        self._lock = asyncio.Lock()
        self._waiting = 0
        self._ids = itertools.count(1)
        self._restarts: deque[float] = deque()
        self._stats = _Stats()
        self._spawns = 0
        self._deaths = 0
        self._stuck_kills = 0
        self._late: dict[str, int] = {}  # discarded late answers by outcome
        self._unstable_prefix = 0
        self._last_load_ms: float | None = None

    # -- lifecycle --------------------------------------------------------------------

    @property
    def available(self) -> bool:
        return self._state == "ready"

    @property
    def pid(self) -> int | None:
        """The worker's pid (None when no worker runs)."""
        w = self._worker
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
        w = await self._ensure_worker(count_restart=False)
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
        task, self._spawning = self._spawning, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        w, self._worker = self._worker, None
        if w is not None:
            await self._shutdown(w)

    async def _shutdown(self, w: _Worker, grace_s: float = 2.0) -> None:
        w.stopping = True
        if not w.dead:
            w.cancel.value = 2**62  # abandon whatever it is doing
            with contextlib.suppress(OSError, ValueError):
                w.conn.send(None)
        await asyncio.to_thread(w.proc.join, grace_s)
        if w.proc.is_alive():
            w.proc.terminate()
            await asyncio.to_thread(w.proc.join, 1.0)
        if w.proc.is_alive():
            w.proc.kill()
            await asyncio.to_thread(w.proc.join, 1.0)
        self._gone(w, "unavailable")

    def _may_restart(self) -> bool:
        now = time.monotonic()
        while self._restarts and now - self._restarts[0] > self._restart_window_s:
            self._restarts.popleft()
        return len(self._restarts) < self._max_restarts

    async def _ensure_worker(self, *, count_restart: bool = True) -> _Worker | None:
        w = self._worker
        if w is not None and not w.dead:
            if w.proc.is_alive():
                return w
            self._gone(w, "worker_died")
        if self._spawning is None:
            if count_restart:
                if not self._may_restart():
                    log.error("llm: worker restarts used up; the model is off")
                    self._state = "failed"
                    return None
                self._restarts.append(time.monotonic())
            self._spawning = asyncio.create_task(self._spawn(), name="llm-spawn")
        # Shielded: a caller's timeout must not abort a load that the next call needs.
        task = self._spawning
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if task.cancelled() and (me is None or me.cancelling() == 0):
                return None  # stop() cancelled the load, not our caller
            raise

    async def _spawn(self) -> _Worker | None:
        assert self._config is not None
        loop = asyncio.get_running_loop()
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe(duplex=True)
        cancel = ctx.RawValue(ctypes.c_int64, 0)
        proc = ctx.Process(
            target=serve, args=(child, cancel, self._config), name="healthgw-llm", daemon=True
        )
        w: _Worker | None = None
        t0 = time.perf_counter()
        try:
            _start_process(proc)
            child.close()  # so the parent sees EOF when the worker dies
            w = _Worker(proc, parent, cancel)
            loop.add_reader(parent.fileno(), self._on_readable, w)
            self._spawns += 1
            async with asyncio.timeout(self._load_timeout_s):
                msg = await w.ready
            if msg.get("type") != "ready":
                log.error("llm: model failed to load: %s", msg.get("error"))
                await self._shutdown(w)
                return None
            w.info = msg
            self._last_load_ms = round((time.perf_counter() - t0) * 1000.0, 1)
            log.info(
                "llm: worker %s ready in %.0f ms (nice %s, %s threads)",
                msg.get("pid"),
                self._last_load_ms,
                msg.get("nice"),
                msg.get("n_threads"),
            )
            self._worker = w
            return w
        except TimeoutError:
            log.error("llm: model did not load within %.0f s", self._load_timeout_s)
            if w is not None:
                await self._shutdown(w)
            return None
        except BaseException:
            if w is not None:
                w.proc.kill()
                self._gone(w, "unavailable")
            elif proc.pid is not None:
                proc.kill()
            raise
        finally:
            if self._spawning is asyncio.current_task():
                self._spawning = None

    def _on_readable(self, w: _Worker) -> None:
        try:
            while not w.dead and w.conn.poll():
                self._dispatch(w, w.conn.recv())
        except (EOFError, OSError):
            self._gone(w, "unavailable" if w.stopping else "worker_died")
        except Exception:  # a garbled message: the worker cannot be trusted any more
            log.exception("llm: bad message from worker %s; killing it", w.pid)
            w.proc.kill()
            self._gone(w, "worker_died")

    def _dispatch(self, w: _Worker, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind is not None:
            if not w.ready.done():
                w.ready.set_result(msg)
            return
        rid = int(msg.get("id", -1))
        fut = w.pending.pop(rid, None)
        if fut is not None and not fut.done():
            fut.set_result(msg)
        elif rid in w.late:  # an answer nobody waits for any more: discarded
            w.late.discard(rid)
            code = str(msg.get("error") or "ok")
            self._late[code] = self._late.get(code, 0) + 1

    def _gone(self, w: _Worker, error: str) -> None:
        """The worker is dead or being stopped: answer everyone still waiting on it."""
        if w.dead:
            return
        w.dead = True
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(w.conn.fileno())
        with contextlib.suppress(OSError):
            w.conn.close()
        for rid, fut in list(w.pending.items()):
            if not fut.done():
                fut.set_result(_failed_response(rid, error))
        w.pending.clear()
        if not w.ready.done():
            w.ready.set_result({"type": "failed", "error": "worker exited while loading"})
        if self._worker is w:
            self._worker = None
        if not w.stopping:  # _shutdown joins it itself
            w.proc.join(0)  # reap it if it has exited
        if error == "worker_died":
            self._deaths += 1
            log.warning("llm: worker %s died (exit code %s)", w.pid, w.proc.exitcode)

    def _check_stuck(self, w: _Worker, rid: int) -> None:
        if rid in w.late and not w.dead:
            log.warning("llm: worker %s still busy with abandoned request %s; killing", w.pid, rid)
            self._stuck_kills += 1
            w.proc.kill()
            self._gone(w, "worker_died")

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
        payload = {
            "static": static,
            "dynamic": dynamic,
            "schema": schema,
            "max_tokens": max_tokens,
            "temperature": 0.0,
        }
        resp = await self._call(payload, timeout_s)
        if isinstance(resp, str):
            return self._finish(t0, resp)
        return self._answer(t0, resp, output)

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
        w: _Worker | None = None
        fut: asyncio.Future[dict[str, Any]] | None = None
        rid = 0
        try:
            async with asyncio.timeout(timeout_s), self._lock:
                self._waiting -= 1
                queued = False
                w = await self._ensure_worker()
                if w is None:
                    return "unavailable"
                rid = next(self._ids)
                fut = loop.create_future()
                w.pending[rid] = fut
                try:
                    w.conn.send({"id": rid, **payload})
                except (OSError, ValueError):
                    self._gone(w, "worker_died")
                return await fut
        except TimeoutError:
            return "timeout"
        finally:
            if queued:
                self._waiting -= 1
            # Still pending (a timeout cancels `fut` itself, so ask the worker's table):
            if w is not None and rid in w.pending:
                w.abandon(rid)
                # Abandoned work stops at the next token, but a prompt evaluation runs to
                # its end: only a worker busy far longer than that is called stuck.
                stuck_after = max(self._stuck_factor * timeout_s, self._stuck_min_s)
                loop.call_later(stuck_after - timeout_s, self._check_stuck, w, rid)

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
        w = self._worker
        out = self._stats.summary()
        out.update(
            {
                "available": self.available,
                "state": self._state,
                "pid": self.pid,
                "queued": self._waiting,
                "spawns": self._spawns,
                "worker_deaths": self._deaths,
                "stuck_kills": self._stuck_kills,
                "late_discarded": dict(self._late),
                "unstable_static_prefix": self._unstable_prefix,
                "load_ms": self._last_load_ms,
                "nice": w.info.get("nice") if w is not None else None,
                "n_threads": w.info.get("n_threads") if w is not None else None,
            }
        )
        return out
