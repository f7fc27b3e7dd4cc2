"""The ordinary-day library's specs (eval/days/personas.yaml, deteriorations.yaml), read into
frozen values. Each persona is a person's usual day: sleep, activity, the true level of each
vital awake, asleep and active, the devices they wear and how those devices err. Each
deterioration is an illness laid over one of those days from an onset time. Sources for every
number are in the YAML beside it (and docs/clinical.md §9)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gateway.base.errors import ConfigError


def minutes(hhmm: str) -> int:
    """ "07:30" -> 450 (minutes after local midnight)."""
    h, m = str(hhmm).split(":")
    return int(h) * 60 + int(m)


@dataclass(frozen=True, slots=True)
class Activity:
    kind: str  # walk | run | play | chores
    at: int  # local minute of the day
    minutes: int
    cadence: float  # steps per minute while it lasts
    jitter: int = 30  # start moves by up to this many minutes
    chance: float = 1.0  # probability it happens on a given day


@dataclass(frozen=True, slots=True)
class Sensor:
    """How a watch errs: per-reading noise, slow bias, single-reading artefacts, gaps."""

    hr_sd_rest: float
    hr_sd_active: float
    spo2_sd: float  # awake, per reading
    spo2_sd_sleep: float  # asleep, per reading (lying still on the arm, poorer contact)
    spo2_bias_sd: float  # slow per-wear bias
    rr_sd: float
    skin_temp_sd: float
    hr_motion: float  # per moving reading: a gross HR error (cadence lock or a jump)
    spo2_motion: float  # per moving reading: a spurious low SpO2
    spo2_pressure: float  # per asleep reading: a spurious low SpO2 (lying on the arm)
    rest_extreme: float  # per resting reading: a single reading in the intervention range
    implausible: float  # per reading: a vanished pulse or an SpO2 below 50
    missing: float  # per reading: dropped
    gaps_per_day: float  # longer gaps (2-10 min)
    charge_minutes: tuple[int, int]  # the daily charge, watch off


@dataclass(frozen=True, slots=True)
class Persona:
    id: str
    what: str
    person: str  # the household id
    watch: str  # device ids
    watch_interval: int
    reports_sleep: bool
    bed: int
    wake: int
    sleep_jitter: int
    hr: Mapping[str, float]  # rest, sleep, walk, run/play, drift_sd, irregular_sd
    spo2: Mapping[str, float]  # awake, sleep, dips_per_hour, dip_depth_lo/hi, exertion_drop
    rr: Mapping[str, float]  # awake, sleep, walk, run
    core_temp: float
    skin_temp: Mapping[str, float]  # awake, sleep
    bp: Mapping[str, float] | None  # systolic, diastolic, sd (a cuff)
    cuff: str | None
    cuff_times: tuple[int, ...]
    thermometer: str | None
    thermometer_times: tuple[int, ...]
    activities: tuple[Activity, ...]
    incidental_spm: float  # steps per minute while awake and not in a bout (mean)
    sensor: Sensor
    sources: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Change:
    vital: str  # heart_rate, spo2, respiratory_rate, core_temp, systolic_bp, diastolic_bp
    to: float
    over_min: float


@dataclass(frozen=True, slots=True)
class Threshold:
    vital: str
    op: str  # "<=", ">=", "<", ">"
    value: float

    def past(self, x: float) -> bool:
        return {"<=": x <= self.value, ">=": x >= self.value, "<": x < self.value,
                ">": x > self.value}[self.op]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Deterioration:
    id: str
    what: str
    persona: str
    at: int  # onset, local minute of the trace's last day
    changes: tuple[Change, ...]
    thresholds: tuple[Threshold, ...]  # the first reading past any of these starts the clock
    expect: tuple[str, ...]  # roles that must be texted: family, clinician, ambulance
    within_s: float  # from that reading to each expected role's first text
    fall: bool = False  # a fall at onset, then no movement
    thermometer_every: int | None = None  # the family takes a temperature every N minutes
    thermometer_from: int = 0  # ... starting this many minutes after onset
    cuff_every: int | None = None
    cuff_from: int = 0
    source: str = ""


@dataclass(frozen=True, slots=True)
class Library:
    personas: Mapping[str, Persona]
    deteriorations: Mapping[str, Deterioration]
    household: Path
    start_date: str = "2026-10-05"
    extra: Mapping[str, Any] = field(default_factory=dict)


def _sensor(d: Mapping[str, Any]) -> Sensor:
    art = d.get("artefacts", {})
    return Sensor(
        hr_sd_rest=float(d["hr_sd_rest"]),
        hr_sd_active=float(d["hr_sd_active"]),
        spo2_sd=float(d["spo2_sd"]),
        spo2_sd_sleep=float(d.get("spo2_sd_sleep", d["spo2_sd"])),
        spo2_bias_sd=float(d["spo2_bias_sd"]),
        rr_sd=float(d["rr_sd"]),
        skin_temp_sd=float(d["skin_temp_sd"]),
        hr_motion=float(art["hr_motion"]),
        spo2_motion=float(art["spo2_motion"]),
        spo2_pressure=float(art["spo2_pressure"]),
        rest_extreme=float(art["rest_extreme"]),
        implausible=float(art["implausible"]),
        missing=float(d["missing"]),
        gaps_per_day=float(d["gaps_per_day"]),
        charge_minutes=(int(d["charge_minutes"][0]), int(d["charge_minutes"][1])),
    )


def _persona(d: Mapping[str, Any], sensors: Mapping[str, Sensor]) -> Persona:
    dev = d["devices"]
    return Persona(
        id=str(d["id"]),
        what=str(d["what"]),
        person=str(d.get("person", d["id"])),
        watch=str(dev["watch"]),
        watch_interval=int(dev.get("watch_interval", 60)),
        reports_sleep=bool(d.get("reports_sleep", True)),
        bed=minutes(d["sleep"]["bed"]),
        wake=minutes(d["sleep"]["wake"]),
        sleep_jitter=int(d["sleep"].get("jitter", 30)),
        hr={k: float(v) for k, v in d["hr"].items()},
        spo2={k: float(v) for k, v in d["spo2"].items()},
        rr={k: float(v) for k, v in d["rr"].items()},
        core_temp=float(d.get("core_temp", 36.8)),
        skin_temp={
            k: float(v) for k, v in d.get("skin_temp", {"awake": 33.0, "sleep": 34.5}).items()
        },
        bp={k: float(v) for k, v in d["bp"].items()} if d.get("bp") else None,
        cuff=dev.get("cuff"),
        cuff_times=tuple(minutes(t) for t in dev.get("cuff_times", ())),
        thermometer=dev.get("thermometer"),
        thermometer_times=tuple(minutes(t) for t in dev.get("thermometer_times", ())),
        activities=tuple(
            Activity(
                kind=str(a["kind"]),
                at=minutes(a["at"]),
                minutes=int(a["minutes"]),
                cadence=float(a["cadence"]),
                jitter=int(a.get("jitter", 30)),
                chance=float(a.get("chance", 1.0)),
            )
            for a in d.get("activities", ())
        ),
        incidental_spm=float(d.get("incidental_spm", 4.0)),
        sensor=sensors[str(d.get("sensor", "watch"))],
        sources=tuple(str(s) for s in d.get("sources", ())),
    )


def _deterioration(d: Mapping[str, Any]) -> Deterioration:
    return Deterioration(
        id=str(d["id"]),
        what=str(d["what"]),
        persona=str(d["persona"]),
        at=minutes(d["at"]),
        changes=tuple(
            Change(str(c["vital"]), float(c["to"]), float(c.get("over_min", 0)))
            for c in d.get("changes", ())
        ),
        thresholds=tuple(
            Threshold(str(t["vital"]), str(t["op"]), float(t["value"])) for t in d["thresholds"]
        ),
        expect=tuple(str(r) for r in d["expect"]),
        within_s=float(d.get("within_s", 300)),
        fall=bool(d.get("fall", False)),
        thermometer_every=d.get("thermometer_every"),
        thermometer_from=int(d.get("thermometer_from", 0)),
        cuff_every=d.get("cuff_every"),
        cuff_from=int(d.get("cuff_from", 0)),
        source=str(d.get("source", "")),
    )


def load_library(folder: Path) -> Library:
    """eval/days/: personas.yaml (with the sensor profiles), deteriorations.yaml, household.yaml."""
    try:
        spec = yaml.safe_load((folder / "personas.yaml").read_text())
        det = yaml.safe_load((folder / "deteriorations.yaml").read_text())
        sensors = {k: _sensor(v) for k, v in spec["sensors"].items()}
        personas = {p["id"]: _persona(p, sensors) for p in spec["personas"]}
        deteriorations = {d["id"]: _deterioration(d) for d in det["deteriorations"]}
    except (OSError, KeyError, TypeError, ValueError, yaml.YAMLError) as exc:
        raise ConfigError(
            f"{folder}: the day library is invalid ({type(exc).__name__}: {exc})"
        ) from None
    for d in deteriorations.values():
        if d.persona not in personas:
            raise ConfigError(f"{folder}: deterioration {d.id} names an unknown persona")
    return Library(personas, deteriorations, folder / "household.yaml",
                   str(spec.get("start_date", "2026-10-05")))  # fmt: skip
