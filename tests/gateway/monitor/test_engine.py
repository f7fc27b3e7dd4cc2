"""The monitor engine on its own: readings in, events out, with a hand-moved clock."""

from __future__ import annotations

from pathlib import Path

from gateway.base.clock import ManualClock
from gateway.base.settings import Settings
from gateway.contract.topics import EventType
from gateway.contract.values import Event, Reading
from gateway.household.model import load_household
from gateway.monitor.engine import Monitor

ROOT = Path(__file__).resolve().parents[3]
HH = load_household(ROOT / "examples" / "household.yaml")


def make(tmp_path: Path) -> tuple[Monitor, ManualClock]:
    clock = ManualClock(1_790_000_000.0)
    return Monitor(HH, Settings(data_dir=tmp_path), clock=clock, data_dir=tmp_path), clock


def feed(
    m: Monitor, clock: ManualClock, person: str, device: str, n: int, **v: float
) -> list[Event]:
    out: list[Event] = []
    for _ in range(n):
        clock.advance(5)
        out += m.process(Reading(person, device, clock.now(), **v)).events  # type: ignore[arg-type]
    return out


def types(events: list[Event]) -> list[str]:
    return [str(e.type) for e in events]


def test_soft_sos_needs_three_consecutive_abnormal_readings(tmp_path: Path) -> None:
    m, clock = make(tmp_path)
    assert EventType.SOFT_SOS not in types(
        feed(m, clock, "dad", "watch-jon", 2, spo2=89, heart_rate=80)
    )
    ev = feed(m, clock, "dad", "watch-jon", 1, spo2=89, heart_rate=80)
    soft = [e for e in ev if e.type == EventType.SOFT_SOS]
    assert len(soft) == 1
    d = soft[0].data
    # SpO2 89 is critical for an adult and scores 3 in NEWS2: a single red parameter
    # (low-medium). Both open together, in one soft SOS.
    assert sorted(d["conditions"]) == ["news2", "spo2_low"] and d["high"] is False
    assert d["response"]["on_no_answer"] == "contacts" and d["response"]["ask"] is True
    assert d["abnormal"]["spo2"]["value"] == 89 and d["abnormal"]["spo2"]["normal"] == [95.0, 100.0]
    assert "oxygen saturation 89%" in d["why"] and "NEWS2" in d["why"]
    # Still abnormal: no repeat.
    assert EventType.SOFT_SOS not in types(
        feed(m, clock, "dad", "watch-jon", 5, spo2=89, heart_rate=80)
    )


def test_same_spo2_is_normal_for_a_hypercapnic_copd_patient(tmp_path: Path) -> None:
    m, clock = make(tmp_path)
    ev = feed(m, clock, "grandma", "watch-maria", 5, spo2=89, heart_rate=70)
    assert EventType.SOFT_SOS not in types(ev)
    out = m.process(Reading("grandma", "watch-maria", clock.now() + 5, spo2=89, heart_rate=70))
    assert out.news2_total == 0  # scale 2: 88-92 scores 0


def test_clears_only_past_hysteresis(tmp_path: Path) -> None:
    m, clock = make(tmp_path)
    feed(m, clock, "dad", "watch-jon", 3, spo2=90, heart_rate=80)
    # 95 is back at the normal edge but inside the 1 % hysteresis margin: not cleared.
    assert EventType.ALERT_CLEARED not in types(
        feed(m, clock, "dad", "watch-jon", 4, spo2=95, heart_rate=80)
    )
    # A watch's value is what two of its last three readings agree on: the first 97 still
    # sits with two 95s, so clearing takes one reading more than three.
    ev = feed(m, clock, "dad", "watch-jon", 4, spo2=97, heart_rate=80)
    assert types(ev).count(EventType.ALERT_CLEARED) == 1


def test_impossible_values_are_discarded_silently_and_counted(tmp_path: Path) -> None:
    m, clock = make(tmp_path)
    ev = feed(m, clock, "dad", "watch-jon", 4, systolic_bp=500, heart_rate=70)
    assert EventType.SOFT_SOS not in types(ev)
    assert EventType.IMPLAUSIBLE_READING not in types(ev)
    assert m.counters["impossible_systolic_bp"] == 4


def test_possible_but_implausible_values_ask_the_wearer_once(tmp_path: Path) -> None:
    m, clock = make(tmp_path)
    ev = feed(m, clock, "dad", "watch-jon", 4, systolic_bp=300, heart_rate=70)
    assert EventType.SOFT_SOS not in types(ev)
    imp = [e for e in ev if e.type == EventType.IMPLAUSIBLE_READING]
    asks = [e for e in imp if e.data["ask"]]
    assert len(asks) == 1 and asks[0].data["vital"] == "systolic_bp"  # once per episode
    assert asks[0].data["response"]["on_no_answer"] == "hard_sos"
    # A plausible value re-arms the question.
    feed(m, clock, "dad", "watch-jon", 1, systolic_bp=130, heart_rate=70)
    ev = feed(m, clock, "dad", "watch-jon", 1, systolic_bp=300, heart_rate=70)
    assert [e.data["ask"] for e in ev if e.type == EventType.IMPLAUSIBLE_READING] == [True]


