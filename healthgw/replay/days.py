"""Scoring the ordinary-day library (eval/days/) with the replay: the alarm burden on ordinary
persona-days and the time to alarm on deteriorations hidden in them (`healthgw days score`).

Each persona's days are generated (simulators/days/) and replayed through the assembled
gateway (healthgw/replay/), nobody answering the watch. For a deterioration the clock starts at
the first reading at or after its onset past any of its thresholds, and stops at each expected
role's first text."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from gateway.household.model import Household, load_household
from healthgw.replay.run import ROLES, Burden, ReplayResult, replay
from healthgw.replay.trace import parse_lines
from simulators.days.day import trace, true_crossing
from simulators.days.spec import Deterioration, Library, load_library

DEFAULT_LIBRARY = Path(__file__).resolve().parents[2] / "eval" / "days"


@dataclass
class DeteriorationScore:
    id: str
    persona: str
    expect: tuple[str, ...]
    within_s: float
    first_past: float | None  # epoch of the first reading past a threshold
    onset: float
    true_past: float | None = None  # when the true value (no sensor error) passed it
    first_text: dict[str, float | None] = field(default_factory=dict)  # role -> epoch
    first_prompt: float | None = None

    def delay(self, role: str) -> float | None:
        t = self.first_text.get(role)
        return None if t is None or self.first_past is None else t - self.first_past

    def true_delay(self, role: str) -> float | None:
        t = self.first_text.get(role)
        return None if t is None or self.true_past is None else t - self.true_past

    @property
    def ok(self) -> bool:
        return self.first_past is not None and all(
            (d := self.delay(r)) is not None and d <= self.within_s for r in self.expect
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "persona": self.persona,
            "expect": list(self.expect),
            "within_s": self.within_s,
            "ok": self.ok,
            "seconds_to_text": {r: self.delay(r) for r in ROLES},
            "seconds_from_true_crossing_to_text": {r: self.true_delay(r) for r in ROLES},
            "seconds_from_onset_to_first_past": None
            if self.first_past is None
            else round(self.first_past - self.onset, 1),
            "seconds_to_first_prompt": None
            if self.first_prompt is None or self.first_past is None
            else round(self.first_prompt - self.first_past, 1),
        }


def _items(lines: Sequence[dict[str, Any]], hh: Household, name: str) -> list[Any]:
    text = [json.dumps(x) for x in lines]
    return parse_lines(name, text, hh, ZoneInfo(hh.timezone))


async def persona_burden(
    lib: Library, hh: Household, persona: str, *, seed: int, days: int
) -> tuple[Burden, ReplayResult]:
    lines = trace(lib, persona, days=days, seed=seed, tz=hh.timezone)
    result = await replay(_items(lines, hh, f"{persona}-seed{seed}"), lib.household, hh)
    p = lib.personas[persona].person
    return result.persons.get(p, Burden()), result


def _first_past(lines: Sequence[dict[str, Any]], d: Deterioration, onset: float) -> float | None:
    for x in lines:
        if x["ts"] < onset:
            continue
        for th in d.thresholds:
            v = x.get(th.vital)
            if isinstance(v, bool):
                v = 1.0 if v else 0.0
            if isinstance(v, int | float) and th.past(float(v)):
                return float(x["ts"])
    return None


async def deterioration_score(
    lib: Library, hh: Household, d: Deterioration, *, seed: int, days: int = 2
) -> tuple[DeteriorationScore, ReplayResult]:
    p = lib.personas[d.persona]
    lines = trace(lib, d.persona, days=days, seed=seed, deterioration=d, tz=hh.timezone)
    onset = onset_of(lib, d, days=days, tz=hh.timezone)
    result = await replay(_items(lines, hh, f"{d.id}-seed{seed}"), lib.household, hh)
    score = DeteriorationScore(d.id, d.persona, d.expect, d.within_s, _first_past(lines, d, onset),
                               onset, true_crossing(lib, d.persona, d, days=days, seed=seed,
                                                    tz=hh.timezone))  # fmt: skip
    for e in result.timeline:
        if e["person"] != p.person or e["t"] < onset - 1:
            continue
        if e["kind"] == "text" and e["role"] in ROLES and score.first_text.get(e["role"]) is None:
            score.first_text[e["role"]] = e["t"]
        if e["kind"] == "prompt" and score.first_prompt is None:
            score.first_prompt = e["t"]
    return score, result


def onset_of(lib: Library, d: Deterioration, *, days: int, tz: str) -> float:
    """Epoch of the deterioration's onset: its minute of the trace's last local day."""
    day = date.fromisoformat(lib.start_date) + timedelta(days=days - 1)
    midnight = datetime.combine(day, datetime.min.time(), ZoneInfo(tz))
    return (midnight + timedelta(minutes=d.at)).timestamp()


@dataclass
class Scorecard:
    seed: int
    days: int
    burden: dict[str, Burden]
    deteriorations: list[DeteriorationScore]

    def to_dict(self) -> dict[str, Any]:
        total = sum(b.days for b in self.burden.values()) or 1.0
        prompts = sum(b.prompts for b in self.burden.values())
        return {
            "seed": self.seed,
            "days_per_persona": self.days,
            "ordinary": {p: b.to_dict() for p, b in self.burden.items()},
            "prompts_per_person_day": round(prompts / total, 3),
            "max_prompts_per_day": max(
                (b.prompts / b.days for b in self.burden.values() if b.days), default=0.0
            ),
            "texts": {r: sum(b.texts[r] for b in self.burden.values()) for r in ROLES},
            "hard_sos": sum(b.hard_sos for b in self.burden.values()),
            "low_priority_per_person_day": round(
                sum(b.low for b in self.burden.values()) / total, 3
            ),
            "usual_per_person_day": round(sum(b.usual for b in self.burden.values()) / total, 3),
            "deteriorations": [d.to_dict() for d in self.deteriorations],
        }


async def score(
    lib: Library, *, seed: int, days: int, personas: Sequence[str] = (), only: str = "all"
) -> Scorecard:
    hh = load_household(lib.household)
    card = Scorecard(seed, days, {}, [])
    if only in ("all", "ordinary"):
        for persona in personas or list(lib.personas):
            card.burden[persona], _ = await persona_burden(lib, hh, persona, seed=seed, days=days)
    if only in ("all", "deteriorations"):
        for d in lib.deteriorations.values():
            if personas and d.persona not in personas:
                continue
            s, _ = await deterioration_score(lib, hh, d, seed=seed)
            card.deteriorations.append(s)
    return card


def table(card: Scorecard) -> str:
    out = [f"ordinary days (seed {card.seed}, {card.days} days each, nobody answers)"]
    out.append(f"{'persona':<10} {'days':>5} {'prompts/day':>12} {'soft SOS':>9}"
               f" {'family':>7} {'clinician':>10} {'ambulance':>10} {'hard SOS':>9}"
               f" {'low/day':>8} {'usual/day':>10}")  # fmt: skip
    for p, b in card.burden.items():
        out.append(f"{p:<10} {b.days:>5.1f} {b.prompts / max(b.days, 1e-9):>12.2f} "
                   f"{b.soft_sos:>9} {b.texts['family']:>7} {b.texts['clinician']:>10} "
                   f"{b.texts['ambulance']:>10} {b.hard_sos:>9} "
                   f"{b.low / max(b.days, 1e-9):>8.2f} {b.usual / max(b.days, 1e-9):>10.2f}")  # fmt: skip
    if card.burden:
        d = card.to_dict()
        out.append(f"all: {d['prompts_per_person_day']:.3f} prompts per person-day (max "
                   f"{d['max_prompts_per_day']:.2f}), texts {d['texts']}, "
                   f"hard SOS {d['hard_sos']}; low priority "
                   f"{d['low_priority_per_person_day']:.2f}/person-day, usual for them "
                   f"{d['usual_per_person_day']:.2f}")  # fmt: skip
    if card.deteriorations:
        out += ["", f"deteriorations (seed {card.seed}): seconds from the first reading past "
                    "the threshold to each role's first text (in brackets: from the moment the "
                    "true value crossed it)"]  # fmt: skip
        out.append(f"{'deterioration':<28} {'ok':>3} {'prompt':>7} {'family':>13} "
                   f"{'clinician':>13} {'ambulance':>13}  expected")  # fmt: skip

        def sec(v: float | None) -> str:
            return "-" if v is None else f"{v:.0f}"

        def both(s: DeteriorationScore, role: str) -> str:
            if s.delay(role) is None:
                return "-"
            return f"{sec(s.delay(role))} ({sec(s.true_delay(role))})"

        for s in card.deteriorations:
            prompt = None if s.first_prompt is None or s.first_past is None else (
                s.first_prompt - s.first_past)  # fmt: skip
            out.append(f"{s.id:<28} {'yes' if s.ok else 'NO':>3} {sec(prompt):>7} "
                       f"{both(s, 'family'):>13} {both(s, 'clinician'):>13} "
                       f"{both(s, 'ambulance'):>13}  {'+'.join(s.expect)} "
                       f"<= {s.within_s:.0f} s")  # fmt: skip
    return "\n".join(out)


def run_score(
    folder: Path, *, seed: int, days: int, personas: Sequence[str], only: str
) -> Scorecard:
    lib = load_library(folder)
    return asyncio.run(score(lib, seed=seed, days=days, personas=personas, only=only))
