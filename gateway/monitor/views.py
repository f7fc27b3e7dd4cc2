"""What the monitor shows (the API, the console cards, Home Assistant, the person's state):
read-only views over its books, apart from the engine that fills them."""

from __future__ import annotations

from typing import Any

from gateway.contract.response import PRIORITIES
from gateway.monitor.alerts import AlertTracker
from gateway.monitor.devices import DeviceWatch
from gateway.monitor.people import PersonState
from gateway.monitor.ranges import Profile
from gateway.monitor.response import alert_tier


class MonitorViews:
    """Mixed into Monitor, which fills these."""

    _people: dict[str, PersonState]
    _location: dict[str, tuple[float, float]]
    alerts: AlertTracker
    devices: DeviceWatch

    def latest_vitals(self, person: str) -> dict[str, Any]:
        st = self._people.get(person)
        if st is None:
            return {}
        # Measured values, with what the alarms see for what was never shown (consciousness).
        both = {**st.latest, **st.shown}
        return {v: {"value": val, "ts": ts} for v, (ts, val) in both.items()}

    def latest_news2(self, person: str) -> dict[str, Any] | None:
        st = self._people.get(person)
        if st is None or st.news2 is None:
            return None
        return {**st.news2.to_dict(), "ts": st.news2_ts}

    def latest_meows(self, person: str) -> dict[str, Any] | None:
        st = self._people.get(person)
        return None if st is None or st.meows is None else st.meows.to_dict()

    def open_alerts(self, person: str) -> list[dict[str, Any]]:
        """Each open alert with its IEC 60601-1-8 priority ("low": recorded, nobody told;
        "information": mild and usual for the person, baseline.py)."""
        st = self._people.get(person)
        out = []
        for a in self.alerts.open_alerts(person):
            d = a.to_dict()
            tier = (alert_tier(a.condition, a.peak_severity, a.evidence, st.profile)
                    if st is not None else 4)  # fmt: skip
            d["priority"] = PRIORITIES[tier]
            out.append(d)
        return out

    def open_alert_count(self, person: str) -> int:
        return self.alerts.open_count(person)

    def profile(self, person: str) -> Profile | None:
        st = self._people.get(person)
        return None if st is None else st.profile

    def normal_ranges(self, person: str) -> dict[str, tuple[float, float]]:
        """The person's resting normal range per numeric vital (household overrides applied)."""
        st = self._people.get(person)
        if st is None:
            return {}
        return {v: (float(r.normal[0]), float(r.normal[1])) for v, r in st.ranges().items()}

    def last_location(self, person: str) -> tuple[float, float] | None:
        """The latest fix any of the person's devices sent (in memory: on the SOS path)."""
        return self._location.get(person)

    def device_state(self, person: str, device: str) -> str:
        return self.devices.state(person, device)

    def alert_priority(self, person: str) -> str | None:
        """The highest IEC 60601-1-8 priority among the person's open alerts ("low", "medium",
        "high"), or None with no alarm open (Home Assistant and the person's state show it;
        an information signal is not an alarm)."""
        st = self._people.get(person)
        if st is None:
            return None
        tiers = [alert_tier(a.condition, a.peak_severity, a.evidence, st.profile)
                 for a in self.alerts.open_alerts(person)]  # fmt: skip
        return PRIORITIES[max(tiers)] if tiers and max(tiers) > 0 else None
