"""The appointment planner's step (policy + triage, model off) and the process's memory, this
tree against a baseline commit, in the same run.

    .venv/bin/python bench/triage_step.py [--baseline b46e086] [--rounds 3] [SET.jsonl ...]

For each tree (a `git worktree` of the baseline, made and removed here, and this checkout) a
fresh Python process loads the triage model from a warm cache, then times `Policy.next` on
every step of the closed-loop scenarios (the assistant's own step times; the simulated user
and the tools are not timed) and reports the median and p95 step, and the process's peak RSS
(ru_maxrss) after the run and after loading alone. Rounds alternate baseline and current, so
machine noise falls on both; the ratios (current / baseline) are what to read.

Default sets: the project's dev, fresh and hard scenarios. Story sets with `expect.emergency`
are scored by trees that know the route only; pass sets both trees read.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SETS = (
    ROOT.parent / "shared" / "eval" / "dev-scenarios.jsonl",
    ROOT / "tests" / "data" / "fresh-scenarios.jsonl",
    ROOT / "eval" / "hard-scenarios.jsonl",
)

# Runs inside the measured tree's own interpreter process (sys.path[0] = that tree).
CHILD = r"""
import asyncio, json, resource, sys, time
from pathlib import Path
from agents.eval.scenarios import load_scenarios, run_scenarios
from agents.assistant.planner.policy import Policy
from agents.triage.lazy import LazyTriage

cache, sets = Path(sys.argv[1]), sys.argv[2:]
triage = LazyTriage(cache)
steps = []
orig = Policy.next
def timed(self, view, **kw):
    t0 = time.perf_counter()
    try:
        return orig(self, view, **kw)
    finally:
        steps.append((time.perf_counter() - t0) * 1000)
Policy.next = timed
triage.load_now()
rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
scs = [s for f in sets for s in load_scenarios(Path(f))]
asyncio.run(run_scenarios(scs, triage))
print(json.dumps({"steps": steps, "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "rss_loaded_kb": rss_loaded, "n": len(scs)}))
"""


def run_tree(tree: Path, cache: Path, sets: list[str]) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(cache), *sets],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
        capture_output=True,
        text=True,
        check=True,
    )
    d = json.loads(out.stdout.strip().splitlines()[-1])
    steps = sorted(d["steps"])
    return {
        "median_ms": statistics.median(steps),
        "p95_ms": steps[int(0.95 * (len(steps) - 1))],
        "rss_mb": d["rss_kb"] / 1024,
        "steps": len(steps),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="b46e086")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("sets", nargs="*", default=[str(p) for p in DEFAULT_SETS if p.exists()])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="healthgw-bench-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(
            ["git", "worktree", "add", "-q", "--detach", str(base), args.baseline],
            cwd=ROOT,
            check=True,
        )
        try:
            trees = {"baseline": base, "current": ROOT}
            caches = {k: Path(tmp) / f"cache-{k}" for k in trees}
            for k, tree in trees.items():  # warm each tree's model cache (training not timed)
                run_tree(tree, caches[k], args.sets[:1])
            results: dict[str, list[dict[str, float]]] = {k: [] for k in trees}
            for _ in range(args.rounds):
                for k, tree in trees.items():
                    results[k].append(run_tree(tree, caches[k], args.sets))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT)
    summary = {
        k: {m: statistics.median(r[m] for r in rs) for m in ("median_ms", "p95_ms", "rss_mb")}
        for k, rs in results.items()
    }
    for k, s in summary.items():
        print(
            f"{k:<9} step median {s['median_ms']:.2f} ms  p95 {s['p95_ms']:.2f} ms  "
            f"peak RSS {s['rss_mb']:.0f} MB  ({results[k][0]['steps']:.0f} steps x {args.rounds})"
        )
    b, c = summary["baseline"], summary["current"]
    print(
        f"ratio     step median {c['median_ms'] / b['median_ms']:.2f}  "
        f"p95 {c['p95_ms'] / b['p95_ms']:.2f}  RSS {c['rss_mb'] / b['rss_mb']:.2f}"
    )


if __name__ == "__main__":
    main()
