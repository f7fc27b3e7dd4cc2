"""Is a reading live, or late data (a watch syncing hours it kept offline)?

Late readings still count: they are stored, scored and their alerts recorded on their own
timeline, but nobody is prompted, texted or escalated for them ("retrospective" events, in
the daily report). A reading is late when it arrives more than `late_after_s` after its own
timestamp.

A device whose clock is simply wrong would make every reading look late and silence it for
good, which is the worse failure. So lateness is judged against the device's clock offset
when the device is plainly streaming in real time: its offset (arrival - timestamp) stays
constant while each reading arrives at least half its timestamp gap after the one before. A
sync burst fails both: it arrives all at once, so its offset shrinks reading by reading,
whatever its interval (the finding: at 1 s a fixed 2 s jitter allowance let a five-hour burst
"keep pace"). The offset may wander by `_DRIFT_S` or `_DRIFT_SHARE` of the interval,
whichever is larger (capped), and after `REALTIME_STEPS` such steps the offset is taken as the device's clock skew and its readings count as live (reported once, so
the family can fix the clock).
"""

from __future__ import annotations

from dataclasses import dataclass

REALTIME_STEPS = 3
# How far a real-time stream's offset may wander from where its run began (network jitter,
# batching): absolute, or a share of the reading interval, capped.
_DRIFT_S = 2.0
_DRIFT_SHARE = 0.2
_DRIFT_MAX_S = 10.0
# Each reading must arrive at least this share of its timestamp gap after the previous one.
_MIN_PACE = 0.5


@dataclass(slots=True)
class _Device:
    last_ts: float | None = None
    last_recv: float = 0.0
    realtime_steps: int = 0
    run_ts: float = 0.0  # the reading that began the current real-time run
    run_offset: float = 0.0
    skew: float | None = None  # confirmed clock offset (arrival - ts), seconds
    reported: bool = False


@dataclass(frozen=True, slots=True)
class Timing:
    late: bool
    lag_s: float  # arrival - timestamp (after the device's known skew)
    skew_detected: float | None  # set once, when a skewed clock is first recognised


class Timeline:
    def __init__(self, late_after_s: float = 600.0) -> None:
        if late_after_s <= 0:
            raise ValueError("late_after_s must be positive")
        self.late_after_s = late_after_s
        self._devices: dict[tuple[str, str], _Device] = {}

    def judge(self, person: str, device: str, ts: float, received: float) -> Timing:
        d = self._devices.get((person, device))
        if d is None:
            d = self._devices[(person, device)] = _Device()
        offset = received - ts
        prev_ts, prev_recv = d.last_ts, d.last_recv
        # The previous reading, whatever its order: after a clock that jumped back, pace is
        # judged against what came just before, not the newest time ever seen.
        d.last_ts, d.last_recv = ts, received
        if offset <= self.late_after_s and d.skew is None:
            d.realtime_steps = 0  # the usual case: a live reading, a clock that is fine
            return Timing(late=False, lag_s=offset, skew_detected=None)
        keeps_pace = False
        if prev_ts is not None and ts > prev_ts and d.realtime_steps > 0:
            ts_gap, recv_gap = ts - prev_ts, received - prev_recv
            # Capped: over an hour-long gap 20 % would excuse a sync burst's whole offset.
            drift = max(_DRIFT_S, min(_DRIFT_SHARE * ts_gap, _DRIFT_MAX_S))
            keeps_pace = recv_gap >= _MIN_PACE * ts_gap and abs(offset - d.run_offset) <= drift
        if keeps_pace:
            d.realtime_steps += 1
        else:
            # The first, out of order, or off pace: a new run may begin here.
            d.realtime_steps, d.run_ts, d.run_offset = 1, ts, offset
        reported: float | None = None
        if offset <= self.late_after_s:
            d.skew = None  # the clock is fine (again)
        elif d.realtime_steps > REALTIME_STEPS:
            if d.skew is None or abs(offset - d.skew) > self.late_after_s:
                d.skew = offset
            if not d.reported:
                d.reported, reported = True, offset
        lag = offset - (d.skew or 0.0)
        return Timing(late=lag > self.late_after_s, lag_s=lag, skew_detected=reported)

    def forget(self, person: str, device: str) -> None:
        self._devices.pop((person, device), None)
