"""The backlog probe's decision (shed only when falling behind live input) and the read gate
(pause at `high`, resume at `low`), on a virtual clock; the link-level behaviour is in
tests/gateway/mqtt/test_link.py, tests/gateway/mqtt/test_acks.py and tests/faults/test_backlog_drain.py."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from gateway.mqtt.backlog import CAUGHT_UP_S, BacklogProbe, ReadGate


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def probe(shed_after_s: float = 5.0) -> tuple[BacklogProbe, Clock, list[bytes]]:
    clock, sent = Clock(), []

    def publish(_topic: str, payload: bytes) -> bool:
        sent.append(payload)
        return True

    return (
        BacklogProbe("gateway/x/probe", publish, shed_after_s=shed_after_s, clock=clock),
        clock,
        sent,
    )


def test_a_draining_backlog_never_sheds_however_late_its_first_probe() -> None:
    """A hub back from an outage: probes sent each second all arrive once the 60 s backlog
    is through, each having waited less than the one before."""
    p, clock, sent = probe(shed_after_s=5.0)
    for _ in range(60):
        p.send()
        clock.t += 1.0
    for payload in list(sent):  # the backlog ends: they arrive 1 ms apart
        p.received(payload)
        clock.t += 0.001
    assert p.received_count == 60 and not p.shedding and p.episodes == 0


def test_live_input_faster_than_the_gateway_sheds_once_behind_the_bound() -> None:
    """Each probe waits 0.5 s longer than the one sent a second before it (input at twice
    the gateway's pace): shedding starts once a wait passes the bound, not before."""
    p, clock, sent = probe(shed_after_s=5.0)
    arrivals = []
    for i in range(40):
        p.send()
        arrivals.append((clock.t + 0.5 * i, sent[-1]))
        clock.t += 1.0
    for at, payload in sorted(arrivals):
        clock.t = at
        p.received(payload)
        if p.shedding:
            break
    assert p.shedding and p.episodes == 1
    assert p.last_wait_s >= 5.0


def test_shedding_stops_once_a_probe_comes_back_quickly() -> None:
    p, clock, sent = probe()
    p.shedding = True
    p.send()
    clock.t += CAUGHT_UP_S + 1
    p.received(sent[-1])
    assert p.shedding  # still behind
    p.send()
    clock.t += CAUGHT_UP_S / 2
    p.received(sent[-1])
    assert not p.shedding


def test_lag_counts_a_probe_still_on_its_way_and_ignores_strangers() -> None:
    p, clock, sent = probe()
    p.send()
    clock.t += 7.0
    assert p.lag_s() == pytest.approx(7.0)
    p.received(b"not-a-number")
    p.received(b"999")  # never sent (from before a restart)
    assert p.received_count == 0
    p.received(sent[-1])
    assert p.lag_s() == pytest.approx(7.0) and p.received_count == 1


def test_read_gate_pauses_at_high_and_resumes_at_low_without_a_socket() -> None:
    gate = ReadGate(10, 5)
    gate.check(9)
    assert not gate.paused
    gate.check(10)  # unbound (no socket): nothing to pause
    assert not gate.paused and gate.pauses == 0
    with pytest.raises(ValueError):
        ReadGate(5, 5)


def test_a_growing_backlog_near_the_brokers_queue_limit_sheds_before_the_time_bound() -> None:
    """Fast input fills the broker's queue (which drops the newest when full) long before
    the monitor is `shed_after_s` late: shed once `shed_backlog` readings wait ahead of a
    probe and the waits still grow."""
    p, clock, sent = probe(shed_after_s=30.0)
    p.shed_backlog = 1000
    arrivals = []
    for i in range(20):
        p.send()
        arrivals.append((clock.t + 0.5 * i, sent[-1], 400 * i))  # 400 more ahead each second
        clock.t += 1.0
    base = p.arrivals
    for at, payload, ahead in sorted(arrivals):
        clock.t = at
        p.arrivals = base + ahead + int(at)  # arrivals since its send: the ones ahead of it
        p.received(payload)
        if p.shedding:
            break
    assert p.shedding and p.last_wait_s < 30.0 and p.last_ahead >= 1000


def simulate(
    p: BacklogProbe, clock: Clock, sent: list[bytes], *, rate_in: float, drain: float,
    seconds: float, backlog: int = 0, dt: float = 0.01,
) -> int:  # fmt: skip
    """A broker's FIFO queue for the session, fed `rate_in` readings a second (and a probe
    each second) and read by the gateway at `drain` items a second, from `backlog` readings
    already queued. Returns the most readings the broker held before shedding started."""
    # [readings, probe payload or b""]: a probe is an entry with no readings
    queue: deque[list[Any]] = deque([[float(backlog), b""]] if backlog else [])
    held, most, next_probe, read = float(backlog), float(backlog), clock.t, 0.0
    end = clock.t + seconds
    while clock.t < end and not p.shedding:
        if clock.t >= next_probe:
            p.send()
            queue.append([0.0, sent[-1]])
            next_probe += 1.0
        queue.append([rate_in * dt, b""])
        held += rate_in * dt
        most = max(most, held)
        budget = drain * dt
        while budget > 0 and queue:
            if queue[0][1]:
                p.received(queue.popleft()[1])
                continue
            take = min(budget, queue[0][0])
            queue[0][0] -= take
            budget, held, read = budget - take, held - take, read + take
            p.arrivals = int(read)
            if queue[0][0] <= 1e-9:
                queue.popleft()
        clock.t += dt
    return int(most)


@pytest.mark.parametrize("overload", [1.2, 1.5, 2.0, 4.0])
def test_fast_input_sheds_before_the_brokers_queue_is_full(overload: float) -> None:
    """4,000 readings/s drained, fed `overload` times that: the broker's queue (100,000,
    twice the shipped `shed_backlog`; it drops the NEWEST when full) never fills, whatever
    the time bound. Measured on ahead-of-probe counts, 2x overload reached 100,000."""
    p, clock, sent = probe(shed_after_s=30.0)
    most = simulate(p, clock, sent, rate_in=4000 * overload, drain=4000, seconds=600)
    assert p.shedding
    assert most < 100_000, most
    assert p.queued_est >= p.shed_backlog or p.last_wait_s >= 30.0


def test_draining_the_brokers_whole_queue_with_live_input_never_sheds() -> None:
    """A hub back from an outage: 100,000 readings queued, live input at 5 % of the pace."""
    p, clock, sent = probe(shed_after_s=5.0)
    simulate(p, clock, sent, rate_in=200, drain=4000, seconds=60, backlog=100_000)
    assert not p.shedding and p.received_count > 0 and p.last_wait_s < 1.0


def test_a_drain_after_the_link_came_back_never_sheds() -> None:
    """Probes from before an outage waited nothing; the first one after it waits the whole
    backlog. Compared with those, it would look like falling behind."""
    p, clock, sent = probe(shed_after_s=5.0)
    simulate(p, clock, sent, rate_in=1000, drain=4000, seconds=20)
    assert p.received_count >= 15 and not p.shedding
    clock.t += 100.0  # the link is down for 100 s: 100,000 readings queue at the broker
    p.reconnected()
    simulate(p, clock, sent, rate_in=1000, drain=4000, seconds=60, backlog=100_000)
    assert not p.shedding and p.last_wait_s < 1.0
