"""What the monitor keeps across a restart: open alerts, snoozes and pending questions
(`monitor_state.json`, written whenever they change), each person's baselines
(`baseline.json`, when a day completes and on stop) and, from the store, the last readings.
A mixin of `Monitor`, apart from the per-reading work."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.monitor.alert_state import read_state, write_atomic
from gateway.monitor.alerts import AlertTracker
from gateway.monitor.ask_first import Questions
from gateway.monitor.baseline import Baselines
from gateway.monitor.news2_evidence import news2 as news2_score
from gateway.monitor.people import PersonState
from gateway.monitor.scoring import book_view

log = logging.getLogger("gateway.monitor.engine")


@dataclass(frozen=True, slots=True)
class StateBlob:
    """What `write_state` writes: the monitor's state, and the baselines when they changed."""

    state: str
    baseline: str | None = None


class MonitorPersistence:
    """Mixed into Monitor, which holds these."""

    _dirty: bool
    _people: dict[str, PersonState]
    _state_path: Path
    _baseline_path: Path
    alerts: AlertTracker
    questions: Questions
    baseline: Baselines

    @property
    def dirty(self) -> bool:
        return self._dirty or self.questions.dirty or self.baseline.dirty

    def state_blob(self) -> StateBlob:
        """Open alerts, snoozes and pending questions survive a restart (taken on the loop;
        written off it by `write_state`); the baselines too, when a day was completed."""
        baseline = json.dumps(self.baseline.snapshot()) if self.baseline.dirty else None
        self._dirty = self.questions.dirty = False
        state = json.dumps(
            {"alerts": self.alerts.snapshot(), "unconfirmed": self.questions.snapshot()}
        )
        return StateBlob(state, baseline)

    def write_state(self, blob: StateBlob) -> None:
        write_atomic(self._state_path, blob.state)
        if blob.baseline is not None:
            write_atomic(self._baseline_path, blob.baseline)

    def save_state(self) -> None:
        """On stop: everything, the day in progress of the baselines included."""
        self.baseline.dirty = True
        self.write_state(self.state_blob())

    def _load_state(self) -> None:
        data = read_state(self._state_path)
        try:
            self.alerts.restore(data.get("alerts", {}))
            self.questions.restore(data.get("unconfirmed", []))
        except (ValueError, KeyError, TypeError):
            log.warning("monitor state unreadable; starting with no open alerts")
        try:
            self.baseline.restore(read_state(self._baseline_path))
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("baselines unreadable; learning them afresh")

    def seed_latest(self, latest: Mapping[tuple[str, str], Mapping[str, Any]]) -> None:
        """After a restart, treat the stored last readings as the recent past: only the
        values the plausibility check accepted (the store keeps raw values and their flags;
        a pulse of 0 that was asked about must not score NEWS2 red after a restart)."""
        for (person, device), row in latest.items():
            st = self._people.get(person)
            ts = row.get("ts")
            if st is None or not isinstance(ts, int | float):
                continue
            st.seed(device, ts, row)
        # The card's NEWS2 as it was before the restart, scored from those same values (it
        # would read "no score yet" until each person's next reading otherwise).
        for st in self._people.values():
            if st.news2 is None and st.latest and st.news2_applies:
                at = max(t for t, _ in st.latest.values())
                book = book_view(st, st.latest, st.devices, at, st.ranges())
                st.news2 = news2_score(book, at, st.spo2_scale, home_oxygen=st.home_oxygen)
                st.news2_ts = at
