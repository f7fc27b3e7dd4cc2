"""What the person is doing when a reading is taken: at rest, active (purposeful stepping) or
recovering from it, and asleep or awake. The ranges and the confirmation rules read it
(docs/clinical.md §2, "Context").

* **Activity.** A reading whose cadence over its interval reaches 40 steps a minute is
  *active* (`activity_from_steps`). For `RECOVERY_S` after the last active reading the
  person is *recovering*: heart rate and breathing come down over minutes, not at once (Cole
  1999: a normal heart-rate recovery is only 12+ beats in the first minute; breathing is back
  near rest within 5-10 minutes), so the activity limits still apply. Readings taken while
  active or recovering judge heart rate and breathing against the activity limits, and the
  resting scores (NEWS2, MEOWS) are scored without them.
* **Sleep.** From the device's own sleep stages (a reading with more minutes asleep than
  awake), kept for `SLEEP_REPORT_S`. A device that has never reported sleep falls back to
  the household's night hours with no steps in the reading (asleep is the likelier state; the
  only effect is a lower heart-rate and breathing floor that never moves a NEWS2 red band or a
  critical limit, and a longer SpO2 window for brief nocturnal dips).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal
from zoneinfo import ZoneInfo

from gateway.contract.values import Reading

Activity = Literal["rest", "active", "recovering"]
# Rest below this many steps per minute, averaged over the reading's interval. Tudor-Locke's
# free-living cadence bands: 1-19 incidental, 20-39 sporadic, 40-59 purposeful stepping; only
# from purposeful stepping on is a raised heart rate expected. Calling pottering about "active"
# would hide a resting tachycardia, so the error is put on the safe (rest) side.
ACTIVE_CADENCE_SPM = 40.0
RECOVERY_S = 600.0
SLEEP_REPORT_S = 600.0
NIGHT_START_H = 22  # local hours counted as night for a device that reports no sleep
NIGHT_END_H = 7
QUIET_STEPS = 5  # steps in a reading that still count as lying still


def activity_from_steps(steps: int | None, interval_s: float) -> Literal["rest", "active"]:
    """'active' when the steps counted over the reading's interval reach ACTIVE_CADENCE_SPM."""
    if not interval_s > 0:
        raise ValueError("interval_s must be positive")
    if steps is None or steps <= 0:
        return "rest"  # no evidence of movement: the stricter resting limits are the safe side
    return "active" if steps * 60.0 / interval_s >= ACTIVE_CADENCE_SPM else "rest"


@dataclass(frozen=True, slots=True)
class Context:
    """The reading's state. `moving` and `exercising` are fields, not properties: the
    confirmation step asks them per vital, and a property is a call into this module each
    time (bench/reading_walk.py counted 20 of a reading's ~90 stays here)."""

    activity: Activity
    asleep: bool
    # Walking or running in this very reading (a single odd value is likelier motion).
    moving: bool = field(init=False)
    # Active or recovering: heart rate and breathing are judged by the activity limits.
    exercising: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "moving", self.activity == "active")
        object.__setattr__(self, "exercising", self.activity != "rest")


REST_AWAKE = Context("rest", False)


@dataclass(slots=True)
class _Device:
    last_active: float | None = None
    sleep_reported: float | None = None  # last time it sent sleep stages
    asleep: bool = False
    reports_sleep: bool = False


class ContextTracker:
    """Per (person, device): the last active reading and the last sleep report. Readings are
    judged on their own timeline (`ts`), so a synced day replays its walks and nights."""

    def __init__(self, timezone: str) -> None:
        self._tz = ZoneInfo(timezone)
        self._devices: dict[tuple[str, str], _Device] = {}
        # person -> last active ts across their devices (a cuff after a walk is "recovering").
        self._person_active: dict[str, float] = {}

    def observe(self, r: Reading, interval: float) -> Context:
        d = self._devices.get((r.person, r.device))
        if d is None:
            d = self._devices[(r.person, r.device)] = _Device()
        if activity_from_steps(r.steps, interval) == "active":
            d.last_active = r.ts
            prev = self._person_active.get(r.person)
            if prev is None or prev < r.ts:
                self._person_active[r.person] = r.ts
            activity: Activity = "active"
        else:
            last = self._person_active.get(r.person)
            recovering = last is not None and 0 <= r.ts - last <= RECOVERY_S
            activity = "recovering" if recovering else "rest"
        asleep = self._asleep(d, r, activity)
        return Context(activity, asleep)

    def _asleep(self, d: _Device, r: Reading, activity: Activity) -> bool:
        if r.sleep is not None:
            d.reports_sleep = True
            d.sleep_reported = r.ts
            d.asleep = _asleep_stages(r.sleep)
            return d.asleep and activity == "rest"
        if d.reports_sleep and d.sleep_reported is not None:
            return (
                d.asleep and activity == "rest" and abs(r.ts - d.sleep_reported) <= SLEEP_REPORT_S
            )
        if activity != "rest" or (r.steps or 0) > QUIET_STEPS:
            return False
        hour = datetime.fromtimestamp(r.ts, self._tz).hour
        return hour >= NIGHT_START_H or hour < NIGHT_END_H

    def forget(self, person: str) -> None:
        for key in [k for k in self._devices if k[0] == person]:
            del self._devices[key]
        self._person_active.pop(person, None)


def _asleep_stages(sleep: Mapping[str, float]) -> bool:
    asleep = sum(float(sleep.get(k, 0) or 0) for k in ("deep", "light", "rem"))
    return asleep > float(sleep.get("awake", 0) or 0)
