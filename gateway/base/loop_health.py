"""Health of a loop that must keep ticking: the SOS ladder, prompt deadlines, the retained
person state, medication reminders.

Such a loop catches a failing tick and tries again on its next one (a transient database or
broker error must not end it), so "the task is alive" says nothing about whether it works.
`TickHealth` counts consecutive failures; after `limit` in a row `healthy()` is False, and
the owner's `alive()` (task running and healthy) is what a supervisor watch checks: the part
shows down in /readyz and stats, and a `component_failed` event goes out. The first
successful tick makes it healthy again. Failures are logged as the exception's class and
code location only (supervise.describe): a message may quote a name, a phone or a reading.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from gateway.base.supervise import describe

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 3
_LOG_EVERY_S = 60.0  # a tick failing every 250 ms must not flood the log


class TickHealth:
    def __init__(self, name: str, *, limit: int = DEFAULT_LIMIT) -> None:
        self.name = name
        self.limit = limit
        self.consecutive = 0
        self.failures = 0
        self._logged_at = 0.0

    def ok(self) -> None:
        if self.consecutive >= self.limit:
            log.warning("%s: ticks succeed again after %d failures", self.name, self.consecutive)
        self.consecutive = 0

    def failed(self, exc: BaseException) -> None:
        self.consecutive += 1
        self.failures += 1
        now = time.monotonic()
        if self.consecutive <= self.limit or now - self._logged_at >= _LOG_EVERY_S:
            self._logged_at = now
            log.error(
                "%s: tick failed (%d in a row): %s", self.name, self.consecutive, describe(exc)
            )

    def healthy(self) -> bool:
        return self.consecutive < self.limit

    def as_dict(self) -> dict[str, Any]:
        return {"consecutive_failures": self.consecutive, "tick_failures": self.failures}


async def run_ticks(
    tick: Callable[[], Awaitable[None]], health: TickHealth, interval: Callable[[], float]
) -> None:
    """`await tick()` every `interval()` seconds until cancelled; each failure is counted
    and logged by `health`, and the next tick retries."""
    while True:
        try:
            await tick()
        except Exception as exc:
            health.failed(exc)
        else:
            health.ok()
        await asyncio.sleep(interval())
