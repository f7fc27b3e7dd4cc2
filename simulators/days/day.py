"""One persona's days as a replay trace (healthgw/replay/trace.py's JSON lines).

Minute by minute: sleep or wake, activity bouts and the recovery after them, the true level of
each vital (the persona's own awake, asleep and active levels, a slow drift, nocturnal SpO2
dips, exertional desaturation), then what each device reads: the watch every interval with
its noise, slow bias, single-reading artefacts (motion, lying on the arm, the rare reading in
the intervention or implausible range) and gaps (dropped readings, longer gaps, the daily
charge); a cuff and a thermometer at the persona's times. A deterioration is laid over the
last day from its onset. Seeded: the same (persona, seed, days, deterioration) gives the same
trace. Pure: no I/O."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from simulators.days.spec import Deterioration, Library, Persona

DAY_MIN = 1440
ACTIVE_SPM = 40.0  # purposeful stepping (Tudor-Locke): the activity response starts here
_TAU_ON = 1.0  # minutes: heart and breathing rise within a minute or two of starting
_TAU_OFF_HR = 3.0  # heart-rate recovery: most of it within a few minutes (Cole 1999)
_TAU_OFF_RR = 2.0
_TAU_SPO2 = 2.0


@dataclass(slots=True)
class _Minute:
    asleep: bool = False
    stage: str = "awake"
    steps: float = 0.0  # steps in this minute
    kind: str = "rest"  # rest | walk | run | play | chores
    watch_on: bool = True
    ill: float = 0.0  # 0..1: how far a deterioration has progressed
    still: bool = False  # lying still after a fall


def _ar1(rng: random.Random, n: int, sd: float, tau: float) -> list[float]:
    """A slow drift with standard deviation `sd` and time constant `tau` minutes."""
    if sd <= 0:
        return [0.0] * n
    a = math.exp(-1.0 / tau)
    s = sd * math.sqrt(1 - a * a)
    x, out = rng.gauss(0, sd), []
    for _ in range(n):
        x = a * x + rng.gauss(0, s)
        out.append(x)
    return out


def _schedule(p: Persona, rng: random.Random, ill_from: int | None) -> list[_Minute]:
    mins = [_Minute() for _ in range(DAY_MIN)]
    wake = p.wake + rng.randint(-p.sleep_jitter, p.sleep_jitter)
    bed = p.bed + rng.randint(-p.sleep_jitter, p.sleep_jitter)
    stages = ("light", "light", "deep", "rem")
    for m in range(DAY_MIN):
        if m < wake or m >= bed:
            mins[m].asleep = True
            # Sleep cycles of about 90 minutes: deep early, REM later in each cycle.
            phase = ((m - bed) % DAY_MIN) % 90
            mins[m].stage = stages[min(3, phase // 25)]
    # A few brief awakenings each night (awake in bed).
    for _ in range(rng.randint(1, 3)):
        start = rng.randint(0, max(1, wake - 10))
        for m in range(start, min(DAY_MIN, start + rng.randint(2, 8))):
            mins[m].asleep, mins[m].stage = False, "awake"
    # Activity bouts; an ill person stops doing them.
    for a in p.activities:
        if rng.random() >= a.chance:
            continue
        start = a.at + rng.randint(-a.jitter, a.jitter)
        length = max(5, round(a.minutes * rng.uniform(0.8, 1.2)))
        for m in range(max(0, start), min(DAY_MIN, start + length)):
            if ill_from is not None and m >= ill_from:
                break
            if not mins[m].asleep:
                mins[m].kind = a.kind
                mins[m].steps = max(0.0, rng.gauss(a.cadence, a.cadence * 0.08))
    for m in range(DAY_MIN):
        mn = mins[m]
        if not mn.asleep and mn.kind == "rest" and rng.random() < 0.35:
            # Incidental steps (pottering about): under the purposeful cadence.
            mn.steps = min(ACTIVE_SPM - 5, rng.expovariate(1.0 / max(p.incidental_spm, 0.1)))
    # The watch comes off: the daily charge while awake, and a few longer gaps.
    charge = rng.randint(*p.sensor.charge_minutes)
    at = rng.randint(max(wake + 30, 7 * 60), max(wake + 31, min(bed - charge - 10, 21 * 60)))
    for m in range(at, min(DAY_MIN, at + charge)):
        mins[m].watch_on = False
    for _ in range(_poisson(rng, p.sensor.gaps_per_day)):
        start = rng.randint(0, DAY_MIN - 1)
        for m in range(start, min(DAY_MIN, start + rng.randint(2, 10))):
            mins[m].watch_on = False
    return mins


def _poisson(rng: random.Random, lam: float) -> int:
    n, t = 0, rng.expovariate(1.0) if lam > 0 else math.inf
    while t < lam:
        n += 1
        t += rng.expovariate(1.0)
    return n


def _response(mins: list[_Minute], tau_off: float) -> list[float]:
    """0..1: how far heart or breathing has risen towards the bout's level (first order)."""
    r, out = 0.0, []
    for mn in mins:
        on = 1.0 if mn.steps >= ACTIVE_SPM and mn.kind != "rest" else 0.0
        tau = _TAU_ON if on > r else tau_off
        r = on + (r - on) * math.exp(-1.0 / tau)
        out.append(r)
    return out


