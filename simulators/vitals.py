"""A seeded, per-person wearable vitals model: circadian rhythm, sleep stages, activity bouts,
sensor noise, and scripted scenarios (what each does to the body: simulators/scenarios.py;
played over time by simulators/story.py). Pure: no I/O and no clock (the caller passes `ts`).

Each vital is a slow "level" that follows a target with a physiological lag, plus
Ornstein-Uhlenbeck noise (real physiology wanders) and per-reading sensor noise, rounded like a
watch rounds. Scenarios change the targets as a function of time since the scenario started,
ramping in, so switching back to "normal" recovers gradually too.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from gateway.base.errors import HealthGWError
from gateway.contract.topics import format_ts
from simulators.scenarios import Effects, check_scenario, effects

if TYPE_CHECKING:
    from gateway.household.model import Person

BETA_BLOCKERS: tuple[str, ...] = (
    "atenolol",
    "bisoprolol",
    "carvedilol",
    "metoprolol",
    "nebivolol",
    "propranolol",
)
BATTERY_DYING_S = 300.0  # battery_dying: from its level at scenario start to 0 in this time
_STAGE_HR = {"deep": -4.0, "light": 0.0, "rem": 3.0, "awake": 7.0}
_GLITCHES: tuple[tuple[str, tuple[float, ...]], ...] = (
    ("heart_rate", (250, 243, 255, 12)),
    ("spo2", (40, 37, 45)),
    ("temperature_c", (44.8, 25.1)),
    ("respiratory_rate", (70, 2)),
)


class DeviceSilent(HealthGWError, RuntimeError):
    """The battery is flat: the device sends nothing more."""


def _toward(level: float, target: float, dt: float, tau: float) -> float:
    return target + (level - target) * math.exp(-dt / tau)


def _lerp(a: float, b: float, w: float) -> float:
    return a + (b - a) * w


def _clamp(x: float, lo: float, hi: float) -> float:
    return min(max(x, lo), hi)


@dataclass(slots=True)
class _Noise:
    """Ornstein-Uhlenbeck noise: wanders around 0 with time constant `tau` seconds."""

    tau: float
    sigma: float
    x: float = 0.0

    def step(self, rng: random.Random, dt: float) -> float:
        a = math.exp(-dt / self.tau)
        self.x = self.x * a + self.sigma * math.sqrt(1.0 - a * a) * rng.gauss(0.0, 1.0)
        return self.x


class VitalsModel:
    """One wearer's vitals. `next(ts)` returns a payload dict valid against VitalsPayload."""

    def __init__(
        self,
        person_id: str,
        *,
        seed: int | str = 0,
        age: int = 45,
        sex: str = "female",
        resting_hr: float | None = None,
        spo2_baseline: float | None = None,
        beta_blocker: bool = False,
        hypertension: bool = False,
        interval_s: float = 5.0,
        scenario: str = "normal",
        start_ts: float,
        timezone: str = "UTC",
        home: tuple[float, float] | None = None,
        battery: float | None = None,
        bp_every: int | None = None,
    ) -> None:
        check_scenario(scenario)
        self.person_id = person_id
        self.interval_s = float(interval_s)
        # The person id is mixed in so a fleet sharing one seed still has distinct wearers.
        rng = self._rng = random.Random(f"healthgw-vitals:{seed}:{person_id}")
        female = {"female": 1.0, "male": 0.0}.get(sex, 0.5)
        if resting_hr is None:
            resting_hr = _clamp(rng.gauss(65 + 4 * female, 5), 58, 80) - (6 if beta_blocker else 0)
        self.resting_hr = float(resting_hr)
        self._sleep_floor = 52.0 if beta_blocker else 55.0
        self.max_hr = 220.0 - age
        self.spo2_base = spo2_baseline or 97.6 - 0.02 * max(0, age - 50)
        older = max(0, age - 25)
        self._sys_base = _clamp(114 + 0.45 * older - 4 * female + rng.gauss(0, 5), 112, 132)
        self._dia_base = _clamp(72 + 0.2 * older + rng.gauss(0, 3), 68, 82)
        if hypertension:  # treated, so only moderately above the age norm
            self._sys_base = min(self._sys_base + 8, 136)
            self._dia_base = min(self._dia_base + 4, 86)
        self._temp_base = _clamp(36.75 + rng.gauss(0, 0.08), 36.6, 36.9)
        self._rr_base = _clamp(14.8 + rng.gauss(0, 0.8), 14, 16)
        self._bed = 22.3 + rng.random() * 1.2
        self._wake = 6.2 + rng.random() * 1.1
        self._tz = ZoneInfo(timezone)
        self._home = home
        self._bp_every = bp_every or max(1, round(60 / self.interval_s))
        self._since_bp = self._bp_every - 1  # the first reading has one
        self._loc_every = max(1, round(300 / self.interval_s))

        self._hr_n = _Noise(120, 3.0)
        self._spo2_n = _Noise(300, 0.5)
        self._rr_n = _Noise(180, 0.6)
        self._temp_n = _Noise(1800, 0.08)
        self._sys_n = _Noise(900, 3.0)
        self._dia_n = _Noise(900, 2.5)
        self._hr = self.resting_hr + 6
        self._spo2 = self.spo2_base
        self._rr = self._rr_base
        self._temp = self._temp_base
        self._sys = self._sys_base
        self._dia = self._dia_base

        self.seq = 0
        self.battery = float(battery) if battery is not None else rng.uniform(55, 100)
        self.alive = True
        self._charging = False
        self._last_ts = start_ts - self.interval_s
        self._bout_until = -math.inf
        self._cadence = 0.0
        self._awake_until = -math.inf
        self._heading = 0.0
        self._offset = (0.0, 0.0)  # metres north, east of home
        self.set_scenario(scenario, start_ts)

    # --- public ------------------------------------------------------------------------------

    @property
    def scenario(self) -> str:
        return self._scenario

    def set_scenario(self, name: str, ts: float) -> None:
        """Switch scenario at `ts`; the new one ramps in from there."""
        check_scenario(name)
        self._scenario = name
        self._scenario_start = ts
        self._scenario_battery = self.battery
        self._fall_reported = False
        self._frozen: dict[str, Any] | None = None
        self._glitch_in = self._rng.randint(5, 20)

    def location(self) -> dict[str, float] | None:
        """Where the wearer is now (home plus any walk), or None without a home."""
        if self._home is None:
            return None
        lat, lon = self._home
        north, east = self._offset
        return {
            "latitude": round(lat + north / 111_320, 5),
            "longitude": round(lon + east / (111_320 * math.cos(math.radians(lat))), 5),
        }

    def next(self, ts: float) -> dict[str, Any]:
        """The reading at `ts` (later than the previous one). Raises DeviceSilent once dead."""
        if not self.alive:
            raise DeviceSilent(f"{self.person_id}: battery is flat")
        dt = _clamp(ts - self._last_ts, 1e-3, 3600.0)
        self._last_ts = ts
        t = ts - self._scenario_start
        fx = effects(self._scenario, t)
        hour = self._hour(ts)
        stage = None if self._scenario == "fall" else self._stage(ts, dt, hour)
        steps, intensity = self._move(ts, dt, hour, stage is not None or fx.still)
        vitals = self._physiology(dt, hour, stage, intensity, fx)
        vitals["steps"] = steps

        payload: dict[str, Any] = {"ts": format_ts(ts), "seq": self.seq}
        if self._scenario == "not_worn":
            # Off the wrist the optical sensors read nothing; only the step counter reports.
            payload["steps"] = 0
        elif self._scenario == "frozen":
            if self._frozen is None:
                self._frozen = vitals
            payload.update(self._frozen)
        else:
            if self._scenario == "glitch":
                vitals = self._glitch(vitals)
            payload.update(vitals)
            if stage is not None:
                sleep = dict.fromkeys(_STAGE_HR, 0.0)
                sleep[stage] = round(dt / 60, 3)
                payload["sleep"] = sleep
        fell = self._scenario == "fall" and not self._fall_reported
        if fell:
            payload["fall_detected"] = True
            self._fall_reported = True
        payload["battery"] = math.ceil(self._drain(t, dt, intensity))  # 0 % only when dead
        loc = self.location()
        if loc is not None and (fell or self.seq % self._loc_every == 0):
            payload["location"] = loc
        self.seq += 1
        return payload

    # --- internals -----------------------------------------------------------------------------

    def _hour(self, ts: float) -> float:
        d = datetime.fromtimestamp(ts, self._tz)
        return d.hour + d.minute / 60 + d.second / 3600

    def _stage(self, ts: float, dt: float, hour: float) -> str | None:
        """Sleep stage in bed, else None: ~92-minute cycles, deep early, REM late."""
        if not (hour >= self._bed or hour < self._wake):
            return None
        if ts < self._awake_until:
            return "awake"
        if self._rng.random() < 0.012 * dt / 60:  # a night awakening now and then
            self._awake_until = ts + self._rng.uniform(60, 420)
            return "awake"
        minutes = ((hour - self._bed) % 24) * 60
        night = max(((self._wake - self._bed) % 24) * 60, 1.0)
        f = minutes / night
        phase = (minutes % 92) / 92
        if 0.12 <= phase < 0.12 + 0.4 * (1 - f):
            return "deep"
        if phase >= 0.9 - (0.1 + 0.25 * f) and phase < 0.97:
            return "rem"
        return "light"

    def _move(self, ts: float, dt: float, hour: float, resting: bool) -> tuple[int, float]:
        """Steps since the last reading and an exercise intensity 0..1."""
        rng = self._rng
        if resting:
            self._bout_until = min(self._bout_until, ts)
            self._settle(dt)
            return 0, 0.0
        if ts >= self._bout_until:
            self._settle(dt)
            per_min = 0.045 if (7 <= hour < 9 or 17 <= hour < 20) else 0.015
            if rng.random() < per_min * dt / 60:
                self._bout_until = ts + rng.uniform(90, 1500)
                self._cadence = _clamp(rng.gauss(105, 12), 70, 135)
                self._heading = rng.uniform(0, 2 * math.pi)
            elif rng.random() < min(1.0, 0.15 * dt / 5):  # pottering about the home
                return rng.randint(1, max(1, round(1.2 * dt))), 0.03
            else:
                return 0, 0.0
        cadence = self._cadence * (1 + rng.gauss(0, 0.05))
        steps = max(0, round(cadence * dt / 60))
        self._heading += rng.gauss(0, 0.2)
        metres = steps * 0.75
        north, east = self._offset
        self._offset = (
            north + metres * math.cos(self._heading),
            east + metres * math.sin(self._heading),
        )
        return steps, max(0.0, (cadence - 60) / 100)

    def _settle(self, dt: float) -> None:
        """Back home after a walk (only matters for the reported location)."""
        k = math.exp(-dt / 600)
        self._offset = (self._offset[0] * k, self._offset[1] * k)

    def _physiology(
        self, dt: float, hour: float, stage: str | None, intensity: float, fx: Effects
    ) -> dict[str, Any]:
        rng = self._rng
        asleep = stage is not None
        circ = math.cos(2 * math.pi * (hour - 16) / 24)  # peaks late afternoon
        if asleep:
            # Floored so a healthy sleeper does not cross the monitor's bradycardia line.
            hr_t = max(self.resting_hr - 5 + _STAGE_HR[stage or "light"], self._sleep_floor)
        else:
            hr_t = (
                self.resting_hr + 5 + 3 * circ + intensity * 0.55 * (self.max_hr - self.resting_hr)
            )
        hr_t += fx.hr_add
        if fx.hr_to:
            hr_t = _lerp(hr_t, *fx.hr_to)
        self._hr = _toward(self._hr, min(hr_t, self.max_hr), dt, 30 if hr_t > self._hr else 40)
        wander = self._hr_n.step(rng, dt) * (0.6 if asleep else 1.0)  # steadier in sleep
        hr = self._hr + wander + rng.gauss(0, 1.5)

        spo2_t = self.spo2_base - (0.5 if asleep else 0.0)
        if fx.spo2_to:
            spo2_t = _lerp(spo2_t, *fx.spo2_to)
        self._spo2 = _toward(self._spo2, spo2_t, dt, 40)
        spo2 = self._spo2 + self._spo2_n.step(rng, dt) + rng.gauss(0, 0.7)

        rr_t = self._rr_base - (0.3 if asleep else 0.0) + 5 * intensity + fx.rr_add
        self._rr = _toward(self._rr, rr_t, dt, 45)
        rr = self._rr + self._rr_n.step(rng, dt) + rng.gauss(0, 0.5)

        temp_t = self._temp_base + 0.25 * math.cos(2 * math.pi * (hour - 17) / 24)
        self._temp = _toward(self._temp, temp_t + 0.3 * intensity + fx.temp_add, dt, 300)
        temp = self._temp + self._temp_n.step(rng, dt) + rng.gauss(0, 0.04)

        # Nocturnal dipping, floored: a healthy sleeper is not hypotensive.
        sys_t = max(self._sys_base * 0.93, 111) if asleep else self._sys_base + 15 * intensity
        dia_t = max(self._dia_base * 0.93, 67) if asleep else self._dia_base + 6 * intensity
        if fx.bp_to:
            sys_t = _lerp(sys_t, fx.bp_to[0], fx.bp_to[2])
            dia_t = _lerp(dia_t, fx.bp_to[1], fx.bp_to[2])
        self._sys = _toward(self._sys, sys_t, dt, 120)
        self._dia = _toward(self._dia, dia_t, dt, 120)
        sys_n, dia_n = self._sys_n.step(rng, dt), self._dia_n.step(rng, dt)

        vitals: dict[str, Any] = {
            "heart_rate": round(_clamp(hr, 25, 230)),
            "spo2": round(_clamp(spo2, 50, 100)),
            "temperature_c": round(_clamp(temp, 33, 43), 1),
            "respiratory_rate": round(_clamp(rr, 4, 60)),
        }
        # Cuffless BP is an occasional spot check, taken only while the arm is still.
        self._since_bp += 1
        if self._since_bp >= self._bp_every and intensity < 0.1:
            self._since_bp = 0
            vitals["systolic_bp"] = round(_clamp(self._sys + sys_n + rng.gauss(0, 3), 60, 250))
            vitals["diastolic_bp"] = round(_clamp(self._dia + dia_n + rng.gauss(0, 2), 35, 150))
        return vitals

    def _glitch(self, vitals: dict[str, Any]) -> dict[str, Any]:
        """A rare single-reading implausible spike; the next reading is sane again."""
        self._glitch_in -= 1
        if self._glitch_in > 0:
            return vitals
        self._glitch_in = self._rng.randint(10, 40)
        field, values = self._rng.choice(_GLITCHES)
        return {**vitals, field: self._rng.choice(values)}

    def _drain(self, t: float, dt: float, intensity: float) -> float:
        if self._scenario == "battery_dying":
            self.battery = max(0.0, self._scenario_battery * (1 - t / BATTERY_DYING_S))
            if self.battery <= 0:
                self.alive = False
            return self.battery
        # About 36 h per charge; below 10 % the wearer puts it on the charger (worn, for
        # simplicity) so long simulations never die by accident.
        if self.battery < 10:
            self._charging = True
        if self._charging:
            self.battery = min(100.0, self.battery + dt / 60)
            self._charging = self.battery < 95
        else:
            self.battery = max(0.0, self.battery - dt * (1 + intensity) / 1296)
        return self.battery


def model_for_person(
    person: Person,
    *,
    seed: int | str = 0,
    scenario: str = "normal",
    start_ts: float,
    interval_s: float | None = None,
    timezone: str = "UTC",
) -> VitalsModel:
    """A model shaped by the household entry: age, sex, beta blockers, COPD, hypertension."""
    meds = " ".join(person.medications)
    conditions = " ".join(person.conditions)
    if interval_s is None:
        interval_s = person.devices[0].interval_s if person.devices else 60.0
    return VitalsModel(
        person.id,
        seed=seed,
        age=person.age_on(datetime.fromtimestamp(start_ts, UTC).date()),
        sex=person.sex,
        beta_blocker=any(b in meds for b in BETA_BLOCKERS),
        spo2_baseline=92.5 if "copd" in conditions else None,
        hypertension="hypertension" in conditions,
        interval_s=interval_s,
        scenario=scenario,
        start_ts=start_ts,
        timezone=timezone,
        home=(person.location.latitude, person.location.longitude),
    )
