"""The local model's worker process, seen from the event loop: spawn it, read its pipe,
notice its death, restart it (at most `max_restarts` per `restart_window_s`), kill it when
it stays busy with an abandoned request, stop it.

Kept apart from the engine (agents/llm/engine.py), which decides who may ask what and when
(state, queue, timeouts, the output contract): this module only keeps a healthy process
behind the pipe and answers every waiter when the process goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import time
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from agents.llm.child_process import SPAWN, end_child, spawn_child
from agents.llm.worker import WorkerConfig, serve

log = logging.getLogger("agents.llm.engine")  # one logger for the local model


class WorkerProcess:
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


def _failed_response(rid: int, error: str) -> dict[str, Any]:
    return {"id": rid, "ok": False, "error": error}


class Supervisor:
    """The worker process behind one LocalModel, restarted when it dies. See the module
    docstring."""

    def __init__(
        self,
        config: WorkerConfig | None,
        *,
        load_timeout_s: float,
        max_restarts: int,
        restart_window_s: float,
        stuck_factor: float,
        stuck_min_s: float,
        on_used_up: Callable[[], None],
    ) -> None:
        self._config = config
        self._load_timeout_s = load_timeout_s
        self._max_restarts = max_restarts
        self._restart_window_s = restart_window_s
        self._stuck_factor = stuck_factor
        self._stuck_min_s = stuck_min_s
        self._on_used_up = on_used_up  # restarts used up: the engine turns the model off
        self.worker: WorkerProcess | None = None
        self.spawning: asyncio.Task[WorkerProcess | None] | None = None
        self.restarts: deque[float] = deque()
        self.spawns = 0
        self.deaths = 0
        self.stuck_kills = 0
        self.late: dict[str, int] = {}  # discarded late answers by outcome
        self.last_load_ms: float | None = None

    async def stop(self) -> None:
        """Cancel a load in progress, then stop the worker (asked, terminated, killed)."""
        task, self.spawning = self.spawning, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        w, self.worker = self.worker, None
        if w is not None:
            await self.shutdown(w)

    def abandon(self, w: WorkerProcess, rid: int, timeout_s: float) -> None:
        """The caller of `rid` stopped waiting after `timeout_s`: tell the worker, and kill
        it later if it is still busy with that request."""
        w.abandon(rid)
        # Abandoned work stops at the next token, but a prompt evaluation runs to its end:
        # only a worker busy far longer than that is called stuck.
        stuck_after = max(self._stuck_factor * timeout_s, self._stuck_min_s)
        asyncio.get_running_loop().call_later(stuck_after - timeout_s, self._check_stuck, w, rid)

    async def shutdown(self, w: WorkerProcess, grace_s: float = 2.0) -> None:
        w.stopping = True
        if not w.dead:
            w.cancel.value = 2**62  # abandon whatever it is doing
            with contextlib.suppress(OSError, ValueError):
                w.conn.send(None)
        await end_child(w.proc, grace_s=grace_s, then_s=1.0)
        self.gone(w, "unavailable")

    def _may_restart(self) -> bool:
        now = time.monotonic()
        while self.restarts and now - self.restarts[0] > self._restart_window_s:
            self.restarts.popleft()
        return len(self.restarts) < self._max_restarts

    async def ensure(self, *, count_restart: bool = True) -> WorkerProcess | None:
        w = self.worker
        if w is not None and not w.dead:
            if w.proc.is_alive():
                return w
            self.gone(w, "worker_died")
        if self.spawning is None:
            if count_restart:
                if not self._may_restart():
                    log.error("llm: worker restarts used up; the model is off")
                    self._on_used_up()
                    return None
                self.restarts.append(time.monotonic())
            self.spawning = asyncio.create_task(self._spawn(), name="llm-spawn")
        # Shielded: a caller's timeout must not abort a load that the next call needs.
        task = self.spawning
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if task.cancelled() and (me is None or me.cancelling() == 0):
                return None  # stop() cancelled the load, not our caller
            raise

    async def _spawn(self) -> WorkerProcess | None:
        assert self._config is not None  # no model: the engine never asks for one
        loop = asyncio.get_running_loop()
        cancel = SPAWN.RawValue(ctypes.c_int64, 0)
        w: WorkerProcess | None = None
        t0 = time.perf_counter()
        try:
            proc, parent = spawn_child(serve, (cancel, self._config), name="healthgw-llm")
            w = WorkerProcess(proc, parent, cancel)
            loop.add_reader(parent.fileno(), self._on_readable, w)
            self.spawns += 1
            async with asyncio.timeout(self._load_timeout_s):
                msg = await w.ready
            if msg.get("type") != "ready":
                log.error("llm: model failed to load: %s", msg.get("error"))
                await self.shutdown(w)
                return None
            w.info = msg
            self.last_load_ms = round((time.perf_counter() - t0) * 1000.0, 1)
            log.info(
                "llm: worker %s ready in %.0f ms (nice %s, %s threads)",
                msg.get("pid"),
                self.last_load_ms,
                msg.get("nice"),
                msg.get("n_threads"),
            )
            self.worker = w
            return w
        except TimeoutError:
            log.error("llm: model did not load within %.0f s", self._load_timeout_s)
            if w is not None:
                await self.shutdown(w)
            return None
        except BaseException:
            if w is not None:  # (spawn_child leaves nothing behind when it fails)
                w.proc.kill()
                self.gone(w, "unavailable")
            raise
        finally:
            if self.spawning is asyncio.current_task():
                self.spawning = None

    def _on_readable(self, w: WorkerProcess) -> None:
        try:
            while not w.dead and w.conn.poll():
                self._dispatch(w, w.conn.recv())
        except (EOFError, OSError):
            self.gone(w, "unavailable" if w.stopping else "worker_died")
        except Exception:  # a garbled message: the worker cannot be trusted any more
            log.exception("llm: bad message from worker %s; killing it", w.pid)
            w.proc.kill()
            self.gone(w, "worker_died")

    def _dispatch(self, w: WorkerProcess, msg: dict[str, Any]) -> None:
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
            self.late[code] = self.late.get(code, 0) + 1

    def gone(self, w: WorkerProcess, error: str) -> None:
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
        if self.worker is w:
            self.worker = None
        if not w.stopping:  # _shutdown joins it itself
            w.proc.join(0)  # reap it if it has exited
        if error == "worker_died":
            self.deaths += 1
            log.warning("llm: worker %s died (exit code %s)", w.pid, w.proc.exitcode)

    def _check_stuck(self, w: WorkerProcess, rid: int) -> None:
        if rid in w.late and not w.dead:
            log.warning("llm: worker %s still busy with abandoned request %s; killing", w.pid, rid)
            self.stuck_kills += 1
            w.proc.kill()
            self.gone(w, "worker_died")