@dataclass(frozen=True, slots=True)
class _Truth:
    heart_rate: list[float]
    spo2: list[float]
    respiratory_rate: list[float]
    core_temp: list[float]
    skin_temp: list[float]
    systolic_bp: list[float]
    diastolic_bp: list[float]


def _truth(p: Persona, mins: list[_Minute], rng: random.Random) -> _Truth:
    hr_r, rr_r, o2_r = (_response(mins, t) for t in (_TAU_OFF_HR, _TAU_OFF_RR, _TAU_SPO2))
    hr_d = _ar1(rng, DAY_MIN, p.hr.get("drift_sd", 3.0), 30.0)
    o2_d = _ar1(rng, DAY_MIN, 0.4, 30.0)
    rr_d = _ar1(rng, DAY_MIN, 0.5, 30.0)
    bp_day = rng.gauss(0, p.bp["sd"]) if p.bp else 0.0
    irregular = p.hr.get("irregular_sd", 0.0)
    dips = p.spo2.get("dips_per_hour", 0.0) / 60.0
    hr, o2, rr, core, skin, sbp, dbp = [], [], [], [], [], [], []
    for m, mn in enumerate(mins):
        kind = mn.kind if mn.kind in p.hr else "walk"
        base_hr = p.hr["sleep"] if mn.asleep else p.hr["rest"]
        if mn.stage == "rem":
            base_hr += 3
        # The pulse wanders less asleep than awake (steady NREM sleep).
        drift = hr_d[m] * (0.6 if mn.asleep else 1.0)
        h = base_hr + drift + (p.hr.get(kind, base_hr) - base_hr) * hr_r[m]
        hr.append(h + (rng.gauss(0, irregular) if irregular else 0.0))
        base_o2 = p.spo2["sleep"] if mn.asleep else p.spo2["awake"]
        s = base_o2 + o2_d[m] - p.spo2.get("exertion_drop", 0.0) * o2_r[m]
        if mn.asleep and rng.random() < dips:
            s -= rng.uniform(p.spo2.get("dip_depth_lo", 3), p.spo2.get("dip_depth_hi", 6))
        o2.append(min(100.0, s))
        base_rr = p.rr["sleep"] if mn.asleep else p.rr["awake"]
        rkind = kind if kind in p.rr else "walk"
        rr.append(base_rr + rr_d[m] + (p.rr.get(rkind, base_rr) - base_rr) * rr_r[m])
        # Core temperature: lowest near 04:00, highest in the late afternoon (about ±0.3 °C).
        core.append(p.core_temp + 0.3 * math.sin((m - 600) / DAY_MIN * 2 * math.pi))
        skin.append(p.skin_temp["sleep" if mn.asleep else "awake"])
        night = -0.12 if mn.asleep else 0.0  # nocturnal dipping of blood pressure
        if p.bp:
            sbp.append(p.bp["systolic"] * (1 + night) + bp_day)
            dbp.append(p.bp["diastolic"] * (1 + night) + bp_day * 0.6)
        else:
            sbp.append(0.0)
            dbp.append(0.0)
    return _Truth(hr, o2, rr, core, skin, sbp, dbp)


