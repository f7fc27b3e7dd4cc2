"""Alert state machine: debounce by count and by time, hysteresis, one open alert per
condition, dormancy, snooze. Pure logic: time is passed in (no clocks, no sleeps, no I/O).

Two clocks, kept apart on purpose. Observations carry the *reading's* time (`ts`): debounce,
cooldown and clearing run on the readings' own timeline, so a watch that syncs a day of data
at once replays that day, not one minute of wall-clock flapping. `tick(now)` takes the *wall*
clock: it opens an urgent alert whose readings stopped coming (a single SpO2 of 70 followed by
silence) and re-asks after an "I'm OK" snooze expires.

Per (person, condition) the caller feeds one observation each time the condition was
evaluated, with a status:

* ``abnormal``: outside the normal range (or the score's alert level);
* ``band``: back inside but within the hysteresis margin (neutral: counts nothing);
* ``recovering``: normal on what was measured, but the evidence is incomplete (a partial
  NEWS2). It resets a pending opening but can never clear an open alert; enough of it makes
  the alert *dormant*;
* ``cleared``: normal on complete evidence, past the hysteresis margin.

Rules (docs/clinical.md, "Alert life cycle"):

* **Debounce.** Mild severities (rank < 2) open after ``needed`` abnormal observations (the
  caller's count; default ``debounce``) with no cleared one in between. Urgent severities
  (rank >= 2) open after ``needed`` observations *or* once the first of them is
  ``confirm_s`` old (reading time), and `tick` opens them ``confirm_s`` of wall time after the
  first one arrived if nothing contradicted it. Callers set ``needed`` = 1 for a spot-check
  device.
* **Every new alert notifies**, including one re-opened inside the cooldown of the last (it
  is recorded as ``reopened``: the cooldown no longer silences anyone).
* **A rise notifies.** While open, an observation above everything people were told about
  this alert is an ``updated`` transition that notifies. A dormant alert that turns abnormal
  again is ``recurred`` and notifies.
* **Clear** after ``clear`` cleared observations with no abnormal one in between; whoever was
  told it started is told it ended. `clear_all` is the explicit all-clear.
* **Snooze.** `snooze` ("I'm OK") holds off re-asking until a wall time; when it expires and
  the latest observation is still abnormal at an urgent severity, `tick` returns a
  ``persisting`` transition that notifies (the wearer is asked again).
* An unknown severity ranks highest, so a typo never silences an alert.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from gateway.monitor.alert_state import (
    SNAPSHOT_VERSION,
    Alert,
    Transition,
    TransitionKind,
    from_snapshot,
    to_snapshot,
)
from gateway.monitor.alert_state import (
    OpenAlert as _Open,
)
from gateway.monitor.alert_state import (
    State as _State,
)
from gateway.monitor.severity import URGENT_RANK, severity_rank, worse

Status = Literal["abnormal", "band", "recovering", "cleared"]

# Another device's abnormal reading this recent keeps a normal one from clearing (15 min: the
# NEWS2 window, and a spot-check device's usual cadence).
SOURCE_FRESH_S = 900.0
# A snoozed alert is asked about again only if its last abnormal reading is this recent.
REASK_FRESH_S = 900.0
_EMPTY: frozenset[str] = frozenset()

__all__ = ["SNAPSHOT_VERSION", "Alert", "AlertTracker", "Status", "Transition", "TransitionKind"]


@dataclass(slots=True)
class AlertTracker:
    debounce: int = 3
    clear: int = 3
    cooldown_s: float = 600.0
    confirm_s: float = 30.0
    _states: dict[tuple[str, str], _State] = field(default_factory=dict, init=False, repr=False)
    # person -> the conditions with state: the hot path asks "is this one tracked?" per vital.
    _tracked: dict[str, set[str]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.debounce < 1 or self.clear < 1 or self.cooldown_s < 0 or self.confirm_s < 0:
            raise ValueError("debounce and clear must be >= 1; cooldown_s, confirm_s >= 0")

    def tracking(self, person: str, condition: str) -> bool:
        """Whether this condition has any state. A healthy, untracked condition needs no
        observation, so the caller may skip building evidence for it (the hot path)."""
        return (person, condition) in self._states

    # --- observations --------------------------------------------------------------------
    def observe(
        self,
        person: str,
        condition: str,
        *,
        status: Status,
        severity: str,
        evidence: Mapping[str, Any],
        ts: float,
        received: float | None = None,
        needed: int | None = None,
        source: str | None = None,
    ) -> Transition | None:
        """One evaluation of a condition. `ts`: the reading's time; `received`: wall time it
        arrived (None for late data: only live alerts open on silence). `source`: the device;
        a normal reading from one device does not cancel another device's fresh abnormal one
        (a finger oximeter reading 82 while the watch reads 96)."""
        key = (person, condition)
        st = self._states.get(key)
        if st is None:
            if status != "abnormal":
                return None  # keep no state for healthy conditions
            st = self._states[key] = _State()
            self._tracked.setdefault(person, set()).add(condition)
        if source is not None:
            if status == "abnormal":
                st.sources[source] = ts
            else:
                st.sources.pop(source, None)
                if any(abs(ts - t) <= SOURCE_FRESH_S for t in st.sources.values()):
                    status = "band"
        need = self.debounce if needed is None else max(1, needed)
        if st.alert is None:
            return self._closed(key, st, status, severity, evidence, ts, received, need)
        return self._open(key, st, status, severity, evidence, ts, received, need)

    def _closed(
        self,
        key: tuple[str, str],
        st: _State,
        status: Status,
        severity: str,
        evidence: Mapping[str, Any],
        ts: float,
        received: float | None,
        need: int,
    ) -> Transition | None:
        if status in ("cleared", "recovering"):
            # Normal on what was measured contradicts a pending abnormal run (a glitch), even
            # if that evidence could never clear an open alert.
            st.reset_pending()
            return None
        if status != "abnormal":
            # Band: neutral for the count, but it is a reading, so the silence rule in `tick`
            # no longer applies (readings did not stop; they came back near normal).
            st.pending_first_recv = None
            return None
        st.opening += 1
        st.pending_peak = worse(st.pending_peak, severity)
        st.pending_evidence = dict(evidence)
        if st.pending_first_ts is None:
            st.pending_first_ts = ts
        if st.pending_first_recv is None:
            st.pending_first_recv = received
        urgent = severity_rank(st.pending_peak) >= URGENT_RANK
        confirmed = st.opening >= need or (urgent and ts - st.pending_first_ts >= self.confirm_s)
        if not confirmed:
            return None
        return self._open_alert(key, st, severity, ts)

    def _open_alert(self, key: tuple[str, str], st: _State, severity: str, at: float) -> Transition:
        peak = st.pending_peak or severity
        reopened = st.last_cleared_at is not None and at - st.last_cleared_at < self.cooldown_s
        st.alert = _Open(
            alert_id=uuid.uuid4().hex,
            severity=severity,
            peak=peak,
            evidence=dict(st.pending_evidence or {}),
            opened_at=at,
            updated_at=at,
            reopened=reopened,
            notified=True,
            told=peak,
        )
        st.reset_pending()
        st.clearing = 0
        return st.alert.transition("reopened" if reopened else "opened", key, True, at)

    def _open(
        self,
        key: tuple[str, str],
        st: _State,
        status: Status,
        severity: str,
        evidence: Mapping[str, Any],
        ts: float,
        received: float | None,
        need: int,
    ) -> Transition | None:
        a = st.alert
        assert a is not None
        a.last_status = status
        if status == "abnormal":
            st.clearing = 0
            a.recovering = 0
            a.severity, a.evidence, a.updated_at = severity, dict(evidence), ts
            if a.dormant:
                return self._recur(key, st, severity, ts, received, need)
            if severity_rank(severity) <= severity_rank(a.peak):
                return None  # still the same alert: no repeat
            a.peak = severity
            notify = severity_rank(severity) > severity_rank(a.told)
            if notify:
                a.told, a.notified = severity, True
            return a.transition("updated", key, notify, ts)
        if status == "recovering":
            a.recovering += 1
            if a.recovering >= self.clear:
                a.dormant = True
            st.reset_pending()  # a recurrence must confirm afresh
            return None
        if status != "cleared":
            return None  # hysteresis band: neutral
        st.clearing += 1
        if st.clearing < self.clear:
            return None
        return self._close(key, st, severity, dict(evidence), ts)

    def _recur(
        self,
        key: tuple[str, str],
        st: _State,
        severity: str,
        ts: float,
        received: float | None,
        need: int,
    ) -> Transition | None:
        """A dormant alert turning abnormal again confirms like an opening (count or time),
        so a value hovering at a band edge does not recur on every reading. Inside an "I'm OK"
        snooze it recurs silently unless it is worse than what was told."""
        a = st.alert
        assert a is not None
        st.opening += 1
        st.pending_peak = worse(st.pending_peak, severity)
        if st.pending_first_ts is None:
            st.pending_first_ts = ts
        urgent = severity_rank(st.pending_peak) >= URGENT_RANK
        if st.opening < need and not (urgent and ts - st.pending_first_ts >= self.confirm_s):
            return None
        peak = st.pending_peak or severity
        st.reset_pending()
        a.dormant = False
        a.peak = worse(a.peak, peak)
        snoozed = (
            a.snoozed_until is not None and received is not None and received < a.snoozed_until
        )
        notify = not snoozed or severity_rank(peak) > severity_rank(a.told)
        if notify:
            a.told, a.notified = peak, True
        return a.transition("recurred", key, notify, ts)

    def _close(
        self,
        key: tuple[str, str],
        st: _State,
        severity: str,
        evidence: dict[str, Any],
        at: float,
    ) -> Transition:
        a = st.alert
        assert a is not None
        st.alert = None
        st.clearing = 0
        st.last_cleared_at = at
        st.last_told = a.told
        return Transition(
            kind="cleared",
            person=key[0],
            condition=key[1],
            alert_id=a.alert_id,
            severity=severity,
            peak_severity=a.peak,
            evidence=evidence,
            opened_at=a.opened_at,
            notify=a.notified,
            at=at,
        )

    # --- wall-clock work -------------------------------------------------------------------
    def tick(self, now: float) -> list[Transition]:
        """Open urgent alerts whose confirming readings never came, and re-ask snoozed ones
        that are still urgent. `now` is the wall clock."""
        out: list[Transition] = []
        for key, st in list(self._states.items()):
            a = st.alert
            if a is None:
                if (
                    st.opening
                    and st.pending_peak is not None
                    and st.pending_first_recv is not None
                    and severity_rank(st.pending_peak) >= URGENT_RANK
                    and now - st.pending_first_recv >= self.confirm_s
                ):
                    out.append(self._open_alert(key, st, st.pending_peak, now))
                continue
            if a.snoozed_until is not None and now >= a.snoozed_until:
                a.snoozed_until = None
                # Only on fresh evidence: a single cuff reading from before the snooze is not
                # "still critical" 15 minutes later.
                if (
                    a.last_status == "abnormal"
                    and not a.dormant
                    and severity_rank(a.severity) >= URGENT_RANK
                    and now - a.updated_at <= REASK_FRESH_S
                ):
                    a.notified = True
                    out.append(a.transition("persisting", key, True, now))
        return out

    def next_due(self) -> float | None:
        """The earliest wall time `tick` could act: an urgent opening's confirmation running
        out, a snooze ending (a virtual clock ticks there; None: nothing counting down)."""
        due: float | None = None
        for st in self._states.values():
            if st.alert is None:
                urgent = (
                    st.opening
                    and st.pending_peak is not None
                    and st.pending_first_recv is not None
                    and severity_rank(st.pending_peak) >= URGENT_RANK
                )
                t = st.pending_first_recv + self.confirm_s if urgent else None  # type: ignore[operator]
            else:
                t = st.alert.snoozed_until
            if t is not None and (due is None or t < due):
                due = t
        return due

    def snooze(self, person: str, condition: str, until: float) -> bool:
        """The wearer said they are OK: do not ask again about this alert before `until`."""
        st = self._states.get((person, condition))
        if st is None or st.alert is None:
            return False
        st.alert.snoozed_until = until
        return True

    def clear_all(self, person: str, at: float, reason: str) -> list[Transition]:
        """The explicit all-clear (a person checked on them): close every open alert."""
        out = []
        for key, st in self._states.items():
            if key[0] == person and st.alert is not None:
                out.append(self._close(key, st, "low", {"rule": reason}, at))
        return out

    # --- views ---------------------------------------------------------------------------
    def open_alerts(self, person: str | None = None) -> list[Alert]:
        """Open alerts (of one person, or everyone's), oldest first."""
        out = [
            st.alert.view(p, c)
            for (p, c), st in self._states.items()
            if st.alert is not None and (person is None or p == person)
        ]
        out.sort(key=lambda a: (a.opened_at, a.person, a.condition))
        return out

    def open_count(self, person: str) -> int:
        """How many alerts are open for the person (cheap: no views built; hot path)."""
        return sum(1 for (p, _), st in self._states.items() if p == person and st.alert is not None)

    def urgent_open(self, person: str) -> bool:
        """Whether an urgent alert (critical or worse) is open for the person."""
        alerts = (self._states[(person, c)].alert for c in self._tracked.get(person, _EMPTY))
        return any(a is not None and severity_rank(a.peak) >= URGENT_RANK for a in alerts)

    def alert(self, person: str, condition: str) -> Alert | None:
        st = self._states.get((person, condition))
        if st is None or st.alert is None:
            return None
        return st.alert.view(person, condition)

    def tracked(self, person: str) -> frozenset[str] | set[str]:
        """The conditions of this person that have state (read-only; do not keep)."""
        return self._tracked.get(person, _EMPTY)

    def forget(self, person: str) -> None:
        """Drop all state of a person (removed from the household)."""
        for key in [k for k in self._states if k[0] == person]:
            del self._states[key]
        self._tracked.pop(person, None)

    # --- persistence ---------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """JSON-able state: open alerts, counters in progress, cooldown memory, snoozes."""
        return to_snapshot(self._states)

    def restore(self, data: Mapping[str, Any]) -> None:
        """Replace the state with a ``snapshot()``; ``{}`` means no state. Raises
        ValueError/TypeError/KeyError on a malformed snapshot and keeps the current state."""
        states = from_snapshot(data)
        self._states = states
        self._tracked = {}
        for person, condition in states:
            self._tracked.setdefault(person, set()).add(condition)
