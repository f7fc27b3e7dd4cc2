"""Where a reading's values came from, and what the alarms may take from them: each device's
kind says how far one reading of each vital can be trusted (gateway/contract/device_kinds.py). A
clinical device's value counts at once; a wrist's is what its recent readings agree on
(sustain.py), with single readings in the intervention range asked about (ask_first.py); a
trend-only value (skin temperature) is stored and shown, never scored. docs/clinical.md §2b."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import NamedTuple

from gateway.contract.device_kinds import DEFAULT_KIND, Trust, kind_of
from gateway.contract.values import Event, Reading
from gateway.household.model import Household
from gateway.monitor.ask_first import Questions
from gateway.monitor.context import Context
from gateway.monitor.plausibility import Flag, PlausibilityResult
from gateway.monitor.ranges import RangeClass, VitalRange, classify
from gateway.monitor.sustain import Sustainer

_NUMERIC = ("heart_rate", "spo2", "systolic_bp", "diastolic_bp", "temperature_c",
            "respiratory_rate")  # fmt: skip
_CRITICAL = (RangeClass.CRITICAL_LOW, RangeClass.CRITICAL_HIGH)
# NEWS2's red bands for pulse and breathing (3 points outside these, at chart precision).
_NEWS2_RED = {"heart_rate": (41.0, 130.0), "respiratory_rate": (9.0, 24.0)}

TrustOf = Callable[[str], Trust]


def trust_of(kind: str, core_temperature: bool = False) -> TrustOf:
    k = kind_of(kind)
    table = {v: k.trust(v, core_temperature=core_temperature) for v in _NUMERIC}
    return lambda vital: table.get(vital, "wrist")


DEFAULT_TRUST = trust_of(DEFAULT_KIND)


def household_trust(household: Household) -> dict[tuple[str, str], TrustOf]:
    """(person, device) -> how far each of its readings' vitals can be trusted."""
    return {(p.id, d.id): trust_of(d.kind, d.core_temperature)
            for p in household.persons for d in p.devices}  # fmt: skip


def without_trend(r: Reading, trust: TrustOf) -> Reading:
    """The reading as the alarms see it: trend-only values (skin temperature) left out."""
    if r.temperature_c is not None and trust("temperature_c") == "trend":
        return replace(r, temperature_c=None)
    return r


class Confirmed(NamedTuple):
    accepted: dict[str, float]  # what the scores and alerts see
    flags: tuple[Flag, ...]  # the plausibility flags the alert tracker still counts
    short: dict[str, float]  # wrist values on their short window (corroboration)
    consumer: bool  # the reading carried wrist values
    events: list[Event]  # single-reading questions asked or withdrawn


@dataclass(slots=True)
class Confirmation:
    """The confirmation step: a wrist reading's values into the window, out with what the
    window agrees on; its single intervention-range readings to the questions."""

    questions: Questions
    live: Sustainer
    late: Sustainer

    def confirm(
        self,
        r: Reading,
        pr: PlausibilityResult,
        ranges: Mapping[str, VitalRange],
        trust: TrustOf,
        ctx: Context,
        *,
        interval: float,
        news2: bool,
        retro: bool,
        now: float,
    ) -> Confirmed:
        """`news2`: the person is scored by NEWS2 (its red bands bound what is severe)."""
        wrist = _wrist_values(pr, ranges, trust)
        if not wrist:
            return Confirmed(pr.accepted, pr.flags, {}, False, [])
        limits = _severe_limits(ranges, news2, exercising=ctx.exercising)
        agreed, short = (self.late if retro else self.live).values(
            r.person, r.device, wrist, r.ts, interval=interval, ctx=ctx, mids=_mids(ranges),
            limits=limits,
        )  # fmt: skip
        accepted = {v: x for v, x in pr.accepted.items() if trust(v) != "wrist"} | agreed
        # A jump into the critical band counts through the window, not on its own.
        flags = tuple(f for f in pr.flags if trust(f.vital) != "wrist")
        events = [] if retro else self.questions.suspect(r, wrist, agreed, ranges, ctx, now,
                                                          interval)  # fmt: skip
        return Confirmed(accepted, flags, short, True, events)


def _wrist_values(
    pr: PlausibilityResult, ranges: Mapping[str, VitalRange], trust: TrustOf
) -> dict[str, float]:
    """This reading's wrist values for the confirmation window: the accepted ones and a
    jump into the critical band (not believed alone; it counts as one reading of the window)."""
    out = {v: x for v, x in pr.accepted.items() if trust(v) == "wrist"}
    for f in pr.flags:
        rng = ranges.get(f.vital)
        if (
            f.kind == "jump"
            and trust(f.vital) == "wrist"
            and rng is not None
            and classify(f.value, rng) in _CRITICAL
        ):
            out[f.vital] = f.value
    return out


def _severe_limits(
    ranges: Mapping[str, VitalRange], news2: bool, *, exercising: bool = False
) -> dict[str, tuple[float, float]]:
    """Per vital, the tightest limits a wrist value is judged severe against (sustain.severe):
    the person's critical limits, the intervention thresholds and, for an adult, the NEWS2 red
    bands (a pulse floor lowered for a beta-blocker still has NEWS2's 40 above it). While
    active or recovering only their floors: exertion raises pulse and breathing, it never
    explains a pulse of 33."""
    out = {}
    for v, r in ranges.items():
        lo, hi = max(r.critical[0], r.intervention[0]), min(r.critical[1], r.intervention[1])
        red = _NEWS2_RED.get(v) if news2 else None
        if red is not None:
            lo = max(lo, red[0])
            hi = hi if exercising else min(hi, red[1])
        out[v] = (lo, hi)
    return out


def _mids(ranges: Mapping[str, VitalRange]) -> dict[str, float]:
    return {v: (r.normal[0] + r.normal[1]) / 2.0 for v, r in ranges.items()}