_SERIES = {"heart_rate": "heart_rate", "spo2": "spo2", "respiratory_rate": "respiratory_rate",
           "core_temp": "core_temp", "systolic_bp": "systolic_bp",
           "diastolic_bp": "diastolic_bp"}  # fmt: skip


def _illness(truth: _Truth, mins: list[_Minute], d: Deterioration) -> None:
    """Ramp each changed vital from the person's own value to the illness's, from onset."""
    for c in d.changes:
        series: list[float] = getattr(truth, _SERIES[c.vital])
        for m in range(d.at, DAY_MIN):
            w = 1.0 if c.over_min <= 0 else min(1.0, (m - d.at) / c.over_min)
            series[m] = series[m] + (c.to - series[m]) * w
    for m in range(d.at, DAY_MIN):
        mins[m].ill = 1.0
        if d.fall:
            mins[m].still, mins[m].steps, mins[m].kind, mins[m].asleep = True, 0.0, "rest", False


def _round(v: float, digits: int = 0) -> float | int:
    return round(v) if digits == 0 else round(v, digits)


class _Watch:
    def __init__(self, p: Persona, rng: random.Random) -> None:
        self.p, self.s, self.rng = p, p.sensor, rng
        self.bias = _ar1(rng, DAY_MIN, p.sensor.spo2_bias_sd, 45.0)

    def read(
        self, m: int, mn: _Minute, t: _Truth, steps: float, *, must: bool = False
    ) -> dict[str, Any] | None:
        """One reading, or None when the watch is off or drops it (`must`: it is sent: a fall
        is reported by the accelerometer whatever the optical sensor does)."""
        rng, s = self.rng, self.s
        dropped = rng.random() < s.missing
        if not must and (not mn.watch_on or dropped):
            return None
        moving = steps >= ACTIVE_SPM
        hr = t.heart_rate[m] + rng.gauss(0, s.hr_sd_active if moving else s.hr_sd_rest)
        o2 = t.spo2[m] + self.bias[m] + rng.gauss(0, s.spo2_sd_sleep if mn.asleep else s.spo2_sd)
        rr = t.respiratory_rate[m] + rng.gauss(0, s.rr_sd)
        if moving and rng.random() < s.hr_motion:
            # Cadence lock (the optical sensor follows the arm swing) or a wild jump.
            hr = steps if rng.random() < 0.5 else hr + rng.choice((-1, 1)) * rng.uniform(25, 60)
        if moving and rng.random() < s.spo2_motion:
            o2 -= rng.uniform(5, 15)
        if mn.asleep and rng.random() < s.spo2_pressure:
            o2 -= rng.uniform(6, 14)
        if not moving and not mn.asleep and rng.random() < s.rest_extreme:
            o2 = rng.uniform(76, 84.4)  # one reading in the intervention range
        out: dict[str, Any] = {}
        if rng.random() < s.implausible:
            if rng.random() < 0.5:
                hr = rng.choice((0.0, rng.uniform(12, 24)))
            else:
                o2 = rng.uniform(30, 49)
        out["heart_rate"] = max(0, _round(hr))
        out["spo2"] = min(100, max(0, _round(o2)))
        out["respiratory_rate"] = max(0, _round(rr))
        out["temperature_c"] = _round(t.skin_temp[m] + rng.gauss(0, s.skin_temp_sd), 1)
        out["steps"] = round(steps * self.p.watch_interval / 60.0)
        if self.p.reports_sleep:
            stage = mn.stage if (mn.asleep or mn.stage == "awake") else "awake"
            if mn.asleep or m < self.p.wake + 60:
                out["sleep"] = {stage: round(self.p.watch_interval / 60.0, 2)}
        return out


def trace(
    lib: Library,
    persona: str,
    *,
    days: int,
    seed: int,
    deterioration: Deterioration | None = None,
    tz: str = "Europe/London",
) -> list[dict[str, Any]]:
    """The persona's `days` as trace lines in time order; a deterioration starts on the last
    day at its onset and the trace ends at that day's end."""
    p = lib.personas[persona]
    zone = ZoneInfo(tz)
    first = date.fromisoformat(lib.start_date)
    lines: list[dict[str, Any]] = []
    for d in range(days):
        ill = deterioration if (deterioration is not None and d == days - 1) else None
        rng = random.Random(f"{persona}/{seed}/{d}/{ill.id if ill else ''}")
        midnight = datetime.combine(first + timedelta(days=d), datetime.min.time(), zone)
        lines += _day(p, rng, midnight.timestamp(), ill)
    lines.sort(key=lambda x: x["ts"])
    return lines


