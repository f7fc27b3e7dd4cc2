from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable

import pytest

from gateway.monitor.alerts import SEVERITY_RANK, AlertTracker, Transition, severity_rank

# Heart rate high: normal up to 110, hysteresis margin 5 (cleared at <= 105), critical > 130.
HI, MARGIN, CRIT = 110.0, 5.0, 130.0
T0 = 1_790_000_000.0


def hr(
    tr: AlertTracker,
    value: float,
    now: float,
    person: str = "p1",
    condition: str = "heart_rate_high",
) -> Transition | None:
    return tr.observe(
        person,
        condition,
        abnormal=value > HI,
        cleared=value <= HI - MARGIN,
        severity="critical" if value > CRIT else "abnormal",
        evidence={"heart_rate": value},
        now=now,
    )


def feed(
    tr: AlertTracker, values: Iterable[float], start: float = T0, step: float = 60.0
) -> list[Transition]:
    out = []
    for i, v in enumerate(values):
        t = hr(tr, v, start + i * step)
        if t is not None:
            out.append(t)
    return out


def kinds(ts: list[Transition]) -> list[str]:
    return [t.kind for t in ts]


# --- debounce -----------------------------------------------------------------------------------


def test_opens_only_after_debounce_abnormal_readings() -> None:
    tr = AlertTracker(debounce=3, clear=3, cooldown_s=600)
    assert hr(tr, 118, T0) is None
    assert hr(tr, 121, T0 + 60) is None
    assert tr.open_alerts() == []
    t = hr(tr, 119, T0 + 120)
    assert t is not None
    assert (t.kind, t.person, t.condition, t.notify) == ("opened", "p1", "heart_rate_high", True)
    assert (t.severity, t.peak_severity, t.opened_at, t.at) == (
        "abnormal",
        "abnormal",
        T0 + 120,
        T0 + 120,
    )
    assert t.evidence == {"heart_rate": 119}
    assert len(t.alert_id) == 32 and int(t.alert_id, 16) >= 0
    [a] = tr.open_alerts()
    assert (a.alert_id, a.peak_severity, a.opened_at) == (t.alert_id, "abnormal", T0 + 120)


def test_peak_of_the_debounce_run_is_kept() -> None:
    tr = AlertTracker()
    t = feed(tr, [135, 118, 117])[0]
    assert (t.kind, t.severity, t.peak_severity) == ("opened", "abnormal", "critical")


def test_single_spikes_never_open() -> None:
    tr = AlertTracker()
    assert feed(tr, [125, 90, 126, 88, 124, 90, 112, 111, 80] * 5) == []
    assert tr.open_alerts() == []


def test_band_readings_are_neutral_for_opening() -> None:
    # 108 is below the threshold but within the margin: not clearly normal again.
    tr = AlertTracker()
    ts = feed(tr, [115, 108, 116, 107, 117])
    assert kinds(ts) == ["opened"]
    assert ts[0].evidence == {"heart_rate": 117}
    # ...while a clearly normal reading restarts the count.
    tr = AlertTracker()
    assert feed(tr, [115, 116, 100, 117, 118]) == []
    assert kinds(feed(tr, [119], start=T0 + 600)) == ["opened"]


def test_debounce_of_one_opens_immediately() -> None:
    tr = AlertTracker(debounce=1, clear=1, cooldown_s=0)
    assert kinds(feed(tr, [120, 100, 121])) == ["opened", "cleared", "opened"]


# --- one open alert, escalation ----------------------------------------------------------------


def test_open_alert_is_not_repeated_and_keeps_latest_evidence() -> None:
    tr = AlertTracker()
    ts = feed(tr, [115, 116, 117, 120, 125, 118, 119])
    assert kinds(ts) == ["opened"]
    [a] = tr.open_alerts("p1")
    assert a.alert_id == ts[0].alert_id
    assert a.evidence == {"heart_rate": 119}
    assert a.updated_at == T0 + 6 * 60


