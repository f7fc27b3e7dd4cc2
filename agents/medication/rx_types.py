"""What a prescription is read into: a dose (with the tablets or millilitres it is made of),
the local times of day, the days it is taken on (every day, some weekdays, one day of the month,
or every N days), a duration, and whether it is as needed. `agents.medication.prescription`
re-exports these."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import time
from typing import Any

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
CRON_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_COUNTED = ("tablet", "capsule", "puff", "drop", "unit", "sachet", "powder", "caplet")


def _num(x: float) -> str:
    return f"{x:g}"


def _amount(amount: float, unit: str) -> str:
    plural = "s" if unit in _COUNTED and amount != 1 else ""
    return f"{_num(amount)} {unit}{plural}"


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


@dataclass(frozen=True, slots=True)
class Dose:
    amount: float
    unit: str  # mg | mcg | ml | tablet | capsule | puff | drop | unit | sachet | powder
    # When the amount is made of a number of tablets, capsules or ml ("2 tablets of 500 mg",
    # "10 ml of 250 mg/5 ml"), the count and form are kept so the user sees what to take.
    count: float | None = None
    form: str | None = None
    strength: str | None = None  # a liquid's concentration, shown with the volume

    def text(self) -> str:
        base = _amount(self.amount, self.unit)
        if self.count is None or self.form is None:
            return base
        what = _amount(self.count, self.form) + (f" of {self.strength}" if self.strength else "")
        return f"{what} ({base})"

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"amount": self.amount, "unit": self.unit}
        if self.count is not None:
            out.update(count=self.count, form=self.form, strength=self.strength)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Dose:
        count = d.get("count")
        return cls(float(d["amount"]), d["unit"], None if count is None else float(count),
                   d.get("form"), d.get("strength"))  # fmt: skip


@dataclass(frozen=True, slots=True)
class Prescription:
    medicine: str
    dose: Dose  # the dose at each time (the first time's when `time_doses` differ)
    times: tuple[time, ...]  # local times of day; empty for as-needed (PRN)
    frequency: str  # "once daily", "twice daily", ..., "every 8 hours", "once a week", "as needed"
    duration_days: int | None
    instructions: tuple[str, ...]
    as_needed: bool = False
    max_per_day: Dose | None = None
    min_interval_h: float | None = None
    # One dose per time when the amounts differ ("40 mg in the morning and 20 mg at lunchtime").
    time_doses: tuple[Dose, ...] = ()
    # Which days: all empty/None means every day. 0 = Monday.
    days_of_week: tuple[int, ...] = ()
    day_of_month: int | None = None
    # Every N days (2 = alternate days, 14 = every two weeks), counted from the first dose day:
    # the start day, or the first of `days_of_week` on or after it.
    every_n_days: int | None = None

    def dose_at(self, i: int) -> Dose:
        return self.time_doses[i] if self.time_doses else self.dose

    def doses(self) -> tuple[Dose, ...]:
        """The dose at each time on a dose day."""
        return tuple(self.dose_at(i) for i in range(len(self.times)))

    def per_day(self) -> int | None:
        """Doses on a day it is taken (None for as-needed)."""
        return None if self.as_needed else len(self.times)

    def every_day(self) -> bool:
        return not (self.days_of_week or self.day_of_month or self.every_n_days)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Prescription:
        """Back from `as_dict` (what is stored with a proposal)."""
        mx = d.get("max_per_day")
        return cls(
            medicine=d["medicine"],
            dose=Dose.from_dict(d["dose"]),
            times=tuple(time.fromisoformat(t) for t in d["times"]),
            frequency=d["frequency"],
            duration_days=d.get("duration_days"),
            instructions=tuple(d.get("instructions") or ()),
            as_needed=bool(d.get("as_needed")),
            max_per_day=Dose.from_dict(mx) if mx else None,
            min_interval_h=d.get("min_interval_h"),
            time_doses=tuple(Dose.from_dict(x) for x in d.get("time_doses") or ()),
            days_of_week=tuple(d.get("days_of_week") or ()),
            day_of_month=d.get("day_of_month"),
            every_n_days=d.get("every_n_days"),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "medicine": self.medicine,
            "dose": self.dose.as_dict(),
            "times": [t.strftime("%H:%M") for t in self.times],
            "frequency": self.frequency,
            "duration_days": self.duration_days,
            "instructions": list(self.instructions),
            "as_needed": self.as_needed,
            "max_per_day": self.max_per_day.as_dict() if self.max_per_day else None,
            "min_interval_h": self.min_interval_h,
            "time_doses": [x.as_dict() for x in self.time_doses],
            "days_of_week": list(self.days_of_week),
            "day_of_month": self.day_of_month,
            "every_n_days": self.every_n_days,
        }

    def _days_text(self) -> str:
        if self.day_of_month is not None:
            n = self.day_of_month
            suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
            return f" on the {n}{suffix}"
        if self.days_of_week:
            return " on " + _join([WEEKDAYS[d] for d in self.days_of_week])
        return ""

    def _start_text(self) -> str:
        if not self.every_n_days:
            return ""
        if self.days_of_week:
            day = WEEKDAYS[self.days_of_week[0]]
            return f", the first dose on the first {day} from the day it is confirmed"
        return ", the first dose on the day it is confirmed"

    def summary(self) -> str:
        """What the user is shown to confirm before anything is scheduled."""
        hhmm = [t.strftime("%H:%M") for t in self.times]
        if self.as_needed:
            head = f"{self.medicine.title()} {self.dose.text()}"
            when = self.frequency + (
                f", at most {self.max_per_day.text()} a day" if self.max_per_day else ""
            )
        elif self.time_doses:
            head = f"{self.medicine.title()}"
            parts = [f"{d.text()} at {h}" for d, h in zip(self.time_doses, hhmm, strict=True)]
            days = self._days_text() if not self.every_day() else " every day"
            total = self.daily_total()
            when = _join(parts) + days + (f" ({total} a day)" if total else "")
        else:
            head = f"{self.medicine.title()} {self.dose.text()}"
            when = f"{self.frequency}{self._days_text()} at {', '.join(hhmm)}"
        dur = f" for {self.duration_days} days" if self.duration_days else ""
        instr = f" ({'; '.join(self.instructions)})" if self.instructions else ""
        return f"{head}, {when}{self._start_text()}{dur}{instr}."

    def daily_total(self) -> str | None:
        """The amount on a dose day, when every dose is in the same unit."""
        doses = self.doses()
        units = {d.unit for d in doses}
        if not doses or len(units) != 1:
            return None
        return _amount(sum(d.amount for d in doses), units.pop())


@dataclass(frozen=True, slots=True)
class ParseResult:
    prescription: Prescription | None
    questions: tuple[str, ...] = ()  # ask these; nothing is scheduled until they are answered
    warnings: tuple[str, ...] = field(default=())  # e.g. over a known maximum daily dose
    # A refusal: the schedule as read must not exist (daily methotrexate, aspirin under 16).
    # Its message is in `questions`; nothing is proposed.
    refused: bool = False

    @property
    def ok(self) -> bool:
        return self.prescription is not None and not self.questions
