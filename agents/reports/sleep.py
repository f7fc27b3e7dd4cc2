"""The day's sleep from what watches send. A reading's `sleep` (the contract's Sleep) is the
minutes spent in each stage since that watch's previous reading; the report wants nights:
runs of readings with minutes asleep, a silence or a waking stretch longer than
SESSION_BREAK_S ending one. A night belongs to the day it ends on ("last night's sleep" is
in the morning's day), so a night from 23:00 to 06:30 counts once, on the second day."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

ASLEEP = ("deep", "light", "rem")
STAGES = (*ASLEEP, "awake")
# Longer than this without minutes asleep (awake, or the watch silent): a new session.
SESSION_BREAK_S = 30 * 60.0


def _minutes(stages: Mapping[str, Any], key: str) -> float:
    v = stages.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
        return 0.0
    return float(v)


def sleep_sessions(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """[{start, end, minutes, stages}] (epoch s; `minutes` asleep; `stages` the minutes per
    stage, awake included) from readings in time order with a `sleep` dict."""
    sessions: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    waking = 0.0  # awake minutes since the last minute asleep: the night's only if sleep resumes
    for r in rows:
        stages, ts = r.get("sleep"), r.get("ts")
        if not isinstance(stages, Mapping) or not isinstance(ts, int | float):
            continue
        asleep = sum(_minutes(stages, k) for k in ASLEEP)
        if asleep <= 0:
            waking += _minutes(stages, "awake")
            continue
        began = float(ts) - asleep * 60.0
        if cur is None or began - cur["end"] > SESSION_BREAK_S:
            cur = {"start": began, "end": float(ts), "minutes": 0.0,
                   "stages": dict.fromkeys(STAGES, 0.0)}  # fmt: skip
            sessions.append(cur)
        else:
            cur["stages"]["awake"] += waking
        waking = 0.0
        cur["end"] = float(ts)
        cur["minutes"] += asleep
        for k in STAGES:
            cur["stages"][k] += _minutes(stages, k)
    return sessions


def sessions_ending_in(
    sessions: Iterable[dict[str, Any]], start: float, end: float
) -> list[dict[str, Any]]:
    """The sessions that belong to the day [start, end): those that end in it."""
    return [s for s in sessions if start <= float(s["end"]) < end]


def summarise_sleep(
    sessions: Iterable[Mapping[str, Any]],
    iso: Callable[[float], str],
    rnd: Callable[[float, int], float],
) -> dict[str, Any]:
    """The report's sleep: sessions as given ({start, end} epoch s, optional quality), or as
    `sleep_sessions` makes them (with `minutes` asleep and `stages`: those are counted, not
    the clock time from start to end, which includes minutes awake)."""
    rows = []
    total = 0.0
    stages: dict[str, float] = {}
    for s in sorted(sessions, key=lambda s: float(s["start"])):
        a, b = float(s["start"]), float(s["end"])
        minutes = float(s["minutes"]) if "minutes" in s else max(0.0, b - a) / 60.0
        total += minutes
        row: dict[str, Any] = {"start": iso(a), "end": iso(b), "minutes": rnd(minutes, 1)}
        q = s.get("quality")
        if isinstance(q, int | float) and not isinstance(q, bool) and not math.isnan(q):
            row["quality"] = rnd(float(q), 3)
        for k, v in (s.get("stages") or {}).items():
            stages[k] = stages.get(k, 0.0) + float(v)
        rows.append(row)
    out: dict[str, Any] = {"total_minutes": rnd(total, 1), "sessions": rows}
    if stages:
        out["stages"] = {k: rnd(v, 1) for k, v in stages.items()}
    return out