def test_severity_escalation_gives_exactly_one_update() -> None:
    tr = AlertTracker()
    ts = feed(tr, [115, 116, 117, 135, 140, 138, 120, 136])
    assert kinds(ts) == ["opened", "updated"]
    opened, updated = ts
    assert updated.alert_id == opened.alert_id
    assert (updated.severity, updated.peak_severity, updated.notify) == (
        "critical",
        "critical",
        True,
    )
    assert updated.evidence == {"heart_rate": 135}
    assert updated.opened_at == opened.opened_at
    [a] = tr.open_alerts()
    # Worst severity kept as the peak; current severity and evidence follow the latest reading.
    assert (a.severity, a.peak_severity, a.evidence) == (
        "critical",
        "critical",
        {"heart_rate": 136},
    )


def test_news2_levels_rank_and_escalate() -> None:
    assert [severity_rank(s) for s in ("low", "low-medium", "medium", "high")] == [0, 1, 2, 3]
    assert SEVERITY_RANK["abnormal"] < SEVERITY_RANK["critical"]
    tr = AlertTracker(debounce=2)
    out = []
    for i, (total, level) in enumerate(
        [(5, "medium"), (6, "medium"), (7, "high"), (8, "high"), (5, "medium")]
    ):
        t = tr.observe(
            "p1", "news2", abnormal=level in ("medium", "high"), cleared=total <= 3,
            severity=level, evidence={"total": total}, now=T0 + i,
        )  # fmt: skip
        if t is not None:
            out.append((t.kind, t.severity, t.peak_severity))
    assert out == [("opened", "medium", "medium"), ("updated", "high", "high")]


def test_unknown_severity_ranks_highest() -> None:
    assert severity_rank("severe") == max(SEVERITY_RANK.values())


def test_abnormal_and_cleared_together_counts_as_abnormal() -> None:
    tr = AlertTracker(debounce=2)
    for i in range(2):
        t = tr.observe(
            "p", "x", abnormal=True, cleared=True, severity="abnormal", evidence={}, now=T0 + i
        )
    assert t is not None and t.kind == "opened"


# --- clearing with hysteresis -------------------------------------------------------------------


def test_clears_only_after_consecutive_cleared_readings() -> None:
    tr = AlertTracker()
    opened = feed(tr, [115, 116, 117])[0]
    # Back under the threshold but inside the margin: the alert stays open, however long.
    assert feed(tr, [108, 109, 106, 107] * 10, start=T0 + 1000) == []
    # Two cleared, then abnormal again: the clearing count restarts.
    assert feed(tr, [100, 101, 118, 100, 99], start=T0 + 5000) == []
    assert len(tr.open_alerts()) == 1
    t = hr(tr, 98, T0 + 6000)
    assert t is not None
    assert (t.kind, t.alert_id, t.notify, t.peak_severity) == (
        "cleared",
        opened.alert_id,
        True,
        "abnormal",
    )
    assert (t.evidence, t.opened_at, t.at) == ({"heart_rate": 98}, opened.opened_at, T0 + 6000)
    assert tr.open_alerts() == []


def test_band_readings_are_neutral_for_clearing() -> None:
    tr = AlertTracker()
    feed(tr, [115, 116, 117])
    ts = feed(tr, [104, 107, 103, 108, 102], start=T0 + 1000)
    assert kinds(ts) == ["cleared"]


def test_value_bouncing_around_the_threshold_does_not_flap() -> None:
    tr = AlertTracker()
    # Hovering at the threshold for two hours: one alert, never closed while it hovers.
    ts = feed(tr, [111, 109, 112, 108, 113, 110, 111, 107] * 15)
    assert kinds(ts) == ["opened"]
    # Hovering at the clearing edge: it closes once and stays closed.
    ts = feed(tr, [104, 106, 105, 109, 103, 106] * 10, start=T0 + 10_000)
    assert kinds(ts) == ["cleared"]


# --- sparse vitals and independence ------------------------------------------------------------