def _day(
    p: Persona, rng: random.Random, t0: float, ill: Deterioration | None
) -> list[dict[str, Any]]:
    mins = _schedule(p, rng, ill.at if ill else None)
    truth = _truth(p, mins, rng)
    if ill is not None:
        _illness(truth, mins, ill)
    watch = _Watch(p, rng)
    out: list[dict[str, Any]] = []
    phase = rng.uniform(0, p.watch_interval)
    t = phase
    while t < DAY_MIN * 60:
        m = int(t // 60)
        mn = mins[m]
        steps = 0.0 if mn.still else mins[m].steps
        fall = ill is not None and ill.fall and m == ill.at
        vals = watch.read(m, mn, truth, steps, must=fall)
        if vals is not None:
            if fall:
                vals["fall_detected"] = True
            out.append({"ts": round(t0 + t + rng.uniform(-1, 1), 3), "person": p.person,
                        "device": p.watch, **vals})  # fmt: skip
        t += p.watch_interval
    for at in _spot_times(p.cuff_times, ill, "cuff"):
        if p.cuff and p.bp and not mins[at].asleep:
            out.append(_cuff(p, rng, t0, at, truth))
    for at in _spot_times(p.thermometer_times, ill, "thermometer"):
        if p.thermometer and not mins[at].asleep:
            temp = truth.core_temp[at] + rng.gauss(0, 0.15)
            out.append({"ts": round(t0 + at * 60 + rng.uniform(0, 59), 3), "person": p.person,
                        "device": p.thermometer, "temperature_c": _round(temp, 1)})  # fmt: skip
    return out


def _spot_times(base: tuple[int, ...], ill: Deterioration | None, what: str) -> Iterator[int]:
    yield from base
    if ill is None:
        return
    every = ill.cuff_every if what == "cuff" else ill.thermometer_every
    start = ill.cuff_from if what == "cuff" else ill.thermometer_from
    if every:
        yield from range(ill.at + start, DAY_MIN, int(every))


def _cuff(p: Persona, rng: random.Random, t0: float, at: int, truth: _Truth) -> dict[str, Any]:
    # A validated cuff: mean error within 5 mmHg, SD within 8 (ISO 81060-2); here SD 4.
    sbp = truth.systolic_bp[at] + rng.gauss(0, 4)
    dbp = truth.diastolic_bp[at] + rng.gauss(0, 3)
    hr = truth.heart_rate[at] + rng.gauss(0, 2)
    return {"ts": round(t0 + at * 60 + rng.uniform(0, 59), 3), "person": p.person,
            "device": p.cuff, "systolic_bp": _round(sbp), "diastolic_bp": _round(min(dbp, sbp - 15)),
            "heart_rate": _round(hr)}  # fmt: skip


def true_crossing(
    lib: Library,
    persona: str,
    d: Deterioration,
    *,
    days: int,
    seed: int,
    tz: str = "Europe/London",
) -> float | None:
    """When the deterioration's true value (before any sensor error) first passed one of its
    thresholds on the trace's last day: the same seeded day `trace` makes, without the watch."""
    p = lib.personas[persona]
    rng = random.Random(f"{persona}/{seed}/{days - 1}/{d.id}")
    mins = _schedule(p, rng, d.at)
    truth = _truth(p, mins, rng)
    _illness(truth, mins, d)
    day = date.fromisoformat(lib.start_date) + timedelta(days=days - 1)
    midnight = datetime.combine(day, datetime.min.time(), ZoneInfo(tz)).timestamp()
    for m in range(d.at, DAY_MIN):
        for th in d.thresholds:
            series = _SERIES.get(th.vital)
            if series is None:
                return midnight + d.at * 60.0  # an event (a fall): at onset
            if th.past(getattr(truth, series)[m]):
                return midnight + m * 60.0
    return None
