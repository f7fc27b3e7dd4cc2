"""Refitting each person's isolation forest on their clean stored history, with the same
features as scoring (steps become a per-minute cadence)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from gateway.contract.topics import NUMERIC_VITALS
from gateway.monitor.anomaly import AnomalyService

log = logging.getLogger(__name__)
History = Callable[..., list[dict[str, Any]]]


def training_row(
    row: Mapping[str, Any], intervals: Mapping[tuple[str, str], float], default_s: float
) -> dict[str, Any]:
    out = {v: row.get(v) for v in NUMERIC_VITALS}
    steps = row.get("steps")
    interval = intervals.get((row.get("person", ""), row.get("device", ""))) or default_s
    out["steps_per_min"] = steps * 60.0 / interval if steps is not None else None
    return out


async def refit_all(
    anomaly: AnomalyService,
    persons: list[str],
    history: History,
    intervals: Mapping[tuple[str, str], float],
    default_s: float,
) -> None:
    """Off the loop (history reads on a thread) and off-process (the fits)."""

    async def provider() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
        for person in persons:
            rows = await asyncio.to_thread(history, person, limit=5000)
            yield person, [training_row(row, intervals, default_s) for row in rows]

    report = await anomaly.refit_all(provider)
    log.info(
        "anomaly refit: %d fitted, %d with too little history, %d failed",
        report.fitted,
        report.too_little_history,
        report.failed,
    )