def test_news2_combines_recent_vitals_from_separate_readings(tmp_path: Path) -> None:
    m, clock = make(tmp_path)
    # (A watch's values count once two of its readings agree: two of each.)
    for _ in range(2):
        clock.advance(5)
        m.process(Reading("dad", "watch-jon", clock.now(), systolic_bp=88))
    for _ in range(2):
        clock.advance(5)
        out = m.process(
            Reading("dad", "watch-jon", clock.now(), heart_rate=135, respiratory_rate=26)
        )
    assert out.news2_total == 9 and out.news2_level == "high"  # BP 3 + HR 3 + RR 3


def test_several_conditions_in_one_reading_make_one_soft_sos(tmp_path: Path) -> None:
    m, clock = make(tmp_path)
    ev = feed(m, clock, "dad", "watch-jon", 3, spo2=86, heart_rate=135, respiratory_rate=27)
    soft = [e for e in ev if e.type == EventType.SOFT_SOS]
    assert len(soft) == 1
    assert set(soft[0].data["conditions"]) >= {
        "spo2_low",
        "heart_rate_high",
        "respiratory_rate_high",
        "news2",
    }
    assert soft[0].data["advice"].startswith("Call emergency services")


def test_fall_and_battery_and_location(tmp_path: Path) -> None:
    m, clock = make(tmp_path)
    clock.advance(5)
    out = m.process(
        Reading(
            "dad",
            "watch-jon",
            clock.now(),
            heart_rate=80,
            fall_detected=True,
            battery=9,
            latitude=51.5,
            longitude=-0.1,
        )
    )
    assert {EventType.FALL_DETECTED, EventType.BATTERY_LOW} <= set(types(out.events))
    assert m.last_location("dad") == (51.5, -0.1)


def test_open_alerts_survive_a_restart(tmp_path: Path) -> None:
    m, clock = make(tmp_path)
    feed(m, clock, "dad", "watch-jon", 3, spo2=88, heart_rate=80)
    m.save_state()
    m2 = Monitor(HH, Settings(data_dir=tmp_path), clock=clock, data_dir=tmp_path)
    assert sorted(a["condition"] for a in m2.open_alerts("dad")) == ["news2", "spo2_low"]
    # Still low after the restart: the open alert continues, no new soft SOS.
    assert EventType.SOFT_SOS not in types(
        feed(m2, clock, "dad", "watch-jon", 3, spo2=88, heart_rate=80)
    )


def test_the_news2_shown_before_a_restart_is_shown_after_it(tmp_path: Path) -> None:
    m, clock = make(tmp_path)
    feed(m, clock, "dad", "watch-jon", 2, spo2=93, heart_rate=95, respiratory_rate=22)
    before = m.latest_news2("dad")
    assert before is not None and before["total"] > 0
    # What the store hands back on start: each device's last row (raw values and flags).
    row = {"ts": clock.now(), "spo2": 93, "heart_rate": 95, "respiratory_rate": 22, "flags": []}
    m2 = Monitor(HH, Settings(data_dir=tmp_path), clock=clock, data_dir=tmp_path)
    assert m2.latest_news2("dad") is None
    m2.seed_latest({("dad", "watch-jon"): row})
    assert m2.latest_news2("dad") == before
    assert m2.latest_news2("grandma") is None  # no stored reading: still no score


def test_stale_device_reported_once(tmp_path: Path) -> None:
    m, clock = make(tmp_path)
    feed(m, clock, "dad", "watch-jon", 1, heart_rate=70)
    clock.advance(5 * 3 + 1)  # watch-jon interval is 5 s; stale after 3x
    first = m.tick()
    clock.advance(30)
    assert types(first) == [EventType.DEVICE_STALE] and m.tick() == []
    assert m.device_state("dad", "watch-jon") == "stale"


def test_a_second_condition_is_announced_too(tmp_path: Path) -> None:
    m, clock = make(tmp_path)
    first = [
        e
        for e in feed(m, clock, "dad", "watch-jon", 3, spo2=90, heart_rate=80)
        if e.type == EventType.SOFT_SOS
    ]
    assert first and first[0].data["notify"] is True  # spo2 critical: told
    later = [
        e
        for e in feed(m, clock, "dad", "watch-jon", 3, spo2=90, heart_rate=135)
        if e.type == EventType.SOFT_SOS
    ]
    assert later and "heart_rate_high" in later[0].data["conditions"]
    # Another condition opening while one is open is news (issue 10, finding 6).
    assert later[0].data["notify"] is True


def test_ages_move_on_while_the_hub_runs(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    clock = ManualClock(1_790_000_000.0)
    today = datetime.fromtimestamp(clock.now(), UTC).date()
    hh_path = tmp_path / "hh.yaml"
    hh_path.write_text(
        "persons:\n"
        "  - id: baby\n    name: Baby\n"
        f"    birth_date: {(today - timedelta(days=90)).isoformat()}\n"
        "    sex: female\n    location: {latitude: 51.5, longitude: -0.1}\n"
        "    devices: [{id: sock, interval_s: 1800, core_temperature: true}]\n"
    )
    m = Monitor(
        load_household(hh_path), Settings(data_dir=tmp_path), clock=clock, data_dir=tmp_path
    )
    out = m.process(Reading("baby", "sock", clock.now(), temperature_c=38.2))
    soft = [e for e in out.events if e.type == EventType.SOFT_SOS]
    assert soft and soft[0].data["response"]["tier"] == 4  # under 3 months: NICE red
    clock.advance(3 * 86400)  # now 93 days old
    m.tick()
    out = m.process(Reading("baby", "sock", clock.now(), temperature_c=38.2, seq=2))
    profile = m.profile("baby")
    assert profile is not None and profile.age_days == 93
