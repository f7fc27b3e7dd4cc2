from __future__ import annotations

import dataclasses
import json

import pytest

from gateway.monitor.stale import StaleTracker, StateChange

T0 = 1_790_000_000.0


def read(
    st: StaleTracker,
    t: float,
    *,
    hr: float | None = 70.0,
    steps: int | None = 0,
    interval: float | None = 60.0,
    device: str = "watch",
    other_vitals: bool = False,
) -> list[StateChange]:
    return st.seen(
        "p1",
        device,
        ts_received=t,
        heart_rate=hr,
        steps=steps,
        expected_interval_s=interval,
        other_vitals=other_vitals,
    )


def kinds(changes: list[StateChange]) -> list[str]:
    return [c.kind for c in changes]


# --- stale -------------------------------------------------------------------------------------


def test_stale_after_factor_times_the_configured_interval_reported_once() -> None:
    st = StaleTracker(factor=3.0, default_interval_s=60)
    assert read(st, T0) == []
    assert st.tick(T0 + 179.9) == []
    [c] = st.tick(T0 + 180)
    assert (c.person, c.device, c.kind, c.since) == ("p1", "watch", "stale", T0)
    assert c.detail == {
        "silent_for_s": 180.0,
        "interval_s": 60.0,
        "interval_source": "config",
        "last_seen": T0,
    }
    assert st.state("p1", "watch") == "stale"
    # No repeats however long it stays silent.
    assert st.tick(T0 + 300) == [] and st.tick(T0 + 86_400) == []


def test_returning_readings_report_recovered_and_rearm() -> None:
    st = StaleTracker()
    read(st, T0)
    st.tick(T0 + 200)
    [c] = read(st, T0 + 600)
    assert (c.kind, c.since) == ("recovered", T0 + 600)
    assert c.detail["silent_for_s"] == 600.0 and c.detail["interval_s"] == 60.0
    assert st.state("p1", "watch") == "active" and st.last_seen("p1", "watch") == T0 + 600
    assert read(st, T0 + 660) == []  # recovered once
    assert st.tick(T0 + 839) == []
    assert kinds(st.tick(T0 + 840)) == ["stale"]


def test_interval_is_estimated_from_observed_gaps() -> None:
    st = StaleTracker(factor=3.0, default_interval_s=60)
    read(st, T0, interval=None)
    read(st, T0 + 10, interval=None)
    read(st, T0 + 20, interval=None)
    # Two gaps are not enough for an estimate yet: the default applies.
    assert st.interval("p1", "watch") == 60.0
    assert st.tick(T0 + 59) == []
    read(st, T0 + 30, interval=None)
    assert st.interval("p1", "watch") == 10.0
    assert st.tick(T0 + 59) == []
    [c] = st.tick(T0 + 60)
    assert c.detail["interval_s"] == 10.0 and c.detail["interval_source"] == "estimate"


def test_gap_estimate_is_robust_to_outages_bursts_and_clamped() -> None:
    st = StaleTracker()
    t = T0
    for gap in [10, 10, 900, 10, 10, 0.05, 0.05, 0.05, 10]:  # an outage and a redelivery burst
        t += gap
        read(st, t, interval=None)
    assert st.interval("p1", "watch") == 10.0
    # The window follows a cadence change (last 20 gaps).
    for _ in range(20):
        t += 30
        read(st, t, interval=None)
    assert st.interval("p1", "watch") == 30.0
    # A device sending every 3 hours is judged against the 1 h clamp.
    slow = StaleTracker(max_interval_s=3600)
    for i in range(5):
        read(slow, T0 + i * 10_800, interval=None, device="scale")
    assert slow.interval("p1", "scale") == 3600.0


def test_configured_interval_wins_over_the_estimate() -> None:
    st = StaleTracker()
    for i in range(6):
        read(st, T0 + i * 10, interval=120)
    assert st.interval("p1", "watch") == 120.0
    assert st.tick(T0 + 50 + 359) == []
    assert kinds(st.tick(T0 + 50 + 360)) == ["stale"]


def test_devices_are_independent() -> None:
    st = StaleTracker()
    read(st, T0, device="watch")
    read(st, T0 + 100, device="ring")
    assert [(c.device, c.kind) for c in st.tick(T0 + 200)] == [("watch", "stale")]
    assert [(c.device, c.kind) for c in st.tick(T0 + 280)] == [("ring", "stale")]


# --- not worn ----------------------------------------------------------------------------------


def test_not_worn_after_readings_without_pulse_or_motion_and_back() -> None:
    st = StaleTracker(not_worn_readings=3)
    assert read(st, T0, hr=72) == []
    assert read(st, T0 + 60, hr=None, steps=0) == []
    assert read(st, T0 + 120, hr=0, steps=None) == []
    [c] = read(st, T0 + 180, hr=None, steps=None)
    assert (c.kind, c.since, c.detail) == ("not_worn", T0 + 60, {"readings": 3})
    assert st.state("p1", "watch") == "not_worn"
    assert read(st, T0 + 240, hr=None, steps=0) == []  # reported once
    [c] = read(st, T0 + 300, hr=68)
    assert (c.kind, c.since) == ("worn", T0 + 300)
    assert st.state("p1", "watch") == "active"


