"""Scripted stories for the simulators: which scenario or wearer action happens when, in
seconds of simulated time (`healthgw simulate --story`, and the demo's own story in
healthgw/demo.py), and the Timeline that plays one."""

from __future__ import annotations

from simulators.scenarios import SCENARIOS

# Story steps that are wearer actions, not physiology.
ACTIONS: tuple[str, ...] = ("sos", "sos_end")

StoryStep = tuple[float, str]  # (seconds of simulated time after start, scenario or action)


def story(
    *,
    hypoxia_at: float = 120.0,
    sos_at: float = 300.0,
    sos_end_at: float = 480.0,
    recover_at: float | None = None,
) -> list[StoryStep]:
    """The demo: a normal morning, SpO2 falls (soft SOS), the wearer presses SOS, help comes
    and SOS ends, vitals recover."""
    steps = [
        (0.0, "normal"),
        (hypoxia_at, "hypoxia"),
        (sos_at, "sos"),
        (sos_end_at, "sos_end"),
        (sos_end_at if recover_at is None else recover_at, "normal"),
    ]
    return sorted(steps, key=lambda s: s[0])


class Timeline:
    """Plays a story: `due(offset)` returns the steps whose time has come, each once."""

    def __init__(self, steps: list[StoryStep], *, extra_actions: tuple[str, ...] = ()) -> None:
        for _, name in steps:
            if name not in SCENARIOS and name not in ACTIONS and name not in extra_actions:
                raise ValueError(f"unknown story step {name!r}")
        self._steps = sorted(steps, key=lambda s: s[0])
        self._next = 0

    def due(self, offset: float) -> list[str]:
        out: list[str] = []
        while self._next < len(self._steps) and self._steps[self._next][0] <= offset:
            out.append(self._steps[self._next][1])
            self._next += 1
        return out

    @property
    def steps(self) -> list[StoryStep]:
        return list(self._steps)

    @property
    def next_at(self) -> float | None:
        return self._steps[self._next][0] if self._next < len(self._steps) else None
