"""The wearer scenarios the simulators can play: their names, and what each does to the
body at a moment since it started (a target pulled toward a value, beats or breaths added,
lying still), ramped in along an S curve. simulators/vitals.py turns these effects into
readings and plays the scenarios that are about the device rather than the body (glitch,
frozen, not_worn, battery_dying); the CLI and the stories only need the names from here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SCENARIOS: tuple[str, ...] = (
    "normal",
    "bradycardia",
    "tachycardia_rest",
    "hypoxia",
    "fever",
    "hypotension",
    "fall",
    "glitch",
    "frozen",
    "not_worn",
    "battery_dying",
)


def check_scenario(scenario: str) -> None:
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")


def smooth(t: float, duration: float) -> float:
    """0 → 1 over `duration` seconds along an S curve (physiology does not step)."""
    x = min(max(t / duration, 0.0), 1.0)
    return x * x * (3.0 - 2.0 * x)


@dataclass(slots=True)
class Effects:
    """What a scenario does to the physiology at one moment (weights already ramped)."""

    hr_add: float = 0.0
    hr_to: tuple[float, float] | None = None  # (value, weight): pull the HR target toward value
    spo2_to: tuple[float, float] | None = None
    bp_to: tuple[float, float, float] | None = None  # (systolic, diastolic, weight)
    rr_add: float = 0.0
    temp_add: float = 0.0
    still: bool = False  # lying or sitting still: no walks, steps 0


def effects(scenario: str, t: float) -> Effects:
    if scenario == "bradycardia":
        return Effects(hr_to=(40.0, smooth(t, 180)), still=True)
    if scenario == "tachycardia_rest":
        w = smooth(t, 90)
        return Effects(hr_to=(142.0, w), rr_add=4 * w, still=True)
    if scenario == "hypoxia":
        w = smooth(t, 150)
        return Effects(spo2_to=(86.0, w), hr_add=25 * w, rr_add=10 * w, still=True)
    if scenario == "fever":
        w = smooth(t, 1800)
        # ~10 bpm per °C of fever.
        return Effects(temp_add=2.9 * w, hr_add=29 * w, rr_add=5 * w, still=w > 0.5)
    if scenario == "hypotension":
        w = smooth(t, 600)
        return Effects(bp_to=(84.0, 50.0, w), hr_add=18 * w, still=w > 0.5)
    if scenario == "fall":
        # Fright raises HR for a few minutes; the wearer then lies still.
        return Effects(hr_add=22 * math.exp(-t / 300), still=True)
    return Effects()
