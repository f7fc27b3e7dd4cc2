"""The decision step: a reading's `Scores` become alert observations, and the alert tracker
turns those into transitions (opened, updated, cleared...). Scores are evidence; this is the
code that decides, kept apart from scoring so either can be read and tested on its own."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from gateway.contract.values import Reading
from gateway.monitor import observe
from gateway.monitor.alerts import AlertTracker, Transition
from gateway.monitor.plausibility import Flag
from gateway.monitor.ranges import VitalRange
from gateway.monitor.scoring import Scores
from gateway.monitor.severity import URGENT_RANK, severity_rank


def alert_transitions(
    tracker: AlertTracker,
    r: Reading,
    sc: Scores,
    accepted: Mapping[str, float],
    ranges: Mapping[str, VitalRange],
    flags: Sequence[Flag],
    *,
    tracked: Collection[str],
    consciousness: str | None,
    retro: bool,
    now: float,
    needed: int,
    silence: bool = True,
    extra: Sequence[observe.Observation] = (),
    usual: Mapping[str, tuple[float, float]] | None = None,
) -> tuple[list[Transition], bool]:
    """Feed the tracker (the live one, or late data's own) every observation this reading
    makes; return the transitions and whether live alert state was touched (to be saved).
    `consciousness`: scored on its own only where NEWS2 does not already score it.
    `silence`: an urgent value followed by silence opens on the clock (a clinical device's
    reading); a wrist device's agreed value waits for its window instead (its single
    intervention readings are the questions' job, gateway/monitor/ask_first.py).
    `usual`: the person's usual resting ranges (baseline.py), quoted in the evidence."""
    obs, jumped = observe.collect(accepted, ranges, flags, news2=sc.news2_alert,
                                  clearable=sc.clearable, meows=sc.meows,
                                  consciousness=consciousness,
                                  tracked=tracked, extra=extra)  # fmt: skip
    if sc.anomaly is not None and not retro:
        current = tracker.alert(r.person, "anomaly")
        about = set(current.evidence.get("abnormal") or {}) if current else set()
        obs.append(observe.anomaly(sc.anomaly, accepted, sc.classes, about=about))
    touched = False
    transitions: list[Transition] = []
    for o in obs:
        if o.status != "abnormal" and not tracker.tracking(r.person, o.condition):
            continue  # healthy and untracked: skip the evidence (hot path)
        ev = observe.evidence(o.vitals, ranges, news2=sc.news2, meows=sc.meows,
                              score=sc.anomaly, unconfirmed=frozenset(jumped),
                              usual=usual)  # fmt: skip
        ev["rule"] = o.rule
        t = tracker.observe(
            r.person, o.condition, status=o.status, severity=o.severity, evidence=ev,
            ts=r.ts, received=None if retro or not silence else now,
            needed=needed if severity_rank(o.severity) >= URGENT_RANK else None,
            source=r.device if o.per_device else None,
        )  # fmt: skip
        if not retro:
            touched = True  # counts, dormancy and sources survive a crash too
        if t is not None:
            transitions.append(t)
    return transitions, touched


def open_on_value(
    tracker: AlertTracker,
    person: str,
    device: str,
    vital: str,
    value: float,
    ts: float,
    now: float,
    ranges: Mapping[str, VitalRange],
) -> list[Transition]:
    """Open the alert a single wrist reading stands for: it was asked about and neither
    refuted nor confirmed within its wait (silence is not a refutation)."""
    out = []
    for o in observe.vital(vital, value, ranges[vital]):
        if o.status != "abnormal":
            continue
        ev = observe.evidence(o.vitals, ranges, news2=None, meows=None, score=None)
        ev["rule"] = f"{o.rule}; one reading, not refuted"
        t = tracker.observe(person, o.condition, status="abnormal", severity=o.severity,
                            evidence=ev, ts=ts, received=now, needed=1,
                            source=device)  # fmt: skip
        if t is not None:
            out.append(t)
    return out
