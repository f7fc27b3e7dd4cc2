"""The stage clocks of `bench/ingest.py --profile` (bench/_ingest_profile.py says what each
stage holds): wrappers that count exclusive wall and CPU time per part on the event loop's
thread, with their own cost calibrated so that the split can take it out again."""

from __future__ import annotations

import asyncio
import functools
import gc
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

STAGES = ("receive", "validate", "score", "store", "ack", "tsdb", "events", "gc", "idle", "rest")
# Each stage's clocked parts ("stage.part"; a stage without parts is its own only part).
PARTS = ("receive.read", "receive.enqueue", "receive.dequeue", "validate.edge",
         "validate.json_schema", "validate.reading", "validate.dedupe", "score.engine",
         "score.arrival", "score.plausibility", "score.confirm", "score.news2", "score.scores",
         "score.alerts", "store", "ack.decide", "ack.write", "tsdb", "events", "gc",
         "idle")  # fmt: skip


def _targets(detail: bool) -> list[tuple[Any, str, str]]:
    """(class or module, attribute, part) for every clock; `detail`: the monitor's steps too
    (~9 more clocked calls a reading, and more distortion: `timed_net_to_untimed`)."""
    import paho.mqtt.client as paho

    from gateway.base.metrics import LatencyHistogram
    from gateway.contract.topics import VitalsPayload
    from gateway.contract.values import Reading
    from gateway.edge.validate import Deduper, EdgeValidator
    from gateway.escalation.watcher import EscalationWatcher
    from gateway.household.state import PersonStatePublisher
    from gateway.monitor import engine, news2_evidence
    from gateway.monitor.devices import DeviceWatch
    from gateway.monitor.engine import Monitor
    from gateway.monitor.plausibility import PlausibilityChecker
    from gateway.monitor.sources import Confirmation
    from gateway.mqtt.acks import AckTracker
    from gateway.mqtt.inbound_queue import Forwarder, PriorityMessageQueue
    from gateway.store import Store
    from gateway.tsdb.writer import TimeSeriesWriter

    acks = ("done", "release", "idle", "at_once", "discarded", "force_overdue")
    return [
        (paho.Client, "loop_read", "receive.read"),
        (Forwarder, "put_nowait", "receive.enqueue"),
        (PriorityMessageQueue, "_get", "receive.dequeue"),
        (EdgeValidator, "validate", "validate.edge"),
        (VitalsPayload, "model_validate_json", "validate.json_schema"),
        (Reading, "from_payload", "validate.reading"),
        (Deduper, "is_duplicate", "validate.dedupe"),
        (Monitor, "process", "score.engine"),  # (with `detail`: the rest of it)
        *(
            [
                (DeviceWatch, "arrived", "score.arrival"),
                (PlausibilityChecker, "check", "score.plausibility"),
                (Confirmation, "confirm", "score.confirm"),  # wrist values over their windows
                (
                    news2_evidence,
                    "score_news2",
                    "score.news2",
                ),  # every NEWS2 (news2_evidence.news2 calls it)
                (engine, "score_reading", "score.scores"),  # other scores (MEOWS, anomaly...)
                (engine, "corroborated", "score.scores"),
                (engine, "alert_transitions", "score.alerts"),
            ]
            if detail
            else []
        ),
        (Store, "add_reading", "store"),
        *((AckTracker, m, "ack.decide") for m in acks),
        (paho.Client, "loop_write", "ack.write"),
        (TimeSeriesWriter, "add_reading", "tsdb"),
        (PersonStatePublisher, "note_reading", "events"),
        (EscalationWatcher, "on_movement", "events"),
        (LatencyHistogram, "observe", "events"),
    ]


