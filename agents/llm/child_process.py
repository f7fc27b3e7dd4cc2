"""The one way the agents start and end a child process: the local model's worker
(agents/llm/supervisor.py) and the assistant's conversations (agents/assistant/process/proxy.py).

`spawn_child(target, args, name=...)` starts `target(conn, *args)` in a *spawn* process
(daemon, so it never outlives the gateway) with a duplex pipe, and returns the process and
the parent's end; the child's end is closed here, so the parent sees EOF when the child dies.
`end_child` stops one: it waits `grace_s` for the child to exit on its own (after being asked
to), then terminates it, then kills it."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import sys
import types
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

__all__ = ["SPAWN", "end_child", "spawn_child", "start_process"]

SPAWN = mp.get_context("spawn")  # never fork: the gateway's threads and locks stay home


def start_process(proc: BaseProcess) -> None:
    """Start a spawn-context process without the child re-running the parent's `__main__`
    (the whole gateway, a bench script, pytest): the child only needs its own module, and
    a script without an `if __name__ == "__main__"` guard would otherwise start itself
    again. Synchronous on purpose (a few ms, on the loop thread) so the swap is brief."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")  # no __file__, no __spec__
    try:
        proc.start()
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def spawn_child(
    target: Callable[..., None], args: tuple[Any, ...], *, name: str
) -> tuple[BaseProcess, Connection]:
    """`target(child_end, *args)` running in a new daemon spawn process: (process, parent end)."""
    parent, child = SPAWN.Pipe(duplex=True)
    proc = SPAWN.Process(target=target, args=(child, *args), name=name, daemon=True)
    try:
        start_process(proc)
    except BaseException:
        parent.close()
        child.close()
        raise
    child.close()  # so the parent sees EOF when the child dies
    return proc, parent


async def end_child(proc: BaseProcess, *, grace_s: float, then_s: float) -> None:
    """Wait up to `grace_s` for `proc` to exit, then terminate it, then kill it (waiting
    `then_s` after each). Joins off the event loop."""
    await asyncio.to_thread(proc.join, grace_s)
    if proc.is_alive():
        proc.terminate()
        await asyncio.to_thread(proc.join, then_s)
    if proc.is_alive():
        proc.kill()
        await asyncio.to_thread(proc.join, then_s)