def test_sparse_observations_count_only_when_the_vital_is_present() -> None:
    tr = AlertTracker()
    # BP arrives every 15 minutes; nothing is fed in between, so three BP readings open it.
    out = []
    for i, sys_bp in enumerate([185, 190, 188]):
        t = tr.observe(
            "p1", "systolic_bp_high", abnormal=True, cleared=False, severity="critical",
            evidence={"systolic_bp": sys_bp}, now=T0 + i * 900,
        )  # fmt: skip
        if t is not None:
            out.append(t)
    assert kinds(out) == ["opened"] and out[0].opened_at == T0 + 1800
    # Other conditions and people are separate state machines.
    assert hr(tr, 120, T0, person="p1") is None
    assert hr(tr, 120, T0, person="p2") is None
    assert [a.condition for a in tr.open_alerts("p1")] == ["systolic_bp_high"]
    assert tr.open_alerts("p2") == []


def test_open_alerts_listing_and_forget() -> None:
    tr = AlertTracker(debounce=1)
    hr(tr, 120, T0 + 5, person="b")
    hr(tr, 120, T0 + 1, person="a")
    hr(tr, 120, T0 + 3, person="a", condition="other")
    assert [(a.person, a.condition) for a in tr.open_alerts()] == [
        ("a", "heart_rate_high"),
        ("a", "other"),
        ("b", "heart_rate_high"),
    ]
    assert len(tr.open_alerts("a")) == 2
    a = tr.alert("a", "other")
    assert a is not None and a.to_dict()["condition"] == "other"
    tr.forget("a")
    assert [a.person for a in tr.open_alerts()] == ["b"]
    assert tr.alert("a", "other") is None


# --- cooldown ------------------------------------------------------------------------------------


def test_reopen_within_cooldown_is_silent() -> None:
    tr = AlertTracker(cooldown_s=600)
    first = feed(tr, [118] * 3 + [100] * 3, step=10)
    cleared_at = first[-1].at
    again = feed(tr, [117] * 3, start=cleared_at + 300, step=10)
    assert kinds(again) == ["reopened"]
    t = again[0]
    assert t.notify is False and t.alert_id != first[0].alert_id
    [a] = tr.open_alerts()
    assert a.reopened is True and a.notified is False
    # Its clear is silent too: nobody was told it started.
    end = feed(tr, [100] * 3, start=cleared_at + 400, step=10)
    assert kinds(end) == ["cleared"] and end[0].notify is False


def test_reopen_after_cooldown_notifies() -> None:
    tr = AlertTracker(cooldown_s=600)
    cleared_at = feed(tr, [118] * 3 + [100] * 3, step=10)[-1].at
    # The debounce completes 600 s after the clear: outside the cooldown.
    again = feed(tr, [117] * 3, start=cleared_at + 580, step=10)
    assert kinds(again) == ["opened"] and again[0].notify is True


def test_reopen_within_cooldown_with_higher_severity_notifies() -> None:
    tr = AlertTracker(cooldown_s=600)
    cleared_at = feed(tr, [118] * 3 + [100] * 3, step=10)[-1].at
    again = feed(tr, [135, 136, 137], start=cleared_at + 60, step=10)
    assert kinds(again) == ["reopened"]
    assert (again[0].notify, again[0].peak_severity) == (True, "critical")


def test_silent_reopen_that_escalates_notifies_once() -> None:
    tr = AlertTracker(cooldown_s=600)
    cleared_at = feed(tr, [118] * 3 + [100] * 3, step=10)[-1].at
    ts = feed(tr, [117, 118, 119, 135, 140], start=cleared_at + 60, step=10)
    assert [(t.kind, t.notify) for t in ts] == [("reopened", False), ("updated", True)]


