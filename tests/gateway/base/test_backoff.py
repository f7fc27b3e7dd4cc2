"""The one backoff (gateway/base/backoff.py): steps, exponential growth, the cap, jitter
within its bounds (seeded), and the reset after a stable run."""

from __future__ import annotations

import math
import random

import pytest

from gateway.base.backoff import Backoff, Retry


def test_steps_repeat_the_last_one() -> None:
    b = Backoff((0.25, 0.5, 1, 2))
    assert [b.delay(n) for n in range(7)] == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0, 2.0]
    assert b.delay(-3) == 0.25  # never before the first step
    assert b.steps == (0.25, 0.5, 1.0, 2.0)  # stored as floats, frozen
    with pytest.raises(AttributeError):
        b.cap = 1.0  # type: ignore[misc]


def test_exponential_grows_by_its_factor_up_to_the_cap() -> None:
    b = Backoff(base=0.05, factor=2, cap=2.0)
    assert [b.delay(n) for n in range(8)] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]
    assert b.delay(10_000) == 2.0  # no overflow however long it fails
    assert Backoff(base=1.0).delay(5000) == math.inf  # uncapped: grows without bound
    assert Backoff(base=1.5, factor=3).delay(2) == 13.5


def test_the_cap_applies_to_steps_too() -> None:
    assert [Backoff((1, 5, 30), cap=10).delay(n) for n in range(4)] == [1.0, 5.0, 10.0, 10.0]


def test_jitter_stays_within_its_bounds_and_is_reproducible_when_seeded() -> None:
    def draws(seed: int) -> list[float]:
        b = Backoff(base=1.0, factor=2, cap=8, jitter=0.5, rand=random.Random(seed).random)
        return [b.delay(n) for n in range(200)]

    first = draws(7)
    assert first == draws(7)  # the same seed, the same delays
    assert first != draws(8)
    for n, d in enumerate(first):
        full = min(2.0**n, 8.0)
        assert full * 0.5 <= d <= full  # never above the schedule (or its cap)
    assert len({round(d, 9) for d in first[10:]}) > 100  # actually spread out


def test_jitter_extremes_with_a_fixed_source() -> None:
    assert Backoff((4,), jitter=0.25, rand=lambda: 0.0).delay(0) == 4.0
    assert Backoff((4,), jitter=0.25, rand=lambda: 1.0).delay(0) == 3.0
    assert Backoff((4,), jitter=1.0, rand=lambda: 1.0).delay(0) == 0.0


def test_invalid_schedules_are_refused() -> None:
    for bad in (
        lambda: Backoff(),
        lambda: Backoff(()),
        lambda: Backoff((1, -1)),
        lambda: Backoff(base=1, factor=0.5),
        lambda: Backoff((1,), jitter=1.5),
        lambda: Backoff((1,), cap=-1),
    ):
        with pytest.raises(ValueError):
            bad()


def test_retry_counts_failures_and_starts_again_on_success() -> None:
    r = Backoff((0.5, 1, 2, 5, 10, 15)).retry()
    assert [r.next() for _ in range(8)] == [0.5, 1, 2, 5, 10, 15, 15, 15]
    assert r.failures == 8
    r.ok()
    assert r.next() == 0.5 and r.next() == 1.0


def test_retry_resets_only_after_a_stable_run() -> None:
    r = Retry(Backoff((0.25, 0.5, 1, 2), reset_after_s=30.0))
    assert [r.next() for _ in range(3)] == [0.25, 0.5, 1.0]
    r.ran(29.9)  # died too soon: keeps backing off
    assert r.next() == 2.0
    r.ran(30.0)  # stayed up long enough: recovered
    assert r.next() == 0.25
    assert Retry(Backoff((1,))).backoff.reset_after_s is None
    no_rule = Backoff((1, 2)).retry()
    no_rule.next()
    no_rule.ran(10_000)  # no reset rule: only ok() starts again
    assert no_rule.next() == 2.0


def test_of_takes_steps_or_a_backoff() -> None:
    b = Backoff.of([1, 2, 5])
    assert b == Backoff((1.0, 2.0, 5.0))
    assert Backoff.of(b) is b
    stable = Backoff.of(b, reset_after_s=60.0)
    assert stable.reset_after_s == 60.0 and stable.steps == b.steps and b.reset_after_s is None
