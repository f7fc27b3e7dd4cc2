"""Where a gateway drain's time goes, per reading: `bench/ingest.py --profile` (a helper of
that benchmark, not one of its own; the clocks are in bench/_ingest_clocks.py).

The gateway's event-loop thread does everything a reading costs except the store's commits.
A timed drain wraps the functions each stage is made of (class and module attributes,
patched before `assemble()` and restored after: production code is unchanged) with clocks
that count the *exclusive* wall time (`perf_counter`) and CPU time (`thread_time`) spent in
them on the loop thread (a stage called inside another is taken out of the outer one), and
samples the threads' and the child processes' CPU clocks:

- receive: `read`, paho's `Client.loop_read` (its recv calls, the packet parse, aiomqtt's
  `Message`); `enqueue`, the forwarder and the priority queue's put with the backpressure
  check; `dequeue`, the queue's get;
- validate: `json_schema`, pydantic-core's JSON parse and schema check in one call
  (`VitalsPayload.model_validate_json`); `reading`, `Reading.from_payload`; `edge`, the rest
  of `EdgeValidator.validate` (topic, device, size, timestamp checks); `dedupe`;
- score: `Monitor.process` (`engine`); with `--profile-detail` in parts: `arrival` (device
  timeline), `plausibility`, `confirm` (wrist values agreed over their windows), `news2`
  (every NEWS2 computed), `scores` (the rest of scoring), `alerts` (alert transitions) and
  `engine` (the rest of it);
- store: `Store.add_reading` on the loop (the writer thread's CPU is reported apart);
- ack: `decide`, `AckTracker` (tickets, the pending queue, paho's `ack`); `write`, paho's
  `loop_write` (the PUBACKs' send calls);
- tsdb: `TimeSeriesWriter.add_reading` (only with an InfluxDB URL: off in the bench);
- events: the person-state and movement notes and the latency histogram (events emitted,
  rare in a drain of normal readings, are in rest);
- gc: garbage collections on the loop thread (`gc.callbacks`);
- idle: the loop waiting in `select()` (nothing readable: the broker or backpressure);
- rest: what no clock covers: the dispatcher loop and `on_message`'s routing, asyncio's
  scheduling, the bench's own counter poll and, in wall time, the loop waiting for the GIL
  (the writer thread holds it) or for a core (2 cores: broker, writer, loop).

The stages add up to the wall time of the drain, per reading (`split_us_per_reading`), and
their CPU times to the loop thread's CPU time (`split_cpu_us_per_reading`). On a shared
machine the wall split carries the time the loop was preempted, spread over the stages it
hit; the CPU split does not (`loop_off_cpu_us`: neither running nor in select; the loop's
involuntary context switches say how often it was preempted). The clocks' own cost (~1.5 us
a clocked call, calibrated before each timed drain) is taken out of the stages and shown as
`clocks`; what they still distort shows in `timed_net_to_untimed` (the timed drain less
the clocks against the untimed drains of the same run). Mode "cprofile" (`--cprofile`) is
the other view: cProfile on the loop thread, its top functions by own time (cProfile slows
Python code unevenly)."""

from __future__ import annotations

import asyncio
import cProfile
import io
import os
import pstats
import statistics
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from _ingest_clocks import PARTS, STAGES, StageClocks


def thread_cpu() -> dict[str, float]:
    """CPU seconds of each live thread of this process, by name."""
    out: dict[str, float] = {}
    for t in threading.enumerate():
        if t.ident is None:
            continue
        try:
            s = time.clock_gettime(time.pthread_getcpuclockid(t.ident))
        except OSError:
            continue
        out[t.name] = out.get(t.name, 0.0) + s
    return out