def test_motion_or_contact_vitals_restart_the_count_but_do_not_prove_wear() -> None:
    st = StaleTracker(not_worn_readings=3)
    read(st, T0, hr=72)
    read(st, T0 + 60, hr=None)
    read(st, T0 + 120, hr=None)
    assert read(st, T0 + 180, hr=None, steps=12) == []  # walking: not "no motion"
    read(st, T0 + 240, hr=None)
    read(st, T0 + 300, hr=None)
    assert read(st, T0 + 360, hr=None, other_vitals=True) == []  # an SpO2-only message
    read(st, T0 + 420, hr=None)
    read(st, T0 + 480, hr=None)
    assert kinds(read(st, T0 + 540, hr=None)) == ["not_worn"]
    # Steps alone do not bring it back (a watch in a pocket counts steps); a pulse does.
    assert read(st, T0 + 600, hr=0, steps=30) == []
    assert kinds(read(st, T0 + 660, hr=75)) == ["worn"]


def test_devices_without_heart_rate_are_never_called_not_worn() -> None:
    st = StaleTracker(not_worn_readings=3)
    for i in range(10):
        assert read(st, T0 + i * 60, hr=None, steps=None, device="bp_cuff") == []
    # ...but a device that reports a zero pulse does measure pulse.
    out = [c for i in range(3) for c in read(st, T0 + i * 60, hr=0, steps=0, device="band")]
    assert kinds(out) == ["not_worn"]


# --- offline / online status ------------------------------------------------------------------


def test_offline_status_is_reported_once_and_suppresses_stale() -> None:
    st = StaleTracker()
    read(st, T0)
    [c] = st.status("p1", "watch", False, T0 + 30)
    assert (c.kind, c.since, c.detail) == ("offline", T0 + 30, {"last_seen": T0})
    assert st.status("p1", "watch", False, T0 + 40) == []
    assert st.tick(T0 + 10_000) == []  # offline already says more than stale
    assert st.state("p1", "watch") == "offline"


def test_online_status_is_reported_and_readings_must_follow() -> None:
    st = StaleTracker()
    read(st, T0)
    st.status("p1", "watch", False, T0 + 30)
    [c] = st.status("p1", "watch", True, T0 + 1000)
    assert (c.kind, c.since, c.detail) == ("online", T0 + 1000, {"via": "status"})
    assert st.state("p1", "watch") == "active"
    # Connected but not sending: stale after factor x interval from coming back online.
    assert st.tick(T0 + 1179) == []
    [c] = st.tick(T0 + 1180)
    assert (c.kind, c.since) == ("stale", T0 + 1000)
    assert kinds(read(st, T0 + 1200)) == ["recovered"]


def test_a_reading_while_offline_is_proof_of_life() -> None:
    st = StaleTracker()
    read(st, T0)
    st.tick(T0 + 200)  # stale
    st.status("p1", "watch", False, T0 + 300)  # then the broker publishes its LWT
    changes = read(st, T0 + 400)
    assert [(c.kind, c.detail.get("via")) for c in changes] == [
        ("online", "reading"),
        ("recovered", None),
    ]
    assert st.state("p1", "watch") == "active"


def test_retained_status_for_unknown_devices() -> None:
    st = StaleTracker()
    assert st.status("p1", "ring", True, T0) == []  # no change to report...
    assert st.tick(T0 + 179) == []
    [c] = st.tick(T0 + 180)  # ...but it is expected to send readings
    assert (c.device, c.kind, c.detail["last_seen"]) == ("ring", "stale", None)
    [c] = st.status("p1", "scale", False, T0)
    assert (c.kind, c.detail) == ("offline", {"last_seen": None})


# --- values and views -------------------------------------------------------------------------


def test_state_change_is_a_frozen_value_and_snapshot_is_json() -> None:
    st = StaleTracker()
    read(st, T0)
    [c] = st.tick(T0 + 180)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.kind = "recovered"  # type: ignore[misc]
    assert c.to_dict()["kind"] == "stale" and c.to_dict()["device"] == "watch"
    snap = json.loads(json.dumps(st.snapshot()))
    assert snap["p1"]["watch"]["state"] == "stale"
    assert snap["p1"]["watch"]["last_seen"] == T0
    assert snap["p1"]["watch"]["last_change_at"] == T0
    assert st.last_seen("p1", "nothing") is None and st.state("p1", "nothing") is None
    st.forget("p1")
    assert st.snapshot() == {}


def test_invalid_configuration() -> None:
    with pytest.raises(ValueError):
        StaleTracker(factor=1.0)
    with pytest.raises(ValueError):
        StaleTracker(not_worn_readings=0)