class StageClocks:
    """Exclusive wall and CPU time per part, on one thread (the event loop's); other
    threads' calls go straight through. `calibrate()` measures the clocks' own cost per
    clocked call, which `split` takes out again."""

    def __init__(self, detail: bool = False) -> None:
        self.detail = detail
        self.loop_ident = -1
        # Per part: wall, cpu, its clocked calls, clocked calls nested directly inside it.
        self.acc: dict[str, list[float]] = {p: [0.0, 0.0, 0.0, 0.0] for p in PARTS}
        self.collections = [0, 0, 0]  # garbage collections by generation
        # Per clocked call: inside the clocked interval (_in) and in all (_all), in seconds.
        self.bias = dict.fromkeys(("wall_in", "cpu_in", "wall_all", "cpu_all"), 0.0)
        self._stack: list[list[Any]] = []  # [part, wall t0, cpu t0, nested wall, nested cpu]

    def enter(self, part: str) -> None:
        c0 = time.thread_time()  # (a system call: kept outside the wall interval)
        self._stack.append([part, time.perf_counter(), c0, 0.0, 0.0])

    def leave(self) -> None:
        wall = time.perf_counter()
        cpu = time.thread_time()
        part, t0, c0, inner, inner_cpu = self._stack.pop()
        spent, spent_cpu = wall - t0, cpu - c0
        acc = self.acc[part]
        acc[0] += spent - inner
        acc[1] += spent_cpu - inner_cpu
        acc[2] += 1
        if self._stack:
            parent = self._stack[-1]
            parent[3] += spent
            parent[4] += spent_cpu
            self.acc[parent[0]][3] += 1

    def wrap(self, fn: Callable[..., Any], stage: str) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != self.loop_ident:
                return fn(*args, **kwargs)
            self.enter(stage)
            try:
                return fn(*args, **kwargs)
            finally:
                self.leave()

        return timed

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if threading.get_ident() != self.loop_ident:
            return
        if phase == "start":
            self.enter("gc")
            self.collections[info["generation"]] += 1
        elif self._stack and self._stack[-1][0] == "gc":
            self.leave()

    def calibrate(self, n: int = 4000, repeat: int = 7) -> None:
        """Clock a no-op `n` times against calling it bare, `repeat` times; each quantity's
        least (on a shared machine a try can be preempted, never made faster)."""
        tries: dict[str, list[float]] = {k: [] for k in ("bare_wall", "bare_cpu", "wall", "cpu",
                                                        "wall_in", "cpu_in")}  # fmt: skip
        for _ in range(repeat):
            probe = StageClocks()
            probe.loop_ident = threading.get_ident()
            probe.acc["calib"] = [0.0, 0.0, 0.0, 0.0]
            for prefix, fn in (("bare_", lambda: None), ("", probe.wrap(lambda: None, "calib"))):
                w0, c0 = time.perf_counter(), time.thread_time()
                for _ in range(n):
                    fn()
                tries[f"{prefix}wall"].append((time.perf_counter() - w0) / n)
                tries[f"{prefix}cpu"].append((time.thread_time() - c0) / n)
            tries["wall_in"].append(probe.acc["calib"][0] / n)
            tries["cpu_in"].append(probe.acc["calib"][1] / n)
        least = {k: min(v) for k, v in tries.items()}
        self.bias = {"wall_in": least["wall_in"], "cpu_in": least["cpu_in"],
                     "wall_all": least["wall"] - least["bare_wall"],
                     "cpu_all": least["cpu"] - least["bare_cpu"]}  # fmt: skip

    def snapshot(self) -> dict[str, float]:
        kinds = ("wall", "cpu", "n", "nested")
        out = {f"{k}:{p}": v[i] for p, v in self.acc.items() for i, k in enumerate(kinds)}
        out.update({f"gc{g}": float(c) for g, c in enumerate(self.collections)})
        return out | self.bias

    @contextmanager
    def installed(self) -> Iterator[None]:
        saved = []
        for owner, name, stage in _targets(self.detail):
            saved.append((owner, name, owner.__dict__.get(name)))  # None: inherited
            setattr(owner, name, self.wrap(getattr(owner, name), stage))
        gc.callbacks.append(self.on_gc)
        try:
            yield
        finally:
            gc.callbacks.remove(self.on_gc)
            for owner, name, fn in saved:
                if fn is None:
                    delattr(owner, name)
                else:
                    setattr(owner, name, fn)

    def watch_select(self, loop: asyncio.AbstractEventLoop) -> None:
        """Time the loop's waits in select() as idle (the loop's own selector only)."""
        sel: Any = loop._selector  # type: ignore[attr-defined]
        select = sel.select

        def timed(timeout: float | None = None) -> Any:
            self.enter("idle")
            try:
                return select(timeout)
            finally:
                self.leave()

        sel.select = timed
