"""A person's ranges looked up per reading, computed once per profile and state."""

from __future__ import annotations

from collections.abc import Mapping

from gateway.monitor.profile import Profile
from gateway.monitor.ranges import Activity, VitalRange, ranges_for


class RangeBook:
    """One person's ranges in each activity state, computed once for their profile.

    The ranges depend on the profile (age and age in days on the local date, sex, conditions
    with pregnancy, medications, the household's overrides) and on the state of the reading:
    activity (rest/active), asleep, and whether the SpO2 is a wrist's. The profile is frozen
    and rebuilt when any of its inputs moves (a new local date: `PersonState.reprofile`), so a
    book is tied to one profile object and answers for it only; each state is computed on
    first use and then looked up (no profile hash per reading, as `ranges_for` needs)."""

    __slots__ = ("_by_state", "profile")

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self._by_state: dict[tuple[Activity, bool, bool], Mapping[str, VitalRange]] = {}

    def get(
        self, activity: Activity = "rest", asleep: bool = False, wrist: bool = False
    ) -> Mapping[str, VitalRange]:
        """The same mapping `ranges_for(profile, activity, asleep, wrist)` returns."""
        key = (activity, asleep, wrist)
        got = self._by_state.get(key)
        if got is None:
            got = self._by_state[key] = ranges_for(self.profile, activity, asleep, wrist)
        return got
