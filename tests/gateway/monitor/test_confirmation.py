"""Alarm precision through the monitor, on the ordinary-day library's household (watches
read once a minute, cuffs, a thermometer): priorities, device kinds, wrist confirmation,
single-reading questions and their withdrawal, wrist temperature, a child's fever, an open
hard SOS. docs/clinical.md §2b and §6."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from gateway.base.clock import ManualClock
from gateway.base.settings import Settings
from gateway.contract.topics import EventType
from gateway.contract.values import Event, Reading
from gateway.household.model import load_household
from gateway.monitor.engine import Monitor

ROOT = Path(__file__).resolve().parents[3]
HH = load_household(ROOT / "eval" / "days" / "household.yaml")
NOON = datetime(2026, 10, 6, 12, 0, tzinfo=ZoneInfo("Europe/London")).timestamp()


class Hub:
    def __init__(self, tmp: Path, sos_open: bool = False) -> None:
        self.clock = ManualClock(NOON)
        self.m = Monitor(HH, Settings(data_dir=tmp), clock=self.clock, data_dir=tmp,
                         sos_open=lambda _p: sos_open)  # fmt: skip
        self.events: list[Event] = []

    def read(self, person: str, device: str, every: float = 60, n: int = 1, **v: Any) -> None:
        for _ in range(n):
            self.clock.advance(every)
            self.events += self.m.process(Reading(person, device, self.clock.now(), **v)).events
            self.events += self.m.tick()

    def wait(self, seconds: float) -> None:
        end = self.clock.now() + seconds
        while self.clock.now() < end:
            self.clock.advance(1)
            self.events += self.m.tick()

    def of(self, t: str) -> list[Event]:
        return [e for e in self.events if e.type == t]


WATCH = {"heart_rate": 72, "spo2": 97, "respiratory_rate": 15}


def test_a_mild_value_is_a_low_priority_advisory_nobody_is_asked(tmp_path: Path) -> None:
    h = Hub(tmp_path)
    h.read("elsie", "elsie-watch", n=20, **{**WATCH, "heart_rate": 108})
    (adv,) = h.of(EventType.ADVISORY)
    assert adv.data["priority"] == "low" and adv.data["notify"] is False
    assert adv.data["response"]["ask"] is False and adv.data["response"]["tell_wearer"] is False
    assert not h.of(EventType.SOFT_SOS)


def test_wrist_temperature_is_a_trend_and_a_thermometer_counts(tmp_path: Path) -> None:
    h = Hub(tmp_path)
    h.read("leo", "leo-watch", n=20, heart_rate=110, spo2=98, respiratory_rate=26,
           temperature_c=33.0)  # fmt: skip
    assert not h.of(EventType.ADVISORY) and not h.of(EventType.SOFT_SOS)
    h.read("leo", "leo-thermometer", n=1, temperature_c=39.2)
    assert h.m.latest_vitals("leo")["temperature_c"]["value"] == 39.2


def test_a_single_wrist_reading_in_the_intervention_range_is_asked_then_withdrawn(
    tmp_path: Path,
) -> None:
    h = Hub(tmp_path)
    h.read("elsie", "elsie-watch", n=10, **WATCH)
    h.read("elsie", "elsie-watch", n=1, **{**WATCH, "spo2": 82})
    (ask,) = h.of(EventType.UNCONFIRMED_READING)
    assert ask.data["ask"] is True and ask.data["response"]["on_no_answer"] == "hard_sos"
    assert ask.data["priority"] == "high"
    h.read("elsie", "elsie-watch", n=1, **WATCH)
    assert len(h.of(EventType.QUESTION_WITHDRAWN)) == 1
    h.read("elsie", "elsie-watch", n=10, **WATCH)
    assert not h.of(EventType.SOFT_SOS)


def test_silence_after_a_single_intervention_reading_is_not_a_refutation(tmp_path: Path) -> None:
    h = Hub(tmp_path)
    h.read("elsie", "elsie-watch", n=10, **WATCH)
    h.read("elsie", "elsie-watch", n=1, **{**WATCH, "spo2": 80})
    h.wait(200)
    (soft,) = h.of(EventType.SOFT_SOS)
    assert soft.data["response"]["tier"] == 4 and "not refuted" in soft.data["why"]
    assert not h.of(EventType.QUESTION_WITHDRAWN)


def test_a_sustained_severe_wrist_value_alarms_on_three_of_five(tmp_path: Path) -> None:
    h = Hub(tmp_path)
    h.read("elsie", "elsie-watch", n=10, **WATCH)
    h.read("elsie", "elsie-watch", n=2, **{**WATCH, "spo2": 88})
    assert not h.of(EventType.SOFT_SOS)
    h.read("elsie", "elsie-watch", n=1, **{**WATCH, "spo2": 88})
    (soft,) = h.of(EventType.SOFT_SOS)
    assert soft.data["priority"] == "medium" and "spo2_low" in soft.data["conditions"]


def test_a_vanished_pulse_while_walking_is_held_for_the_next_reading(tmp_path: Path) -> None:
    h = Hub(tmp_path)
    h.read("elsie", "elsie-watch", n=5, **{**WATCH, "steps": 90})
    h.read("elsie", "elsie-watch", n=1, heart_rate=0, spo2=97, steps=90)
    assert not [e for e in h.of(EventType.IMPLAUSIBLE_READING) if e.data.get("ask")]
    h.read("elsie", "elsie-watch", n=1, heart_rate=0, spo2=97, steps=0)
    asks = [e for e in h.of(EventType.IMPLAUSIBLE_READING) if e.data.get("ask")]
    assert len(asks) == 1 and asks[0].data["response"]["on_no_answer"] == "hard_sos"
    h.read("elsie", "elsie-watch", n=1, **WATCH)
    assert len(h.of(EventType.QUESTION_WITHDRAWN)) == 1


def test_a_pregnant_womans_wrist_spo2_94_is_a_yellow_her_oximeters_a_red(
    tmp_path: Path,
) -> None:
    h = Hub(tmp_path)
    h.read("priya", "priya-watch", n=20, heart_rate=85, spo2=94, respiratory_rate=16)
    assert h.of(EventType.ADVISORY) and not h.of(EventType.SOFT_SOS)


def test_a_febrile_toddler_breathing_fast_reaches_the_carers(tmp_path: Path) -> None:
    h = Hub(tmp_path)
    h.read("leo", "leo-watch", n=10, heart_rate=120, spo2=98, respiratory_rate=28)
    h.read("leo", "leo-thermometer", n=1, every=30, temperature_c=38.6)
    h.read("leo", "leo-watch", n=5, heart_rate=130, spo2=98, respiratory_rate=46)
    soft = [e for e in h.of(EventType.SOFT_SOS) if "fever_amber" in e.data["conditions"]]
    assert soft and soft[0].data["response"]["tier"] == 3
    assert soft[0].data["response"]["contacts_now"] is True
    assert "NICE NG143" in soft[0].data["why"]


def test_while_a_hard_sos_is_open_an_alert_asks_nobody(tmp_path: Path) -> None:
    h = Hub(tmp_path, sos_open=True)
    h.read("elsie", "elsie-watch", n=10, **WATCH)
    h.read("elsie", "elsie-watch", n=5, **{**WATCH, "spo2": 88})
    (soft,) = h.of(EventType.SOFT_SOS)
    r = soft.data["response"]
    assert r["ask"] is False and r["tell_wearer"] is False and r["contacts_now"] is False
    assert soft.data["notify"] is False and "hard SOS is open" in soft.data["why"]


@pytest.mark.parametrize("kind", ["fitbit", "Smart Watch"])
def test_unknown_device_kinds_are_refused_with_the_list(kind: str, tmp_path: Path) -> None:
    import yaml

    from gateway.base.errors import ConfigError

    data = yaml.safe_load((ROOT / "eval" / "days" / "household.yaml").read_text())
    data["persons"][0]["devices"][0]["kind"] = kind
    f = tmp_path / "hh.yaml"
    f.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="unknown device kind; known: watch, ring, oximeter"):
        load_household(f)
