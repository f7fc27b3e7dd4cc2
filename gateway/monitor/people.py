"""What the monitor remembers per person between readings: the profile (rebuilt as ages move
on), the latest accepted value per vital and per device, and the latest scores for the views.
Apart from the engine so that the bookkeeping of values is not tangled with scoring them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from gateway.contract.topics import NUMERIC_VITALS
from gateway.contract.values import Reading
from gateway.household.model import Person
from gateway.monitor import news2_evidence
from gateway.monitor.meows import MeowsResult
from gateway.monitor.news2 import News2Result
from gateway.monitor.range_book import RangeBook
from gateway.monitor.ranges import (
    Activity,
    Profile,
    VitalRange,
    news2_applicable,
    spo2_scale_for,
)


@dataclass(slots=True)
class PersonState:
    profile: Profile
    spo2_scale: int
    latest: dict[str, tuple[float, Any]] = field(default_factory=dict)  # vital -> (ts, value)
    # What the views show: the newest accepted reading of each vital as measured (`latest`
    # holds what the alarms see: a wrist's agreed values, sustain.py).
    shown: dict[str, tuple[float, Any]] = field(default_factory=dict)
    retro: dict[str, tuple[float, Any]] = field(default_factory=dict)  # late data's own
    news2: News2Result | None = None
    news2_ts: float | None = None
    meows: MeowsResult | None = None
    anomaly: float | None = None
    answered_at: float | None = None  # the wearer answered a prompt: evidence of "Alert"
    # The latest clinical (thermometer-class) temperature and its time: a child's fever
    # counts for hours, not the 15 minutes NEWS2 looks back.
    core_temp: tuple[float, float] | None = None
    news2_applies: bool = True  # adults who are not pregnant (RCP)

    @property
    def home_oxygen(self) -> bool:
        return "home_oxygen" in self.profile.conditions

    # vital -> device -> (ts, value): the worst recent value across devices is scored.
    devices: news2_evidence.DeviceBook = field(default_factory=dict)
    retro_devices: news2_evidence.DeviceBook = field(default_factory=dict)
    several_devices: bool = False  # some vital measured by more than one device
    # The ranges per activity state for `profile` (a new profile gets a new book).
    range_book: RangeBook | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def of(cls, person: Person, today: date) -> PersonState:
        prof = Profile.from_person(person, today)
        return cls(prof, spo2_scale_for(prof), news2_applies=news2_applicable(prof))

    def reprofile(self, person: Person, today: date) -> None:
        """A new local date: the age, and with it the ranges and scores that apply, moved on."""
        prof = Profile.from_person(person, today)
        self.profile, self.spo2_scale = prof, spo2_scale_for(prof)
        self.news2_applies = news2_applicable(prof)

    def ranges(
        self, activity: Activity = "rest", asleep: bool = False, wrist: bool = False
    ) -> Mapping[str, VitalRange]:
        """This person's ranges in this state: `ranges_for(self.profile, ...)`, looked up in a
        book kept for the current profile (rebuilt whenever the profile object changes)."""
        book = self.range_book
        if book is None or book.profile is not self.profile:
            book = self.range_book = RangeBook(self.profile)
        return book.get(activity, asleep, wrist)

    def seed(self, device: str, ts: float, row: Mapping[str, Any]) -> None:
        """One stored last reading of a device, only the values plausibility accepted."""
        flagged = {str(f).split(":", 1)[0] for f in row.get("flags") or () if ":" in str(f)}
        for v in NUMERIC_VITALS:
            if row.get(v) is not None and v not in flagged:
                prev = self.latest.get(v)
                if prev is None or prev[0] < ts:
                    self.latest[v] = self.shown[v] = (float(ts), row[v])
                per = self.devices.setdefault(v, {})
                self.several_devices = self.several_devices or (bool(per) and device not in per)
                per[device] = (float(ts), row[v])

    def show(self, ts: float, measured: Mapping[str, float]) -> None:
        """The views' newest values, as measured (live data only)."""
        for v, value in measured.items():
            prev = self.shown.get(v)
            if prev is None or prev[0] <= ts:
                self.shown[v] = (ts, value)

    def record(
        self, r: Reading, accepted: Mapping[str, float], *, retro: bool
    ) -> tuple[dict[str, tuple[float, Any]], news2_evidence.DeviceBook]:
        """Keep the reading's accepted values (late data in its own books) and return the
        books it went into: the latest per vital, and per vital and device."""
        latest = self.retro if retro else self.latest
        by_device = self.retro_devices if retro else self.devices
        for v, value in accepted.items():
            prev = latest.get(v)
            if prev is None or prev[0] <= r.ts:
                latest[v] = (r.ts, value)
            per = by_device.get(v)
            if per is None:
                per = by_device[v] = {}
            elif r.device not in per and per:
                self.several_devices = True  # from now on, score the worst across devices
            if r.device not in per or per[r.device][0] <= r.ts:
                per[r.device] = (r.ts, value)
        if r.consciousness is not None:
            latest["consciousness"] = (r.ts, r.consciousness)
        if r.on_supplemental_o2 is not None:
            latest["on_supplemental_o2"] = (r.ts, r.on_supplemental_o2)
        return latest, by_device
