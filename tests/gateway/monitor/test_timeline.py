"""Late data and device clocks: a sync burst is late, a skewed clock streaming in real time is
live (and reported once), and a device whose clock recovers is judged normally again."""

from __future__ import annotations

import pytest

from gateway.monitor.timeline import Timeline

T0 = 1_790_000_000.0


def test_fresh_readings_are_live() -> None:
    tl = Timeline(600)
    for i in range(10):
        t = tl.judge("p", "w", T0 + 5 * i, T0 + 5 * i + 1)
        assert not t.late and t.skew_detected is None


def test_a_sync_burst_of_old_readings_is_late_except_the_recent_ones() -> None:
    tl = Timeline(600)
    for i in range(5):
        assert not tl.judge("p", "w", T0 + 60 * i, T0 + 60 * i).late
    now = T0 + 86_400
    lates = [tl.judge("p", "w", now - 7200 + 60 * i, now + 0.01 * i).late for i in range(120)]
    # Older than 10 minutes: late; the last 10 minutes of the burst: live.
    assert lates[:110] == [True] * 110 and not any(lates[111:])


def test_a_skewed_clock_streaming_in_real_time_is_live_and_reported_once() -> None:
    tl = Timeline(600)
    skew = 1800.0  # the watch's clock is 30 minutes slow
    seen = []
    for i in range(10):
        t = tl.judge("p", "w", T0 + 5 * i - skew, T0 + 5 * i)
        seen.append((t.late, t.skew_detected))
    assert [late for late, _ in seen[:3]] == [True, True, True]  # not yet recognised
    assert not any(late for late, _ in seen[3:])
    assert [s for _, s in seen if s is not None] == [skew]
    # ...and a burst from that device after an outage is still late against its own clock.
    now = T0 + 50_000
    assert tl.judge("p", "w", now - skew - 7200, now).late


def test_out_of_order_readings_do_not_count_as_a_real_time_stream() -> None:
    tl = Timeline(600)
    for i in range(6):
        assert tl.judge("p", "w", T0 - 5000 - 5 * i, T0 + 5 * i).late


def test_a_clock_that_jumps_back_is_recognised_after_three_readings() -> None:
    tl = Timeline(600)
    for i in range(5):
        assert not tl.judge("p", "w", T0 + 5 * i, T0 + 5 * i).late
    # The watch's clock jumps 30 minutes back and keeps streaming in real time.
    late = [tl.judge("p", "w", T0 + 25 + 5 * i - 1800, T0 + 25 + 5 * i).late for i in range(6)]
    assert late[:3] == [True, True, True] and not any(late[4:])


# --- a sync burst is never a skewed clock, whatever its interval (issue 24) -----------------

INTERVALS = (1.0, 5.0, 60.0)


@pytest.mark.parametrize("interval", INTERVALS)
def test_five_hours_synced_at_once_is_late_at_any_interval(interval: float) -> None:
    tl = Timeline(600)
    now = T0 + 100_000
    span = 5 * 3600
    n = int(span // interval)
    # The whole burst arrives within a few seconds (sent as fast as the link allows).
    results = [tl.judge("p", "w", now - span + i * interval, now + i * 0.001) for i in range(n)]
    assert all(r.skew_detected is None for r in results)
    old = [r.late for r, i in zip(results, range(n), strict=True) if span - i * interval > 700]
    assert old and all(old)


@pytest.mark.parametrize("interval", INTERVALS)
def test_a_slow_upload_of_old_readings_is_still_late(interval: float) -> None:
    """A sync that trickles in faster than real time (several readings a second) shrinks its
    offset step by step: never a steady clock skew."""
    tl = Timeline(600)
    now = T0 + 100_000
    results = [tl.judge("p", "w", now - 18_000 + i * interval, now + i * 0.3 * interval)
               for i in range(300)]  # fmt: skip
    assert all(r.late for r in results) and all(r.skew_detected is None for r in results)


@pytest.mark.parametrize("interval", INTERVALS)
def test_a_skewed_clock_in_real_time_is_recognised_at_any_interval(interval: float) -> None:
    tl = Timeline(600)
    skew = 3 * 3600.0
    seen = []
    for i in range(40 if interval < 60 else 8):
        jitter = min(0.1 * interval, 2.0) * (1 if i % 2 else -1)  # arrival wobbles a little
        seen.append(tl.judge("p", "w", T0 + i * interval - skew, T0 + i * interval + jitter))
    reported = [r.skew_detected for r in seen if r.skew_detected is not None]
    assert len(reported) == 1 and abs(reported[0] - skew) < interval
    first_live = next(i for i, r in enumerate(seen) if not r.late)
    # Three steps of keeping pace, then live for good.
    assert first_live == 3 and not any(r.late for r in seen[first_live:])
