"""Late data and device clocks: a sync burst is late, a skewed clock streaming in real time is
live (and reported once), and a device whose clock recovers is judged normally again."""

from __future__ import annotations

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
