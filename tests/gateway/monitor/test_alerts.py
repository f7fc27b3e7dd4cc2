from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable

import pytest

from gateway.monitor.alerts import AlertTracker, Status, Transition

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
    status: Status = "abnormal" if value > HI else "cleared" if value <= HI - MARGIN else "band"
    return tr.observe(
        person,
        condition,
        status=status,
        severity="critical" if value > CRIT else "abnormal",
        evidence={"heart_rate": value},
        ts=now,
        received=now,
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
    t = feed(tr, [118, 135, 117], step=5)[0]
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
    assert kinds(ts) == ["opened", "updated"]  # a rise above what was told notifies once
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


def test_news2_levels_escalate() -> None:
    tr = AlertTracker(debounce=2)
    out = []
    for i, (total, level) in enumerate(
        [(5, "medium"), (6, "medium"), (7, "high"), (8, "high"), (5, "medium")]
    ):
        t = tr.observe(
            "p1", "news2", status="abnormal" if level in ("medium", "high") else "cleared",
            severity=level, evidence={"total": total}, ts=T0 + i, received=T0 + i,
        )  # fmt: skip
        if t is not None:
            out.append((t.kind, t.severity, t.peak_severity))
    assert out == [("opened", "medium", "medium"), ("updated", "high", "high")]


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
    for i, sys_bp in enumerate([165, 170, 168]):
        t = tr.observe(
            "p1", "systolic_bp_high", status="abnormal", severity="abnormal",
            evidence={"systolic_bp": sys_bp}, ts=T0 + i * 900, received=T0 + i * 900,
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


# --- cooldown: a recurrence is recorded as such, and always told ------------------------------


def test_reopen_within_cooldown_notifies() -> None:
    tr = AlertTracker(cooldown_s=600)
    first = feed(tr, [118] * 3 + [100] * 3, step=10)
    cleared_at = first[-1].at
    again = feed(tr, [117] * 3, start=cleared_at + 300, step=10)
    assert kinds(again) == ["reopened"]
    t = again[0]
    assert t.notify is True and t.alert_id != first[0].alert_id
    [a] = tr.open_alerts()
    assert a.reopened is True and a.notified is True
    end = feed(tr, [100] * 3, start=cleared_at + 400, step=10)
    assert kinds(end) == ["cleared"] and end[0].notify is True


def test_reopen_after_cooldown_is_a_plain_opening() -> None:
    tr = AlertTracker(cooldown_s=600)
    cleared_at = feed(tr, [118] * 3 + [100] * 3, step=10)[-1].at
    again = feed(tr, [117] * 3, start=cleared_at + 580, step=10)
    assert kinds(again) == ["opened"] and again[0].notify is True


def test_zero_cooldown_never_reopens() -> None:
    tr = AlertTracker(cooldown_s=0)
    ts = feed(tr, [118] * 3 + [100] * 3 + [118] * 3, step=1)
    assert [(t.kind, t.notify) for t in ts] == [
        ("opened", True),
        ("cleared", True),
        ("opened", True),
    ]


# --- urgent severities: by time, not by count ------------------------------------------------------


def crit(tr: AlertTracker, ts: float, *, received: float | None = None, needed: int | None = None,
         status: Status = "abnormal", value: float = 70) -> Transition | None:  # fmt: skip
    return tr.observe(
        "p1", "spo2_low", status=status, severity="critical", evidence={"spo2": value},
        ts=ts, received=ts if received is None else received, needed=needed,
    )  # fmt: skip


def test_spot_check_device_alarms_on_its_first_critical_reading() -> None:
    tr = AlertTracker()
    t = crit(tr, T0, needed=1)
    assert t is not None and (t.kind, t.notify, t.severity) == ("opened", True, "critical")


def test_a_critical_value_opens_within_the_confirm_window_whatever_the_count() -> None:
    tr = AlertTracker(debounce=3, confirm_s=30)
    # One reading every 20 s: the count (3) would take 40 s, the time rule opens at 20 s.
    assert crit(tr, T0) is None
    t = crit(tr, T0 + 20)
    assert t is None
    t = crit(tr, T0 + 40)
    assert t is not None and t.kind == "opened"
    tr = AlertTracker(debounce=3, confirm_s=30)
    assert crit(tr, T0) is None
    t = crit(tr, T0 + 30)  # the second reading, 30 s after the first
    assert t is not None and t.kind == "opened"


def test_a_critical_value_followed_by_silence_opens_on_the_wall_clock() -> None:
    tr = AlertTracker(confirm_s=30)
    assert crit(tr, T0, received=T0 + 1) is None
    assert tr.tick(T0 + 30) == []
    [t] = tr.tick(T0 + 31)
    assert (t.kind, t.severity, t.notify, t.evidence) == ("opened", "critical", True, {"spo2": 70})
    assert tr.tick(T0 + 60) == []  # opened once


def test_late_data_never_opens_on_the_wall_clock() -> None:
    tr = AlertTracker(confirm_s=30)
    assert tr.observe(
        "p1", "spo2_low", status="abnormal", severity="critical", evidence={}, ts=T0,
        received=None,
    ) is None  # fmt: skip
    assert tr.tick(T0 + 3600) == []


def test_a_glitch_followed_by_a_normal_reading_never_opens() -> None:
    tr = AlertTracker(confirm_s=30)
    assert crit(tr, T0) is None
    assert crit(tr, T0 + 5, status="cleared", value=97) is None
    assert tr.tick(T0 + 100) == []
    assert tr.open_alerts() == []


def test_a_critical_reading_followed_by_near_normal_ones_does_not_open_on_the_clock() -> None:
    tr = AlertTracker(confirm_s=30)
    assert crit(tr, T0) is None
    assert crit(tr, T0 + 5, status="band", value=95) is None
    assert tr.tick(T0 + 100) == []
    # ...but a critical reading that comes back is a second one, 110 s after the first.
    t = crit(tr, T0 + 110)
    assert t is not None and t.kind == "opened"


def test_mild_values_still_debounce_by_count() -> None:
    tr = AlertTracker(debounce=3, confirm_s=30)
    assert feed(tr, [115], step=600) == []
    assert tr.tick(T0 + 3600) == []  # mild: no time rule
    assert kinds(feed(tr, [116, 117], start=T0 + 600, step=600)) == ["opened"]


# --- dormancy: partial evidence never clears, a recurrence is loud ---------------------------


def test_recovering_on_partial_evidence_never_clears_and_recurs_loudly() -> None:
    tr = AlertTracker(debounce=1, clear=3)

    def news2(status: Status, level: str, t: float) -> Transition | None:
        return tr.observe("p1", "news2", status=status, severity=level, evidence={},
                          ts=t, received=t)  # fmt: skip

    opened = news2("abnormal", "high", T0)
    assert opened is not None and opened.kind == "opened"
    for i in range(20):
        assert news2("recovering", "low", T0 + 60 * (i + 1)) is None
    [a] = tr.open_alerts()
    assert a.dormant and a.to_dict()["state"] == "recovering"
    again = news2("abnormal", "high", T0 + 3600)
    assert again is not None and (again.kind, again.notify) == ("recurred", True)
    assert not tr.open_alerts()[0].dormant
    # Complete, normal evidence clears it.
    ts = [news2("cleared", "low", T0 + 4000 + i) for i in range(3)]
    assert ts[-1] is not None and ts[-1].kind == "cleared"


# --- "I'm OK": a bounded snooze ----------------------------------------------------------------


def test_ok_snoozes_and_asks_again_while_still_critical() -> None:
    tr = AlertTracker(debounce=1)
    t = crit(tr, T0)
    assert t is not None
    assert tr.snooze("p1", "spo2_low", until=T0 + 900)
    crit(tr, T0 + 60)
    assert tr.tick(T0 + 899) == []
    [again] = tr.tick(T0 + 900)
    assert (again.kind, again.notify, again.alert_id) == ("persisting", True, t.alert_id)
    assert tr.tick(T0 + 2000) == []  # asked once per snooze


def test_a_snooze_that_ends_after_recovery_asks_nothing() -> None:
    tr = AlertTracker(debounce=1)
    crit(tr, T0)
    tr.snooze("p1", "spo2_low", until=T0 + 900)
    crit(tr, T0 + 60, status="band", value=94)
    assert tr.tick(T0 + 1000) == []


def test_all_clear_closes_every_open_alert() -> None:
    tr = AlertTracker(debounce=1)
    crit(tr, T0)
    hr(tr, 120, T0)
    ts = tr.clear_all("p1", T0 + 10, "all-clear by api")
    assert sorted(t.kind for t in ts) == ["cleared", "cleared"]
    assert all(t.notify for t in ts) and tr.open_alerts() == []


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
    opened = feed(tr, [118, 119, 135], step=10)[0]  # critical: opens at once (time rule)
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
    assert [(t.kind, t.notify) for t in ts] == [("reopened", True)]


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
    assert tr.snapshot() == {"version": 2, "states": []}


def test_invalid_configuration() -> None:
    with pytest.raises(ValueError):
        AlertTracker(debounce=0)
    with pytest.raises(ValueError):
        AlertTracker(cooldown_s=-1)


def test_another_devices_normal_reading_does_not_cancel_an_abnormal_one() -> None:
    tr = AlertTracker(debounce=3, confirm_s=30)

    def obs(status: Status, device: str, t: float) -> Transition | None:
        return tr.observe("p1", "spo2_low", status=status, severity="critical", evidence={},
                          ts=t, received=t, source=device)  # fmt: skip

    for i in range(3):  # the oximeter reads 82 and the watch 96, alternately
        assert obs("abnormal", "oxi", T0 + 10 * i) is None or i == 2
        assert obs("cleared", "watch", T0 + 10 * i + 5) is None
    [a] = tr.open_alerts()
    assert a.condition == "spo2_low"
    for i in range(5):  # the watch alone cannot clear it while the oximeter's value is fresh
        assert obs("cleared", "watch", T0 + 100 + 5 * i) is None
    assert tr.open_alerts()
    ts = [obs("cleared", "watch", T0 + 1100 + 5 * i) for i in range(3)]  # 15 min later
    assert ts[-1] is not None and ts[-1].kind == "cleared"


def test_a_dormant_alert_reconfirms_before_it_recurs() -> None:
    tr = AlertTracker(debounce=3, clear=3, confirm_s=30)

    def n2(status: Status, t: float) -> Transition | None:
        return tr.observe("p1", "news2", status=status, severity="low-medium" if status ==
                          "abnormal" else "low", evidence={}, ts=t, received=t)  # fmt: skip

    for i in range(3):
        n2("abnormal", T0 + 5 * i)
    for i in range(3):
        n2("recovering", T0 + 20 + 5 * i)
    assert tr.open_alerts()[0].dormant
    # One red reading between normal ones (a dip) does not recur...
    assert n2("abnormal", T0 + 40) is None
    assert n2("recovering", T0 + 45) is None
    assert n2("abnormal", T0 + 50) is None
    # ...a sustained one does.
    n2("abnormal", T0 + 55)
    t = n2("abnormal", T0 + 60)
    assert t is not None and (t.kind, t.notify) == ("recurred", True)


def test_a_re_ask_needs_fresh_evidence() -> None:
    tr = AlertTracker(debounce=1)
    crit(tr, T0, needed=1)
    tr.snooze("p1", "spo2_low", until=T0 + 900)
    assert tr.tick(T0 + 1000) == []  # the only reading is 1000 s old: not "still critical"
