"""MEOWS in pregnancy: one red or two yellows trigger; consciousness V is yellow, P/U/C red."""

from __future__ import annotations

from gateway.monitor.meows import score_meows
from gateway.monitor.profile import Profile
from gateway.monitor.ranges import ranges_for

R = ranges_for(Profile(age=30, sex="female", conditions=frozenset({"pregnancy"})))
NORMAL = {"heart_rate": 90.0, "respiratory_rate": 16.0, "spo2": 98.0, "temperature_c": 36.8,
          "systolic_bp": 118.0}  # fmt: skip


def test_normal_is_white_and_complete() -> None:
    m = score_meows(NORMAL, R, "A")
    assert not m.triggered and m.complete and m.level == "low"
    assert set(m.colours.values()) == {"white"}


def test_one_yellow_does_not_trigger_two_do() -> None:
    assert not score_meows(NORMAL | {"heart_rate": 110.0}, R, None).triggered
    m = score_meows(NORMAL | {"heart_rate": 110.0, "systolic_bp": 145.0}, R, None)
    assert m.triggered and sorted(m.yellow) == ["heart_rate", "systolic_bp"] and m.level == "medium"


def test_one_red_triggers() -> None:
    for vital, value in (("heart_rate", 125.0), ("spo2", 94.0), ("temperature_c", 38.3),
                         ("systolic_bp", 162.0), ("respiratory_rate", 31.0)):  # fmt: skip
        m = score_meows(NORMAL | {vital: value}, R, None)
        assert m.triggered and m.red == (vital,), vital


def test_consciousness() -> None:
    assert score_meows(NORMAL, R, "V").yellow == ("consciousness",)
    for level in ("P", "U", "C"):
        assert score_meows(NORMAL, R, level).red == ("consciousness",)


def test_missing_parameters_make_it_incomplete() -> None:
    m = score_meows({"heart_rate": 90.0}, R, None)
    assert not m.complete and "systolic_bp" in m.missing
    d = m.to_dict()
    assert d["score"] == "MEOWS" and d["complete"] is False