def test_chain_of_reopenings_does_not_renotify_what_was_already_told() -> None:
    tr = AlertTracker(cooldown_s=600)
    # Critical alert, told; cleared; a milder silent reopen that climbs back to critical:
    # people were told "critical" minutes ago, so the climb is recorded but not re-notified.
    first = feed(tr, [135] * 3 + [100] * 3, step=10)
    assert [(t.kind, t.notify) for t in first] == [("opened", True), ("cleared", True)]
    ts = feed(tr, [118, 119, 120, 136], start=first[-1].at + 60, step=10)
    assert [(t.kind, t.notify, t.peak_severity) for t in ts] == [
        ("reopened", False, "abnormal"),
        ("updated", False, "critical"),
    ]
    [a] = tr.open_alerts()
    assert a.peak_severity == "critical" and a.notified is False


def test_zero_cooldown_never_reopens() -> None:
    tr = AlertTracker(cooldown_s=0)
    ts = feed(tr, [118] * 3 + [100] * 3 + [118] * 3, step=1)
    assert [(t.kind, t.notify) for t in ts] == [
        ("opened", True),
        ("cleared", True),
        ("opened", True),
    ]


# --- values, persistence -----------------------------------------------------------------------


def test_transition_is_a_frozen_json_able_value() -> None:
    tr = AlertTracker(debounce=1)
    t = hr(tr, 120, T0)
    assert t is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.kind = "cleared"  # type: ignore[misc]
    d = json.loads(json.dumps(t.to_dict()))
    assert d["kind"] == "opened" and d["evidence"] == {"heart_rate": 120} and d["notify"] is True
    assert not hasattr(t, "__dict__")  # slotted


def test_snapshot_restore_keeps_alerts_counters_and_cooldown() -> None:
    tr = AlertTracker(cooldown_s=600)
    opened = feed(tr, [118, 119, 135], step=10)[0]  # open, critical peak from the run
    hr(tr, 125, T0, person="p2")  # p2: 2 abnormal readings counted, not yet open
    hr(tr, 126, T0 + 10, person="p2")

    snap = json.loads(json.dumps(tr.snapshot()))
    restored = AlertTracker(cooldown_s=600)
    restored.restore(snap)
    assert [a.to_dict() for a in restored.open_alerts()] == [a.to_dict() for a in tr.open_alerts()]
    [a] = restored.open_alerts()
    assert (a.alert_id, a.peak_severity) == (opened.alert_id, "critical")
    # The abnormal reading after the restart completes p2's debounce (it was at 2 of 3).
    t = hr(restored, 127, T0 + 20, person="p2")
    assert t is not None and t.kind == "opened"
    # Cooldown memory survives too: clear p1, restart, re-open inside the cooldown.
    done = feed(restored, [100] * 3, start=T0 + 1000, step=10)
    assert kinds(done) == ["cleared"]
    again = AlertTracker(cooldown_s=600)
    again.restore(json.loads(json.dumps(restored.snapshot())))
    ts = feed(again, [118] * 3, start=T0 + 1100, step=10)
    assert [(t.kind, t.notify) for t in ts] == [("reopened", False)]


def test_restore_empty_and_malformed() -> None:
    tr = AlertTracker(debounce=1)
    hr(tr, 120, T0)
    good = tr.snapshot()
    tr.restore({})
    assert tr.open_alerts() == []
    tr.restore(good)
    assert len(tr.open_alerts()) == 1
    bad = json.loads(json.dumps(good))
    bad["states"][0]["opening"] = -1
    with pytest.raises(ValueError):
        tr.restore(bad)
    with pytest.raises(ValueError):
        tr.restore({"version": 99, "states": []})
    bad = json.loads(json.dumps(good))
    del bad["states"][0]["alert"]["told"]
    with pytest.raises(KeyError):
        tr.restore(bad)
    assert len(tr.open_alerts()) == 1  # all or nothing: the good state is kept


def test_healthy_conditions_keep_no_state() -> None:
    tr = AlertTracker()
    feed(tr, [70, 72, 108, 100] * 50)
    assert tr.snapshot() == {"version": 1, "states": []}


def test_invalid_configuration() -> None:
    with pytest.raises(ValueError):
        AlertTracker(debounce=0)
    with pytest.raises(ValueError):
        AlertTracker(cooldown_s=-1)
