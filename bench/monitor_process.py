"""The monitor's per-reading cost (Monitor.process) against another checkout, same run.

    .venv/bin/python bench/monitor_process.py --baseline-tree /tmp/old [--readings 30000] [--rounds 5]

Make the baseline tree with `git worktree add /tmp/old <commit>`. Each round runs the same
seeded workload (200 people, one watch each, whole-number vitals in their normal ranges, a
few steps) in a fresh process for the baseline tree and then for this one, alternating, so
machine noise hits both. Only `process` is timed, not the reading generation. Prints JSON
with µs per reading for each and the median ratio (this / baseline).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WORKLOAD = r"""
import json, random, sys, tempfile, time
from pathlib import Path
from gateway.base.clock import ManualClock
from gateway.household.model import load_household
from gateway.contract.values import Reading
from gateway.monitor.engine import Monitor
from gateway.base.settings import Settings
from simulators.fleet import make_household
random.seed(1)
n = int(sys.argv[1])
d = Path(tempfile.mkdtemp())
make_household(200, d / "hh.yaml")
hh = load_household(d / "hh.yaml")
clock = ManualClock(time.time())
m = Monitor(hh, Settings(data_dir=d), clock=clock, data_dir=d)
pairs = [(p.id, p.devices[0].id) for p in hh.persons]
t = clock.now()
rs = [Reading(pairs[i % 200][0], pairs[i % 200][1], t + i * 0.05, seq=i,
              heart_rate=float(random.randint(65, 80)), spo2=float(random.randint(96, 99)),
              respiratory_rate=16.0, steps=3, received_at=t + i * 0.05) for i in range(n)]
t0 = time.perf_counter()
for r in rs:
    clock._now = r.ts
    m.process(r)
print(json.dumps({"us_per_reading": (time.perf_counter() - t0) / n * 1e6}))
"""


def run(tree: Path, readings: int) -> float:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run(
        [sys.executable, "-c", WORKLOAD, str(readings)],
        cwd=tree, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(json.loads(out.stdout.strip().splitlines()[-1])["us_per_reading"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline-tree", type=Path, required=True)
    ap.add_argument("--readings", type=int, default=30_000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    base, this = [], []
    for _ in range(a.rounds):
        base.append(run(a.baseline_tree, a.readings))
        this.append(run(ROOT, a.readings))
    b, t = statistics.median(base), statistics.median(this)
    print(json.dumps({
        "bench": "monitor_process", "readings": a.readings, "rounds": a.rounds,
        "baseline_tree": str(a.baseline_tree), "baseline_us": [round(x, 1) for x in base],
        "this_us": [round(x, 1) for x in this], "median_baseline_us": round(b, 1),
        "median_this_us": round(t, 1), "ratio_this_to_baseline": round(t / b, 3),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