def children_cpu() -> dict[str, float]:
    """CPU seconds (user + system, 10 ms ticks) of this process's children, by command."""
    out: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path("/proc/self/task").glob("*"):
        try:
            pids = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in pids:
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[comm] = out.get(comm, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def context_switches() -> tuple[int, int]:
    """The calling thread's (voluntary, involuntary) context switches so far. Voluntary: it
    blocked (in select, or waiting for the GIL); involuntary: preempted (another process or
    thread took its core)."""
    got = {}
    for line in Path("/proc/thread-self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key.endswith("ctxt_switches"):
            got[key] = int(value)
    return got.get("voluntary_ctxt_switches", 0), got.get("nonvoluntary_ctxt_switches", 0)


class Sample:
    """Clocks read at one moment of a drain (called on the loop thread)."""

    def __init__(self, readings: int, stages: StageClocks | None) -> None:
        self.readings = readings
        self.wall = time.perf_counter()
        self.loop_cpu = time.thread_time()
        self.switches = context_switches()
        self.threads = thread_cpu()
        self.children = children_cpu()
        self.stages = stages.snapshot() if stages is not None else {}


def _us(x: float, n: int) -> float:
    return round(1e6 * x / n, 2) if n else 0.0


def _stages(
    a: dict[str, float], b: dict[str, float], wall: float, cpu: float, n: int
) -> dict[str, Any]:
    """The stages' wall and CPU time between two snapshots, less the clocks' own cost: its
    share inside each clocked interval from that part, the share outside it from the part
    the call was nested in, or from "rest"; the clocks' whole cost is shown as "clocks"."""
    d = {k: b[k] - a[k] for k in b if not k.endswith(("_in", "_all"))}
    calls = sum(d[f"n:{p}"] for p in PARTS)
    out: dict[str, Any] = {}
    for kind, total in (("wall", wall), ("cpu", cpu)):
        inside, outside = b[f"{kind}_in"], b[f"{kind}_all"] - b[f"{kind}_in"]
        parts = {p: d[f"{kind}:{p}"] - d[f"n:{p}"] * inside - d[f"nested:{p}"] * outside
                 for p in PARTS}  # fmt: skip
        stages = dict.fromkeys(STAGES, 0.0)
        for p, v in parts.items():
            stages[p.split(".")[0]] += v
        clocks = calls * b[f"{kind}_all"]
        stages["rest"] = total - clocks - sum(stages.values())
        key = "" if kind == "wall" else "_cpu"
        out[f"stages{key}_us"] = {s: _us(v, n) for s, v in stages.items()} | {
            "clocks": _us(clocks, n)
        }
        out[f"parts{key}_us"] = {p: _us(v, n) for p, v in parts.items() if "." in p and d[f"n:{p}"]}
    out["clocked_calls_per_reading"] = round(calls / n, 2)
    out["gc_per_1000_readings"] = [round(1000 * d[f"gc{g}"] / n, 2) for g in range(3)]
    return out


def split(a: Sample, b: Sample, stored: Sample) -> dict[str, Any]:
    """Per reading, between samples a and b (the writer's and children's up to `stored`)."""
    n = b.readings - a.readings
    wall = b.wall - a.wall
    out: dict[str, Any] = {"readings": n, "wall_us": _us(wall, n)}
    if a.stages:
        out.update(_stages(a.stages, b.stages, wall, b.loop_cpu - a.loop_cpu, n))
    out["loop_cpu_us"] = _us(b.loop_cpu - a.loop_cpu, n)
    # The loop thread neither running nor in select(): waiting for the GIL or for a core.
    idle = out.get("stages_us", {}).get("idle", 0.0)
    out["loop_off_cpu_us"] = round(out["wall_us"] - out["loop_cpu_us"] - idle, 2)
    out["loop_switches_per_1000"] = [
        round(1000 * (y - x) / n, 1) for x, y in zip(a.switches, b.switches, strict=True)
    ]
    threads = {
        k: stored.threads[k] - a.threads.get(k, 0.0)
        for k in stored.threads
        if k != "MainThread" and stored.threads[k] - a.threads.get(k, 0.0) > 0
    }
    out["writer_cpu_us"] = _us(threads.pop("store-writer", 0.0), n)
    out["other_threads_cpu_us"] = {k: _us(v, n) for k, v in sorted(threads.items())}
    out["children_cpu_us"] = {
        k: _us(stored.children[k] - a.children.get(k, 0.0), n) for k in sorted(stored.children)
    }
    return out


def cprofile_top(prof: cProfile.Profile, n: int, top: int = 25) -> list[dict[str, Any]]:
    """The loop thread's functions by own time, us per reading (cProfile's overhead in)."""
    st = pstats.Stats(prof, stream=io.StringIO())
    rows = []
    for (path, line, func), (_cc, calls, tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        rows.append(
            {
                "function": f"{Path(path).name}:{line}({func})",
                "calls_per_reading": round(calls / n, 2),
                "own_us": _us(tt, n),
                "cumulative_us": _us(ct, n),
            }
        )
    rows.sort(key=lambda r: -float(r["own_us"]))
    return rows[:top]


async def drain(
    start: Callable[..., Any], settings: Any, n: int, *, mode: str = "plain"
) -> tuple[float, float, dict[str, Any], dict[str, Any]]:
    """One gateway drain of n readings, timed from the first reading handled to the last;
    mode "plain" (CPU clocks only), "stages" (the clocks above), "detail" (and the monitor's
    steps) or "cprofile". Returns
    (readings/s, readings/s until the store committed all, the gateway's stats, the split)."""
    clocks = StageClocks(detail=mode == "detail") if mode in ("stages", "detail") else None
    prof = cProfile.Profile() if mode == "cprofile" else None

    async def watch(gw: Any) -> tuple[Sample, Sample, Sample]:
        counters, store = gw.counters, gw.store
        if clocks is not None:
            clocks.loop_ident = threading.get_ident()
            clocks.watch_select(asyncio.get_running_loop())
        deadline = time.monotonic() + 300
        while not counters["readings"]:
            await asyncio.sleep(0.001)
            if time.monotonic() > deadline:
                raise RuntimeError("the gateway processed no reading")
        a = Sample(counters["readings"], clocks)
        if prof is not None:
            prof.enable()
        while counters["readings"] < n:
            await asyncio.sleep(0.005)
            if time.monotonic() > deadline:
                raise RuntimeError(f"the gateway processed only {counters['readings']} of {n}")
        if prof is not None:
            prof.disable()
        b = Sample(counters["readings"], clocks)
        while store.stats().get("written", 0) < n and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.005)  # (polled: the store has no event to wait on)
        return a, b, Sample(counters["readings"], clocks)

    if clocks is not None:
        clocks.calibrate()
    with clocks.installed() if clocks is not None else nullcontext():
        gw, watcher = await start(settings, watch)
        a, b, stored = await watcher
        stats = gw.stats()
        await gw.stop()
    result = split(a, b, stored)
    if prof is not None:
        result["cprofile_top"] = cprofile_top(prof, b.readings - a.readings)
    n_timed = b.readings - a.readings
    return n_timed / (b.wall - a.wall), n_timed / (stored.wall - a.wall), stats, result


def summarize(runs: list[dict[str, Any]], rates: dict[str, float]) -> dict[str, Any]:
    """Medians over the timed drains, with the same run's bare clients for scale."""

    def med(values: list[float]) -> float:
        return round(statistics.median(values), 2) if values else 0.0

    timed = [r for r in runs if "stages_us" in r]
    plain = [r for r in runs if "stages_us" not in r and "cprofile_top" not in r]
    out: dict[str, Any] = {}
    if timed:
        keys = (*STAGES, "clocks")
        wall = {s: med([r["stages_us"][s] for r in timed]) for s in keys}
        cpu = {s: med([r["stages_cpu_us"][s] for r in timed]) for s in keys}
        total = med([r["wall_us"] for r in timed])
        net, net_cpu = total - wall["clocks"], sum(cpu[s] for s in STAGES)
        out["split_us_per_reading"] = wall
        out["split_share"] = {s: round(wall[s] / net, 3) if net else 0.0 for s in STAGES}
        out["timed_total_us"] = total
        out["timed_net_us"] = round(net, 2)  # less the clocks: compare with the untimed drains
        seen = [p for p in PARTS if any(p in r["parts_us"] for r in timed)]
        for key in ("", "_cpu"):
            out[f"parts{key}_us_per_reading"] = {
                p: med([r[f"parts{key}_us"].get(p, 0.0) for r in timed]) for p in seen
            }
        out["split_cpu_us_per_reading"] = cpu
        out["split_cpu_share"] = {s: round(cpu[s] / net_cpu, 3) if net_cpu else 0.0
                                  for s in STAGES}  # fmt: skip
        out["clocked_calls_per_reading"] = med([r["clocked_calls_per_reading"] for r in timed])
        out["gc_per_1000_readings"] = [
            med([r["gc_per_1000_readings"][g] for r in timed]) for g in range(3)
        ]
        out["timed_runs_us"] = [r["stages_us"] for r in timed]  # each drain's, for the spread
    out["loop_cpu_us"] = med([r["loop_cpu_us"] for r in plain or timed])
    if timed:  # (the untimed drains cannot tell idle from waiting)
        out["loop_off_cpu_us"] = med([r["loop_off_cpu_us"] for r in timed])
    out["loop_switches_per_1000"] = [
        med([r["loop_switches_per_1000"][i] for r in plain or timed]) for i in range(2)
    ]
    out["writer_cpu_us"] = med([r["writer_cpu_us"] for r in plain or timed])
    broker = [r["children_cpu_us"].get("mosquitto", 0.0) for r in plain or timed]
    out["broker_cpu_us"] = med(broker)
    out["us_per_message"] = {k: round(1e6 / v, 2) for k, v in rates.items() if v}
    if timed and rates.get("gateway"):
        # The timed drain against the untimed ones: with the clocks (>1: they slowed it) and
        # less their calibrated cost (~1 when the calibration holds; noise moves both).
        untimed = out["us_per_message"]["gateway"]
        out["clock_overhead"] = round(out["timed_total_us"] / untimed, 3)
        out["timed_net_to_untimed"] = round(out["timed_net_us"] / untimed, 3)
    profiled = [r for r in runs if "cprofile_top" in r]
    if profiled:
        out["cprofile_top"] = profiled[-1]["cprofile_top"]
    return out
