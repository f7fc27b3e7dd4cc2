"""The one backoff: how long to wait before the next try, after `n` failed ones.

`Backoff` is a frozen schedule, either explicit steps (the last one repeats) or exponential
(`base * factor**n`), both at most `cap`; optional jitter draws each delay from
[delay x (1 - jitter), delay] with an injectable random source, so the cap stays a cap and a
seeded source makes it reproducible. `Retry` is the one mutable part, a loop's count of
failures: `next()` gives the delay and counts one more, `ok()` starts again, and
`ran(seconds)` starts again after a run of `reset_after_s` (a connection or a component that
stayed up that long has recovered; one that dies at once keeps backing off).

Loops that keep their failure count elsewhere (a database row, a window of deaths) ask
`delay(n)` directly."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

__all__ = ["Backoff", "Retry"]


@dataclass(frozen=True, slots=True)
class Backoff:
    steps: tuple[float, ...] = ()  # explicit delays; empty: exponential from `base`
    base: float = 0.0
    factor: float = 2.0
    cap: float = math.inf
    jitter: float = 0.0  # 0: exact; 0.5: each delay drawn from [delay / 2, delay]
    reset_after_s: float | None = None  # a run this long starts the schedule again (Retry)
    rand: Callable[[], float] = field(default=random.random, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(float(s) for s in self.steps))
        if not self.steps and self.base <= 0:
            raise ValueError("a backoff needs steps or a positive base")
        if any(s < 0 for s in self.steps) or self.factor < 1 or self.cap < 0:
            raise ValueError("delays must be >= 0 and the factor >= 1")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter is a fraction in [0, 1]")

    @classmethod
    def of(
        cls, schedule: Backoff | Sequence[float], *, reset_after_s: float | None = None
    ) -> Backoff:
        """`schedule` as a Backoff (steps given as a sequence), with `reset_after_s` if given."""
        b = schedule if isinstance(schedule, Backoff) else cls(tuple(schedule))
        return b if reset_after_s is None else replace(b, reset_after_s=reset_after_s)

    def delay(self, n: int) -> float:
        """The wait after `n` earlier failures (n = 0: before the first retry)."""
        n = max(n, 0)
        if self.steps:
            d = self.steps[min(n, len(self.steps) - 1)]
        else:
            try:
                d = self.base * self.factor ** min(n, 1100)
            except OverflowError:
                d = math.inf
        d = min(d, self.cap)
        if self.jitter:
            d *= 1.0 - self.jitter * self.rand()
        return d

    def retry(self) -> Retry:
        """A fresh count of failures on this schedule."""
        return Retry(self)


@dataclass(slots=True)
class Retry:
    """One loop's failures on a Backoff (not thread-safe: one owner)."""

    backoff: Backoff
    failures: int = 0

    def next(self) -> float:
        """The delay before the next try; counts this failure."""
        d = self.backoff.delay(self.failures)
        self.failures += 1
        return d

    def ok(self) -> None:
        """A success: the next failure waits the first delay again."""
        self.failures = 0

    def ran(self, seconds: float) -> None:
        """A run of `seconds` ended: starts again if it lasted `reset_after_s`."""
        limit = self.backoff.reset_after_s
        if limit is not None and seconds >= limit:
            self.failures = 0
