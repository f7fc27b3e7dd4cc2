"""How long `healthgw replay` takes for one person-day (the issue's bar: under a second),
against the monitor alone on the same readings, measured in the same run.

For each persona of the ordinary-day library (eval/days/), one generated day (about 1,400
watch readings and a few cuff or thermometer ones) is replayed through the assembled gateway
on its virtual clock (healthgw/replay/), and the same readings are fed to a bare `Monitor`
(validation, timeline, scores, alerts; no bus, store, playbooks or texts). Timed: the replay
call, not the trace's generation. Prints JSON.

    .venv/bin/python bench/replay_day.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.base.clock import ManualClock  # noqa: E402
from gateway.base.settings import Settings  # noqa: E402
from gateway.contract.topics import VitalsPayload  # noqa: E402
from gateway.contract.values import Reading  # noqa: E402
from gateway.household.model import load_household  # noqa: E402
from gateway.monitor.engine import Monitor  # noqa: E402
from healthgw.replay.days import DEFAULT_LIBRARY, _items  # noqa: E402
from healthgw.replay.run import replay  # noqa: E402
from healthgw.replay.trace import TraceReading  # noqa: E402
from simulators.days.day import trace  # noqa: E402
from simulators.days.spec import load_library  # noqa: E402


def monitor_only(items: list[object], hh_path: Path) -> float:
    hh = load_household(hh_path)
    readings = [it for it in items if isinstance(it, TraceReading)]
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock(readings[0].arrival)
        m = Monitor(hh, Settings(data_dir=Path(tmp)), clock=clock, data_dir=Path(tmp))
        t0 = time.perf_counter()
        for it in readings:
            clock.advance(max(0.0, it.arrival - clock.now()))
            p = VitalsPayload.model_validate_json(it.body)
            m.process(Reading.from_payload(it.person, it.device, p, clock.now()))
            m.tick()
        took = time.perf_counter() - t0
        m.anomaly.close()
    return took


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    lib = load_library(DEFAULT_LIBRARY)
    hh = load_household(lib.household)
    replay_s: list[float] = []
    bare_s: list[float] = []
    readings = 0
    for _ in range(args.rounds):
        for persona in lib.personas:
            lines = trace(lib, persona, days=1, seed=args.seed, tz=hh.timezone)
            items = _items(lines, hh, persona)
            readings += len(items)
            t0 = time.perf_counter()
            asyncio.run(replay(items, lib.household, hh))
            replay_s.append(time.perf_counter() - t0)
            bare_s.append(monitor_only(items, lib.household))
    out = {
        "person_days": len(replay_s),
        "readings_per_day": round(readings / len(replay_s)),
        "replay_day_s": {
            "median": round(statistics.median(replay_s), 3),
            "p95": round(sorted(replay_s)[int(0.95 * (len(replay_s) - 1))], 3),
            "max": round(max(replay_s), 3),
        },
        "monitor_only_day_s": {"median": round(statistics.median(bare_s), 3)},
        "ratio_replay_to_monitor": round(
            statistics.median(replay_s) / statistics.median(bare_s), 2
        ),
        "target_day_under_1s": max(replay_s) < 1.0,
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
