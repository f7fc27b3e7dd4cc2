"""The scenarios' effects (simulators/scenarios.py): names are checked, effects ramp in along
an S curve from nothing, and the body scenarios each change the physiology."""

from __future__ import annotations

import pytest

from simulators.scenarios import SCENARIOS, Effects, check_scenario, effects, smooth


def test_unknown_scenario_names_the_known_ones() -> None:
    check_scenario("normal")
    with pytest.raises(ValueError, match="known: normal, bradycardia"):
        check_scenario("zombie")


def test_smooth_ramps_from_zero_to_one() -> None:
    assert (smooth(-5, 100), smooth(0, 100), smooth(50, 100), smooth(500, 100)) == (
        0.0,
        0.0,
        0.5,
        1.0,
    )


@pytest.mark.parametrize("scenario", ["bradycardia", "tachycardia_rest", "hypoxia", "fever"])
def test_body_scenarios_start_from_nothing_and_then_act(scenario: str) -> None:
    assert effects(scenario, 0.0) != effects(scenario, 3600.0)


def test_device_scenarios_leave_the_body_alone() -> None:
    for name in ("normal", "glitch", "frozen", "not_worn", "battery_dying"):
        assert name in SCENARIOS
        assert effects(name, 600.0) == Effects()
