"""A reading's walk through `Monitor.process`: how many stays in how many files, and how many
of those stays return to a file already left (issue 27 measured 62 stays in 21 files, 41
returns, for one reading). Counted with sys.setprofile over Python calls and returns in the
repository's own files; a stay is a run of consecutive events in one file.

    .venv/bin/python bench/reading_walk.py [--warm 2000] [--take 200]

Runs on this tree and, by module path fallbacks, on a checkout from before the packages
(PYTHONPATH=<worktree> .venv/bin/python <worktree-or-this>/bench/reading_walk.py), so a
before/after pair is measured with one script. The household and readings are the
ordinary-day library's (eval/days/): the first `--warm` readings settle the monitor, the
next `--take` are walked; medians per persona kind (child, pregnant, adult) are printed as
JSON."""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import tempfile
from datetime import date
from pathlib import Path
from types import FrameType
from typing import Any
from zoneinfo import ZoneInfo


def _first(*names: str) -> Any:
    # The old path first: an editable install resolves the new one from any checkout.
    for name in names:
        module, _, attr = name.rpartition(".")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            continue
    raise ImportError(names)


def walk(fn: Any, repo: str) -> tuple[int, int, int]:
    """(stays, files, returns to a file already left) while `fn()` runs."""
    stays: list[str] = []

    def prof(frame: FrameType, event: str, _arg: Any) -> None:
        if event not in ("call", "return"):
            return
        f = frame.f_code.co_filename
        if not f.startswith(repo) or "/.venv/" in f:
            return
        if not stays or stays[-1] != f:
            stays.append(f)

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    seen: set[str] = set()
    returns = 0
    for f in stays:
        returns += f in seen
        seen.add(f)
    return len(stays), len(seen), returns


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warm", type=int, default=2000)
    ap.add_argument("--take", type=int, default=200)
    a = ap.parse_args()
    import gateway

    repo = str(Path(gateway.__file__).resolve().parents[1]) + "/"
    ManualClock = _first("gateway.clock.ManualClock", "gateway.base.clock.ManualClock")
    Settings = _first("gateway.settings.Settings", "gateway.base.settings.Settings")
    VitalsPayload = _first(
        "gateway.contract.VitalsPayload", "gateway.contract.topics.VitalsPayload"
    )
    Reading = _first("gateway.model.Reading", "gateway.contract.values.Reading")
    load_household = _first("gateway.household.load_household",
                            "gateway.household.model.load_household")  # fmt: skip
    Monitor = _first("gateway.monitor.engine.Monitor")
    parse_lines = _first("healthgw.replay.trace.parse_lines")
    TraceReading = _first("healthgw.replay.trace.TraceReading")
    trace = _first("simulators.days.day.trace")
    load_library = _first("simulators.days.spec.load_library")

    lib = load_library(Path(repo) / "eval" / "days")
    hh = load_household(lib.household)
    items: list[Any] = []
    for persona in lib.personas:
        lines = trace(lib, persona, days=1, seed=7, tz=hh.timezone)
        got = parse_lines(persona, [json.dumps(x) for x in lines], hh, ZoneInfo(hh.timezone))
        items += [it for it in got if isinstance(it, TraceReading)]
    items.sort(key=lambda it: it.arrival)
    kind = {}
    for p in hh.persons:
        age = p.age_on(date.fromtimestamp(items[0].arrival))
        preg = "pregnancy" in getattr(p, "conditions", ())
        kind[p.id] = "pregnant" if preg else ("child" if age is not None and age < 16 else "adult")
    by_kind: dict[str, list[tuple[int, int, int]]] = {}
    with tempfile.TemporaryDirectory() as d:
        clock = ManualClock(items[0].arrival)
        m = Monitor(hh, Settings(data_dir=Path(d)), clock=clock, data_dir=Path(d))
        for i, it in enumerate(items[: a.warm + a.take]):
            clock.advance(max(0.0, it.arrival - clock.now()))
            r = Reading.from_payload(it.person, it.device, VitalsPayload.model_validate_json(it.body),
                                     clock.now())  # fmt: skip
            if i < a.warm:
                m.process(r)
            else:
                by_kind.setdefault(kind.get(it.person, "adult"), []).append(
                    walk(lambda r=r: m.process(r), repo)
                )
            m.tick()
        m.anomaly.close()
    out = {
        k: {
            "readings": len(v),
            "stays": statistics.median(s for s, _, _ in v),
            "files": statistics.median(f for _, f, _ in v),
            "returns": statistics.median(x for _, _, x in v),
        }
        for k, v in sorted(by_kind.items())
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
