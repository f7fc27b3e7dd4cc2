"""Is this reading believable? A per-device stateful check run on every message.

Rules (docs/clinical.md explains each):
- beyond any human value (SpO2 over 100 %, a pulse over 350) -> "impossible": discarded and
  counted, nobody asked (the wire schema already refuses negatives and wrong types);
- outside the plausible range but physically possible (a pulse of 0 or 20, SpO2 40 %) ->
  "out_of_plausible", not accepted; the monitor asks the wearer, because a vanished pulse
  cannot be told from an arrest;
- diastolic >= systolic -> both "inconsistent", not accepted;
- a change faster than physiology allows since the last accepted value (within 10 min) ->
  "jump", not accepted, unless the next readings confirm the new level (then re-baseline);
- the same exact value of a vital that always varies, for too long -> "frozen", not accepted;
- readings not newer than the device's newest are checked without touching the history.

Not accepted means unknown, never normal: callers must not clear an alert because a vital
was questioned. Pure Python on purpose: this runs at 1,000+ messages a second.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from gateway.contract.values import Reading
from gateway.contract.vitals import NUMERIC_VITALS, VITALS
from gateway.monitor.ranges import VitalRange

FlagKind = Literal["impossible", "out_of_plausible", "jump", "frozen", "inconsistent"]

# Beyond these no human value has been recorded (closed intervals of what is *possible*; a
# pulse or breathing rate of 0 is possible: it is an arrest). Outside: a broken device or a
# bad payload, never a person to ask. The bounds are the vitals table's (gateway/contract/vitals.py).
POSSIBLE: Mapping[str, tuple[float, float]] = {
    v.name: v.possible for v in VITALS if v.possible is not None
}


@dataclass(frozen=True, slots=True)
class JumpRule:
    """A change is impossible when |Δ| > base + per_second × seconds since the last value."""

    base: float
    per_second: float

    def tolerance(self, dt: float) -> float:
        # The epsilon keeps a change of exactly the tolerance (36.8 -> 37.5 in 10 s) from
        # becoming a jump through binary rounding (37.5 - 36.8 = 0.7000000000000028).
        return self.base + self.per_second * dt + 1e-9


@dataclass(frozen=True, slots=True)
class FrozenRule:
    """Frozen when the same exact value repeats >= readings times over >= span_s seconds."""

    readings: int
    span_s: float


DEFAULT_JUMP_RULES: Mapping[str, JumpRule] = {
    "heart_rate": JumpRule(30.0, 2.0),
    "spo2": JumpRule(6.0, 0.5),
    "systolic_bp": JumpRule(40.0, 1.0),
    "diastolic_bp": JumpRule(30.0, 1.0),
    "temperature_c": JumpRule(0.5, 0.02),
    "respiratory_rate": JumpRule(10.0, 0.5),
}
# Long enough that a smoothed integer heart rate at rest, or a steady 97 % saturation in
# sleep, is not called frozen; short enough that a stuck sensor is caught within the hour.
DEFAULT_FROZEN_RULES: Mapping[str, FrozenRule] = {
    "heart_rate": FrozenRule(12, 300.0),
    "respiratory_rate": FrozenRule(12, 1200.0),
    "spo2": FrozenRule(12, 1800.0),
}
STALE_AFTER_S = 600.0  # older baselines say nothing about what is possible now
CONFIRMATIONS = 2  # readings that must agree with a jump before it is believed


@dataclass(frozen=True, slots=True)
class Flag:
    vital: str
    kind: FlagKind
    value: float
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"vital": self.vital, "kind": self.kind, "value": self.value, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class PlausibilityResult:
    accepted: dict[str, float]
    flags: tuple[Flag, ...] = ()

    @property
    def flagged(self) -> frozenset[str]:
        return frozenset(f.vital for f in self.flags)


class _VitalState:
    __slots__ = (
        "last_ts",
        "last_value",
        "pending_count",
        "pending_ts",
        "pending_value",
        "run_count",
        "run_start_ts",
        "run_value",
    )

    def __init__(self) -> None:
        self.last_value: float | None = None  # last accepted value and its time
        self.last_ts = 0.0
        self.pending_value: float | None = None  # a jump awaiting confirmation
        self.pending_ts = 0.0
        self.pending_count = 0
        self.run_value: float | None = None  # the current run of identical values
        self.run_start_ts = 0.0
        self.run_count = 0


@dataclass(slots=True)
class _DeviceState:
    newest_ts: float | None = None
    vitals: dict[str, _VitalState] = field(default_factory=dict)


class PlausibilityChecker:
    """Keeps a little history per (person, device); one instance serves every device."""

    def __init__(
        self,
        *,
        jump_rules: Mapping[str, JumpRule] = DEFAULT_JUMP_RULES,
        frozen_rules: Mapping[str, FrozenRule] = DEFAULT_FROZEN_RULES,
        stale_after_s: float = STALE_AFTER_S,
        confirmations: int = CONFIRMATIONS,
    ) -> None:
        self._jump = dict(jump_rules)
        self._frozen = dict(frozen_rules)
        self._stale_after = stale_after_s
        self._confirmations = confirmations
        self._devices: dict[tuple[str, str], _DeviceState] = {}

    def forget(self, person: str, device: str) -> None:
        """Drop a device's history (e.g. re-fitted or replaced)."""
        self._devices.pop((person, device), None)

    def check(self, reading: Reading, ranges: Mapping[str, VitalRange]) -> PlausibilityResult:
        key = (reading.person, reading.device)
        device = self._devices.get(key)
        if device is None:
            device = self._devices[key] = _DeviceState()
        ts = reading.ts
        # Equal timestamps count as not newer: a redelivered message must not extend a run.
        in_order = device.newest_ts is None or ts > device.newest_ts
        if in_order:
            device.newest_ts = ts

        flags: list[Flag] = []
        candidates: dict[str, float] = {}
        for name in NUMERIC_VITALS:
            raw = getattr(reading, name)
            if raw is None:
                continue
            value = float(raw)
            rng = ranges.get(name)
            possible = POSSIBLE.get(name)
            if possible is not None and not possible[0] <= value <= possible[1]:
                flags.append(Flag(name, "impossible", value, "beyond any human value"))
            elif rng is not None and not rng.plausible[0] <= value <= rng.plausible[1]:
                side = "below" if value < rng.plausible[0] else "above"
                flags.append(Flag(name, "out_of_plausible", value, f"{side} the plausible range"))
            elif value != value:  # NaN with no range to catch it
                flags.append(Flag(name, "out_of_plausible", value, "not a number"))
            else:
                candidates[name] = value

        systolic = candidates.get("systolic_bp")
        diastolic = candidates.get("diastolic_bp")
        if systolic is not None and diastolic is not None and diastolic >= systolic:
            detail = "diastolic is not below systolic"
            flags.append(Flag("systolic_bp", "inconsistent", systolic, detail))
            flags.append(Flag("diastolic_bp", "inconsistent", diastolic, detail))
            del candidates["systolic_bp"], candidates["diastolic_bp"]

        accepted: dict[str, float] = {}
        for name, value in candidates.items():
            state = device.vitals.get(name)
            if state is None:
                state = device.vitals[name] = _VitalState()
            flag = (
                self._in_order(name, value, ts, state)
                if in_order
                else self._out_of_order(name, value, ts, state)
            )
            if flag is None:
                accepted[name] = value
            else:
                flags.append(flag)
        return PlausibilityResult(accepted, tuple(flags))

    def _in_order(self, name: str, value: float, ts: float, st: _VitalState) -> Flag | None:
        frozen = self._frozen.get(name)
        if frozen is not None:
            if value == st.run_value:
                st.run_count += 1
            else:
                st.run_value, st.run_start_ts, st.run_count = value, ts, 1
            if st.run_count >= frozen.readings and ts - st.run_start_ts >= frozen.span_s:
                st.pending_value = None
                return Flag(name, "frozen", value, "the same value for too long; sensor stuck?")

        rule = self._jump.get(name)
        if rule is None or st.last_value is None or ts - st.last_ts > self._stale_after:
            return self._accept(st, value, ts)
        if abs(value - st.last_value) <= rule.tolerance(ts - st.last_ts):
            return self._accept(st, value, ts)
        # A jump. A glitch does not repeat; a real change (complete heart block, a fall in
        # pressure) persists, so readings that agree with the new level confirm it.
        if st.pending_value is not None and abs(value - st.pending_value) <= rule.tolerance(
            ts - st.pending_ts
        ):
            st.pending_count += 1
            if st.pending_count >= self._confirmations:
                return self._accept(st, value, ts)  # re-baseline on the new level
            detail = f"sudden change, confirmed {st.pending_count}/{self._confirmations}"
            return Flag(name, "jump", value, detail)
        st.pending_value, st.pending_ts, st.pending_count = value, ts, 0
        return Flag(name, "jump", value, "changed faster than physiology allows")

    def _out_of_order(self, name: str, value: float, ts: float, st: _VitalState) -> Flag | None:
        # Late data is judged against the newest baseline but never rewrites history.
        rule = self._jump.get(name)
        if rule is None or st.last_value is None:
            return None
        dt = abs(ts - st.last_ts)
        if dt > self._stale_after or abs(value - st.last_value) <= rule.tolerance(dt):
            return None
        return Flag(name, "jump", value, "late reading far from the current level")

    @staticmethod
    def _accept(st: _VitalState, value: float, ts: float) -> None:
        st.last_value, st.last_ts = value, ts
        st.pending_value, st.pending_count = None, 0
        return None
