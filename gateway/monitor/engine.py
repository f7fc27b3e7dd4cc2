"""The health monitor: per reading, plausibility -> ranges -> NEWS2 -> anomaly evidence ->
debounced alerts. Scores are evidence; the decision to alert is made here, in code, and every
alert says why (rule or score, values, ranges)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gateway.clock import Clock
from gateway.contract import NUMERIC_VITALS, EventType
from gateway.household import Household
from gateway.model import Event, Reading
from gateway.monitor.alerts import AlertTracker, Transition
from gateway.monitor.anomaly import AnomalyService
from gateway.monitor.news2 import News2Result, score_news2
from gateway.monitor.plausibility import PlausibilityChecker
from gateway.monitor.ranges import (
    Profile,
    VitalRange,
    activity_from_steps,
    classify,
    ranges_for,
    spo2_scale_for,
)
from gateway.monitor.stale import StaleTracker, StateChange
from gateway.settings import Settings

log = logging.getLogger(__name__)

UNITS = {
    "heart_rate": "bpm",
    "spo2": "%",
    "systolic_bp": "mmHg",
    "diastolic_bp": "mmHg",
    "temperature_c": "°C",
    "respiratory_rate": "/min",
}
LABELS = {
    "heart_rate": "heart rate",
    "spo2": "oxygen saturation",
    "systolic_bp": "systolic blood pressure",
    "diastolic_bp": "diastolic blood pressure",
    "temperature_c": "temperature",
    "respiratory_rate": "breathing rate",
}
# How far back inside the normal range a value must come before an alert may clear.
HYSTERESIS = {
    "heart_rate": 5.0,
    "spo2": 1.0,
    "systolic_bp": 5.0,
    "diastolic_bp": 5.0,
    "temperature_c": 0.2,
    "respiratory_rate": 2.0,
}
# A vital measured this recently still counts towards NEWS2 (BP comes less often than HR).
NEWS2_WINDOW_S = 15 * 60
# Measured on watch-like data: training maxima sit near 0.64, so 0.6 plus "a vital out of
# range" marks readings unusual for this person without firing on the forest alone.
ANOMALY_OPEN = 0.60
ANOMALY_CLEAR = 0.52
MOVEMENT_STEPS = 5
BATTERY_LOW = 15.0
BATTERY_OK = 25.0
IMPLAUSIBLE_COOLDOWN_S = 300.0
_CONDITION = {(v, side): f"{v}_{side}" for v in NUMERIC_VITALS for side in ("low", "high")}
_RANK = {"abnormal": 1, "low-medium": 1, "medium": 2, "critical": 3, "high": 3}


@dataclass(frozen=True, slots=True)
class Outcome:
    events: list[Event]
    news2_total: int | None
    news2_level: str | None
    anomaly: float | None
    flags: list[str]
    moved: bool


@dataclass(slots=True)
class _PersonState:
    profile: Profile
    spo2_scale: int
    latest: dict[str, tuple[float, Any]] = field(default_factory=dict)  # vital -> (ts, value)
    news2: News2Result | None = None
    news2_ts: float | None = None
    anomaly: float | None = None


def advice_for(high: bool, news2_level: str | None) -> str:
    if high:
        return "Call emergency services now, or press SOS on your watch."
    if news2_level == "medium":
        return "Contact your doctor urgently today. Press SOS if you feel worse."
    return (
        "If you feel unwell, call emergency services or press SOS. "
        "Otherwise consider booking an appointment with your doctor."
    )


class Monitor:
    def __init__(
        self,
        household: Household,
        settings: Settings,
        *,
        clock: Clock,
        data_dir: Path,
        anomaly: AnomalyService | None = None,
    ) -> None:
        self._hh = household
        self._s = settings
        self._clock = clock
        self._state_path = data_dir / "monitor_state.json"
        today = datetime.now(UTC).date()
        self._people: dict[str, _PersonState] = {}
        # Only intervals the household states; otherwise the stale tracker learns from gaps.
        self._interval: dict[tuple[str, str], float] = {}
        for p in household.persons:
            prof = Profile.from_person(p, today)
            self._people[p.id] = _PersonState(prof, spo2_scale_for(prof))
            for d in p.devices:
                if "interval_s" in d.model_fields_set:
                    self._interval[(p.id, d.id)] = d.interval_s
        self._plaus: dict[str, PlausibilityChecker] = {}
        self.alerts = AlertTracker(
            debounce=settings.debounce_readings,
            clear=settings.clear_readings,
            cooldown_s=settings.alert_cooldown_s,
        )
        self.stale = StaleTracker(
            factor=settings.stale_factor, default_interval_s=settings.default_device_interval_s
        )
        self.anomaly = anomaly or AnomalyService(min_history=settings.anomaly_min_history)
        self._implausible_sent: dict[tuple[str, str, str], float] = {}
        self._battery_low: set[str] = set()
        self._device_state: dict[tuple[str, str], str] = {}
        self._location: dict[str, tuple[float, float]] = {}
        self._load_state()

    # --- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        self.save_state()
        self.anomaly.close()

    def save_state(self) -> None:
        """Open alerts survive a restart (one open alert per condition, even across restarts)."""
        tmp = self._state_path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps({"alerts": self.alerts.snapshot()}))
            os.replace(tmp, self._state_path)
        except OSError:
            log.exception("could not save monitor state")

    def _load_state(self) -> None:
        try:
            data = json.loads(self._state_path.read_text())
            self.alerts.restore(data.get("alerts", {}))
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError):
            log.warning("monitor state unreadable; starting with no open alerts")

    def seed_latest(self, latest: Mapping[tuple[str, str], Mapping[str, Any]]) -> None:
        """After a restart, treat the stored last readings as the recent past."""
        for (person, _device), row in latest.items():
            st = self._people.get(person)
            ts = row.get("ts")
            if st is None or not isinstance(ts, int | float):
                continue
            for v in NUMERIC_VITALS:
                if row.get(v) is not None:
                    prev = st.latest.get(v)
                    if prev is None or prev[0] < ts:
                        st.latest[v] = (float(ts), row[v])

    async def refit_models(self, history: Callable[..., list[dict[str, Any]]]) -> None:
        """Refit every person's forest on their clean stored history (off the loop, off-process)."""
        persons = list(self._people)

        async def provider() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
            for person in persons:
                rows = await asyncio.to_thread(history, person, limit=5000)
                yield person, [self._training_row(row) for row in rows]

        report = await self.anomaly.refit_all(provider)
        log.info(
            "anomaly refit: %d fitted, %d with too little history, %d failed",
            report.fitted,
            report.too_little_history,
            report.failed,
        )

    def _training_row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        # Same features as scoring: steps become a per-minute cadence.
        out = {v: row.get(v) for v in NUMERIC_VITALS}
        steps = row.get("steps")
        interval = self._interval.get((row.get("person", ""), row.get("device", "")))
        interval = interval or self._s.default_device_interval_s
        out["steps_per_min"] = steps * 60.0 / interval if steps is not None else None
        return out

    # --- per reading ----------------------------------------------------------------------
    def process(self, r: Reading) -> Outcome:
        st = self._people[r.person]
        events: list[Event] = []
        now = self._clock.now()
        key = (r.person, r.device)
        configured = self._interval.get(key)

        for ch in self.stale.seen(
            r.person,
            r.device,
            ts_received=now,
            heart_rate=r.heart_rate,
            steps=r.steps,
            expected_interval_s=configured,
            other_vitals=r.spo2 is not None
            or r.temperature_c is not None
            or r.systolic_bp is not None
            or r.respiratory_rate is not None,
        ):
            events.append(self._state_event(ch, now))

        interval = configured or self.stale.interval(r.person, r.device)
        activity = activity_from_steps(r.steps, interval)
        ranges = ranges_for(st.profile, activity)
        checker = self._plaus.get(r.device)
        if checker is None:
            checker = self._plaus[r.device] = PlausibilityChecker()
        pr = checker.check(r, ranges)
        flags = [f"{f.vital}:{f.kind}" for f in pr.flags]
        for f in pr.flags:
            k = (r.device, f.vital, f.kind)
            if now - self._implausible_sent.get(k, -1e18) >= IMPLAUSIBLE_COOLDOWN_S:
                self._implausible_sent[k] = now
                events.append(
                    Event(
                        EventType.IMPLAUSIBLE_READING,
                        r.person,
                        now,
                        {
                            "device": r.device,
                            "vital": f.vital,
                            "kind": f.kind,
                            "value": f.value,
                            "detail": f.detail,
                            "reading_ts": r.ts,
                        },
                    )
                )

        accepted = pr.accepted
        for v, value in accepted.items():
            prev = st.latest.get(v)
            if prev is None or prev[0] <= r.ts:
                st.latest[v] = (r.ts, value)
        if r.consciousness is not None:
            st.latest["consciousness"] = (r.ts, r.consciousness)
        if r.on_supplemental_o2 is not None:
            st.latest["on_supplemental_o2"] = (r.ts, r.on_supplemental_o2)

        # NEWS2 over what is recent for this person, when this reading carried a parameter.
        news2: News2Result | None = None
        if accepted or r.consciousness is not None:
            news2 = self._news2(st, r.ts)
            st.news2, st.news2_ts = news2, r.ts

        # Anomaly evidence from this person's own forest (None until one is fit).
        score: float | None = None
        if accepted:
            row: dict[str, float | None] = dict(accepted)
            row["steps_per_min"] = (r.steps * 60.0 / interval) if r.steps is not None else None
            score = self.anomaly.score(r.person, row)
            st.anomaly = score

        classes = {v: classify(val, ranges[v]) for v, val in accepted.items() if v in ranges}
        abnormal_now = {v: c for v, c in classes.items() if c != "normal"}
        if abnormal_now:
            flags.append("abnormal")  # never learn "normal" from this reading
        if score is not None and score >= ANOMALY_OPEN:
            flags.append("anomalous")

        transitions: list[Transition] = []
        for v, value in accepted.items():
            rng = ranges.get(v)
            if rng is None:
                continue
            transitions.extend(
                self._observe_vital(r.person, v, value, rng, classes[v], now, news2, score)
            )
        if news2 is not None and news2.total is not None:
            transitions.extend(self._observe_news2(r.person, news2, accepted, ranges, now, score))
        if score is not None:
            t = self._observe_anomaly(r.person, score, accepted, ranges, classes, news2, now)
            if t is not None:
                transitions.append(t)
        if transitions:
            events.extend(self._transition_events(transitions))

        if r.latitude is not None and r.longitude is not None:
            self._location[r.person] = (r.latitude, r.longitude)
        if r.fall_detected:
            events.append(Event(EventType.FALL_DETECTED, r.person, now, {"device": r.device}))
        moved = (r.steps or 0) >= MOVEMENT_STEPS
        if r.battery is not None:
            events.extend(self._battery(r, now))
        return Outcome(
            events=events,
            news2_total=news2.total if news2 else None,
            news2_level=news2.level if news2 else None,
            anomaly=score,
            flags=flags,
            moved=moved,
        )

    def tick(self) -> list[Event]:
        now = self._clock.now()
        return [self._state_event(ch, now) for ch in self.stale.tick(now)]

    def device_status(self, person: str, device: str, online: bool) -> list[Event]:
        now = self._clock.now()
        return [self._state_event(ch, now) for ch in self.stale.status(person, device, online, now)]

    # --- views ----------------------------------------------------------------------------
    def latest_vitals(self, person: str) -> dict[str, Any]:
        st = self._people.get(person)
        if st is None:
            return {}
        return {v: {"value": val, "ts": ts} for v, (ts, val) in st.latest.items()}

    def latest_news2(self, person: str) -> dict[str, Any] | None:
        st = self._people.get(person)
        if st is None or st.news2 is None:
            return None
        return {**st.news2.to_dict(), "ts": st.news2_ts}

    def open_alerts(self, person: str) -> list[dict[str, Any]]:
        return [t.to_dict() for t in self.alerts.open_alerts(person)]

    def open_alert_count(self, person: str) -> int:
        return self.alerts.open_count(person)

    def normal_ranges(self, person: str) -> dict[str, tuple[float, float]]:
        """The person's resting normal range per numeric vital (household overrides applied)."""
        st = self._people.get(person)
        if st is None:
            return {}
        return {
            v: (float(r.normal[0]), float(r.normal[1])) for v, r in ranges_for(st.profile).items()
        }

    def last_location(self, person: str) -> tuple[float, float] | None:
        """The latest fix any of the person's devices sent (in memory: on the SOS path)."""
        return self._location.get(person)

    def device_state(self, person: str, device: str) -> str:
        return self._device_state.get((person, device), "unknown")

    # --- internals ------------------------------------------------------------------------
    def _news2(self, st: _PersonState, ts: float) -> News2Result:
        def recent(name: str) -> Any:
            item = st.latest.get(name)
            if item is None or ts - item[0] > NEWS2_WINDOW_S:
                return None
            return item[1]

        return score_news2(
            respiratory_rate=recent("respiratory_rate"),
            spo2=recent("spo2"),
            on_supplemental_o2=recent("on_supplemental_o2"),
            systolic_bp=recent("systolic_bp"),
            heart_rate=recent("heart_rate"),
            consciousness=recent("consciousness"),
            temperature_c=recent("temperature_c"),
            spo2_scale=st.spo2_scale,
        )

    def _evidence(
        self,
        vitals: Mapping[str, float],
        ranges: Mapping[str, VitalRange],
        news2: News2Result | None,
        score: float | None,
    ) -> dict[str, Any]:
        abnormal = {}
        for v, value in vitals.items():
            rng = ranges.get(v)
            if rng is None:
                continue
            abnormal[v] = {
                "value": value,
                "unit": UNITS[v],
                "class": classify(value, rng),
                "normal": list(rng.normal),
                "critical": list(rng.critical),
            }
        return {
            "abnormal": abnormal,
            "news2": news2.to_dict() if news2 else None,
            "anomaly_score": None if score is None else round(score, 3),
        }

    def _observe_vital(
        self,
        person: str,
        v: str,
        value: float,
        rng: VitalRange,
        cls: str,
        now: float,
        news2: News2Result | None,
        score: float | None,
    ) -> list[Transition]:
        lo, hi = rng.normal
        m = HYSTERESIS[v]
        out = []
        for side, abnormal, cleared in (
            ("low", cls in ("low", "critical_low"), value >= lo + m),
            ("high", cls in ("high", "critical_high"), value <= hi - m),
        ):
            condition = _CONDITION[v, side]
            if not abnormal and not self.alerts.tracking(person, condition):
                continue  # healthy and untracked: nothing to count, skip the evidence
            severity = "critical" if cls.startswith("critical") else "abnormal"
            ev = self._evidence({v: value}, {v: rng}, news2, score)
            ev["rule"] = f"{v} {'below' if side == 'low' else 'above'} normal range"
            t = self.alerts.observe(
                person,
                condition,
                abnormal=abnormal,
                cleared=cleared,
                severity=severity,
                evidence=ev,
                now=now,
            )
            if t is not None:
                out.append(t)
        return out

    def _observe_news2(
        self,
        person: str,
        n: News2Result,
        vitals: Mapping[str, float],
        ranges: Mapping[str, VitalRange],
        now: float,
        score: float | None,
    ) -> list[Transition]:
        abnormal = n.level in ("medium", "high")
        if not abnormal and not self.alerts.tracking(person, "news2"):
            return []
        ev = self._evidence(
            {v: x for v, x in vitals.items() if n.parameters.get(v)}, ranges, n, score
        )
        ev["rule"] = f"NEWS2 aggregate {n.total} ({n.level})"
        t = self.alerts.observe(
            person,
            "news2",
            abnormal=abnormal,
            cleared=n.total <= 3,
            severity=n.level,
            evidence=ev,
            now=now,
        )
        return [t] if t is not None else []

    def _observe_anomaly(
        self,
        person: str,
        score: float,
        vitals: Mapping[str, float],
        ranges: Mapping[str, VitalRange],
        classes: Mapping[str, str],
        news2: News2Result | None,
        now: float,
    ) -> Transition | None:
        # The forest alone never raises an alert: it needs a vital outside its normal range
        # too. It catches combinations unusual *for this person* that single ranges miss.
        off = {v: vitals[v] for v, c in classes.items() if c != "normal"}
        abnormal = score >= ANOMALY_OPEN and bool(off)
        cleared = score < ANOMALY_CLEAR or not off
        if not abnormal and not self.alerts.tracking(person, "anomaly"):
            return None
        ev = self._evidence(off, ranges, news2, score)
        ev["rule"] = f"isolation-forest score {score:.2f} ≥ {ANOMALY_OPEN} with vitals out of range"
        return self.alerts.observe(
            person,
            "anomaly",
            abnormal=abnormal,
            cleared=cleared,
            severity="abnormal",
            evidence=ev,
            now=now,
        )

    def _transition_events(self, transitions: list[Transition]) -> list[Event]:
        """One reading can open several alerts (SpO2 low and heart rate high together): the
        person hears about them once, in one soft SOS, not once per condition."""
        out: list[Event] = []
        groups: dict[EventType, list[Transition]] = {}
        for t in transitions:
            kind = {
                "opened": EventType.SOFT_SOS,
                "reopened": EventType.SOFT_SOS,
                "updated": EventType.ALERT_UPDATED,
                "cleared": EventType.ALERT_CLEARED,
            }[t.kind]
            if kind is EventType.ALERT_CLEARED:
                out.append(self._event(kind, [t]))
            else:
                groups.setdefault(kind, []).append(t)
        for kind, ts in groups.items():
            out.append(self._event(kind, ts))
        return out

    def _event(self, kind: EventType, ts: list[Transition]) -> Event:
        ts = sorted(ts, key=lambda t: -_RANK.get(t.peak_severity, 0))
        lead = ts[0]
        abnormal: dict[str, Any] = {}
        news2: Any = None
        score: Any = None
        for t in ts:
            for v, info in (t.evidence.get("abnormal") or {}).items():
                if info.get("class") != "normal":
                    abnormal[v] = info
            news2 = news2 or t.evidence.get("news2")
            score = score if score is not None else t.evidence.get("anomaly_score")
        level = (news2 or {}).get("level")
        high = any(t.peak_severity in ("critical", "high") for t in ts) or level == "high"
        data: dict[str, Any] = {
            "alert_id": lead.alert_id,
            "alert_ids": [t.alert_id for t in ts],
            "condition": lead.condition,
            "conditions": [t.condition for t in ts],
            "transition": lead.kind,
            "severity": lead.severity,
            "peak_severity": lead.peak_severity,
            "high": high,
            "notify": self._should_notify(kind, ts),
            "opened_at": lead.opened_at,
            "abnormal": abnormal,
            "news2": news2,
            "anomaly_score": score,
            "rules": [str(t.evidence.get("rule", t.condition)) for t in ts],
        }
        if kind is not EventType.ALERT_CLEARED:
            data["why"] = self._why(data)
            data["advice"] = advice_for(high, level)
        return Event(kind, lead.person, self._clock.now(), data)

    def _should_notify(self, kind: EventType, ts: list[Transition]) -> bool:
        """Tell the person once per level of worry: a new condition that is no worse than what
        another open alert already told them is recorded, not re-announced."""
        if kind is EventType.ALERT_CLEARED or not any(t.notify for t in ts):
            return False
        ids = {t.alert_id for t in ts}
        told = max(
            (
                _RANK.get(a.peak_severity, 3)
                for a in self.alerts.open_alerts(ts[0].person)
                if a.alert_id not in ids and a.notified
            ),
            default=-1,
        )
        return max(_RANK.get(t.peak_severity, 3) for t in ts if t.notify) > told

    def _why(self, data: Mapping[str, Any]) -> str:
        parts = list(data["rules"])
        for v, info in data["abnormal"].items():
            lo, hi = info["normal"]
            parts.append(
                f"{LABELS[v]} {info['value']:g} {info['unit']} ({info['class'].replace('_', ' ')}; "
                f"normal {lo:g}-{hi:g})"
            )
        n2 = data.get("news2")
        if n2:
            pts = ", ".join(f"{k} {p}" for k, p in n2["parameters"].items() if p)
            parts.append(f"NEWS2 {n2['total']} ({n2['level']}{': ' + pts if pts else ''})")
        if data.get("anomaly_score") is not None:
            parts.append(f"anomaly score {data['anomaly_score']}")
        return "; ".join(parts)

    def _state_event(self, ch: StateChange, now: float) -> Event:
        self._device_state[(ch.person, ch.device)] = {
            "stale": "stale",
            "recovered": "active",
            "not_worn": "not_worn",
            "worn": "active",
            "offline": "offline",
            "online": "active",
        }.get(ch.kind, ch.kind)
        kind = {
            "stale": EventType.DEVICE_STALE,
            "recovered": EventType.DEVICE_RECOVERED,
            "not_worn": EventType.DEVICE_NOT_WORN,
            "worn": EventType.DEVICE_RECOVERED,
            "offline": EventType.DEVICE_OFFLINE,
            "online": EventType.DEVICE_ONLINE,
        }[ch.kind]
        return Event(
            kind, ch.person, now, {"device": ch.device, "since": ch.since, **dict(ch.detail)}
        )

    def _battery(self, r: Reading, now: float) -> list[Event]:
        assert r.battery is not None
        if r.battery <= BATTERY_LOW and r.device not in self._battery_low:
            self._battery_low.add(r.device)
            return [
                Event(
                    EventType.BATTERY_LOW, r.person, now, {"device": r.device, "battery": r.battery}
                )
            ]
        if r.battery >= BATTERY_OK:
            self._battery_low.discard(r.device)
        return []
