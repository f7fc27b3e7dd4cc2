"""The monitor's per-reading cost (Monitor.process) by how it gets the person's ranges, all
three measured in the same process, rounds alternating (this machine is noisy: only ratios
measured side by side mean anything).

    .venv/bin/python bench/monitor_step.py [--days 1] [--rounds 5] [--seed 7]

The household is the ordinary-day library's (eval/days/): elders, adults, a pregnant woman,
a toddler and a school child, COPD, AF on a rate-limiting drug; their generated days carry
sleep (asleep/awake), walks (active/recovering) and cuff and thermometer readings. All
persons' readings are merged in arrival order and fed to a fresh `Monitor` per variant and
round, in lockstep: each reading goes to the three monitors in turn, the order rotating, so
the machine's noise hits all three alike (`tick` after each, untimed); each `process` call is
timed. Variants (a PersonState subclass each, the rest of the monitor unchanged):

* `book`: the ranges computed once per profile and state and looked up (range_book.RangeBook,
  PersonState.ranges): what the monitor does now;
* `lru`: `ranges_for(profile, activity, asleep, wrist)` per reading, its lru_cache keyed on
  the whole profile (hashed per reading): the path before RangeBook;
* `uncached`: the ranges rebuilt for every reading (ranges_for's computation, no cache).

Also timed on its own: just the range step (one lookup per variant, 200,000 calls). Prints
JSON: per variant the median, p95 and mean µs per reading pooled over rounds, and the median
of the rounds' ratios (book / lru, book / uncached) of the mean and of the median, and the
paired saving (the same reading on the old path less on the new).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.base.clock import ManualClock  # noqa: E402
from gateway.base.settings import Settings  # noqa: E402
from gateway.contract.topics import VitalsPayload  # noqa: E402
from gateway.contract.values import Reading  # noqa: E402
from gateway.household.model import Household, load_household  # noqa: E402
from gateway.monitor.engine import Monitor  # noqa: E402
from gateway.monitor.people import PersonState  # noqa: E402
from gateway.monitor.ranges import Activity, VitalRange, ranges_for  # noqa: E402
from healthgw.replay.trace import TraceReading, parse_lines  # noqa: E402
from simulators.days.day import trace  # noqa: E402
from simulators.days.spec import load_library  # noqa: E402

LIBRARY = ROOT / "eval" / "days"
RangesFn = Callable[..., Mapping[str, VitalRange]]

_COMPUTE = ranges_for.__wrapped__  # the computation under the lru_cache


class BookState(PersonState):
    """The monitor as it is: PersonState.ranges (a RangeBook per profile)."""

    __slots__ = ()


class LruState(PersonState):
    __slots__ = ()

    def ranges(
        self, activity: Activity = "rest", asleep: bool = False, wrist: bool = False
    ) -> Mapping[str, VitalRange]:
        return ranges_for(self.profile, activity, asleep, wrist)


class UncachedState(PersonState):
    __slots__ = ()

    def ranges(
        self, activity: Activity = "rest", asleep: bool = False, wrist: bool = False
    ) -> Mapping[str, VitalRange]:
        return _COMPUTE(self.profile, activity, asleep, wrist)


VARIANTS: dict[str, type[PersonState]] = {
    "book": BookState, "lru": LruState, "uncached": UncachedState,
}  # fmt: skip


def readings(days: int, seed: int) -> tuple[Household, list[TraceReading]]:
    lib = load_library(LIBRARY)
    hh = load_household(lib.household)
    out: list[TraceReading] = []
    for persona in lib.personas:
        lines = trace(lib, persona, days=days, seed=seed, tz=hh.timezone)
        items = parse_lines(persona, [json.dumps(x) for x in lines], hh, ZoneInfo(hh.timezone))
        out += [it for it in items if isinstance(it, TraceReading)]
    out.sort(key=lambda it: it.arrival)
    return hh, out


def lockstep(hh: Household, items: list[TraceReading], shift: int) -> dict[str, list[float]]:
    """µs of each `process` call per variant: one fresh Monitor per variant, each reading fed
    to all of them in turn (the order rotating per reading), so noise hits all alike."""
    payloads = [VitalsPayload.model_validate_json(it.body) for it in items]
    names = list(VARIANTS)
    took: dict[str, list[float]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        runs: list[tuple[str, Monitor, ManualClock]] = []
        for name, cls in VARIANTS.items():
            d = Path(tmp) / name
            d.mkdir()
            clock = ManualClock(items[0].arrival)
            m = Monitor(hh, Settings(data_dir=d), clock=clock, data_dir=d)
            for st in m._people.values():
                st.__class__ = cls  # the same state, its ranges taken the variant's way
            runs.append((name, m, clock))
        gc.collect()
        pc = time.perf_counter_ns
        for i, (it, p) in enumerate(zip(items, payloads, strict=True)):
            for j in range(3):
                name, m, clock = runs[(i + j + shift) % 3]
                clock.advance(max(0.0, it.arrival - clock.now()))
                r = Reading.from_payload(it.person, it.device, p, clock.now())
                t0 = pc()
                m.process(r)
                took[name].append((pc() - t0) / 1000.0)
                m.tick()
        for _, m, _ in runs:
            m.anomaly.close()
    return took


def step_only(hh: Household, calls: int) -> dict[str, float]:
    """µs of the range step alone per variant: a person and state cycled as readings do."""
    from datetime import date

    people = [PersonState.of(p, date(2026, 10, 5)) for p in hh.persons]
    fns: dict[str, RangesFn] = {n: cls.ranges for n, cls in VARIANTS.items()}
    states: list[tuple[Activity, bool, bool]] = [
        ("rest", False, True), ("rest", True, True), ("active", False, True),
        ("rest", False, False),
    ]  # fmt: skip
    out: dict[str, float] = {}
    for name, fn in fns.items():
        n = calls // 10 if name == "uncached" else calls
        t0 = time.perf_counter()
        for i in range(n):
            a, s, w = states[(i // 60) % 4]  # a state lasts a while, as it does on a watch
            fn(people[i % len(people)], a, s, w)
        out[name] = round((time.perf_counter() - t0) / n * 1e6, 3)
    return out


def _p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[-1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=int, default=1, help="generated days per persona")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    hh, items = readings(args.days, args.seed)
    names = list(VARIANTS)
    pooled: dict[str, list[float]] = {n: [] for n in names}
    saved: dict[str, list[float]] = {"lru": [], "uncached": []}  # per reading, paired
    per_round: list[dict[str, tuple[float, float]]] = []  # (mean, median) per variant
    lockstep(hh, items[: min(2000, len(items))], 0)  # warm-up
    for k in range(args.rounds):
        got = lockstep(hh, items, k)
        for name, xs in got.items():
            pooled[name] += xs
        for name, diffs in saved.items():
            diffs += [o - b for o, b in zip(got[name], got["book"], strict=True)]
        per_round.append(
            {n: (statistics.fmean(xs), statistics.median(xs)) for n, xs in got.items()}
        )

    def ratio(a: str, b: str, i: int) -> float:
        return round(statistics.median(r[a][i] / r[b][i] for r in per_round), 4)

    out = {
        "bench": "monitor_step",
        "persons": len(hh.persons),
        "readings": len(items),
        "rounds": args.rounds,
        "us_per_reading": {
            n: {
                "median": round(statistics.median(xs), 2),
                "p95": round(_p95(xs), 2),
                "mean": round(statistics.fmean(xs), 2),
            }
            for n, xs in pooled.items()
        },
        "ratio_book_to_lru": {"mean": ratio("book", "lru", 0), "median": ratio("book", "lru", 1)},
        "ratio_book_to_uncached": {
            "mean": ratio("book", "uncached", 0),
            "median": ratio("book", "uncached", 1),
        },
        # The same reading's time on the old path less the new one (µs): median and mean.
        "saving_per_reading_us": {
            n: {"median": round(statistics.median(d), 2), "mean": round(statistics.fmean(d), 2)}
            for n, d in saved.items()
        },
        "round_means_us": {n: [round(r[n][0], 1) for r in per_round] for n in names},
        "range_step_only_us": step_only(hh, 200_000),
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
