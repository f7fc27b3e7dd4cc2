"""The health monitor: per reading, timeline -> plausibility -> ranges -> scores (NEWS2 for
adults, MEOWS in pregnancy, APLS bands for children, anomaly evidence) -> alert observations
-> events that say why and who must be told. Scores are evidence; the decision is code."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gateway.clock import Clock
from gateway.contract import NUMERIC_VITALS, EventType
from gateway.household import Household
from gateway.model import Event, Reading
from gateway.monitor import observe
from gateway.monitor.alerts import (
    URGENT_RANK,
    AlertTracker,
    Status,
    Transition,
    severity_rank,
)
from gateway.monitor.anomaly import AnomalyService
from gateway.monitor.meows import MeowsResult, score_meows
from gateway.monitor.monitor_events import EventBuilder
from gateway.monitor.news2 import News2Result, score_news2
from gateway.monitor.overrides import override_review
from gateway.monitor.plausibility import DEFAULT_FROZEN_RULES, PlausibilityChecker
from gateway.monitor.ranges import (
    Profile,
    RangeClass,
    VitalRange,
    activity_from_steps,
    classify,
    news2_applicable,
    ranges_for,
    spo2_scale_for,
)
from gateway.monitor.response import unconfirmed_value
from gateway.monitor.stale import StaleTracker, StateChange
from gateway.monitor.timeline import Timeline
from gateway.settings import Settings

log = logging.getLogger(__name__)

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
_CRITICAL = (RangeClass.CRITICAL_LOW, RangeClass.CRITICAL_HIGH)


@dataclass(frozen=True, slots=True)
class Outcome:
    events: list[Event]
    news2_total: int | None
    news2_level: str | None
    anomaly: float | None
    flags: list[str]
    moved: bool
    retrospective: bool = False


@dataclass(slots=True)
class _PersonState:
    profile: Profile
    spo2_scale: int
    latest: dict[str, tuple[float, Any]] = field(default_factory=dict)  # vital -> (ts, value)
    retro: dict[str, tuple[float, Any]] = field(default_factory=dict)  # late data's own
    news2: News2Result | None = None
    news2_ts: float | None = None
    meows: MeowsResult | None = None
    anomaly: float | None = None
    answered_at: float | None = None  # the wearer answered a prompt: evidence of "Alert"


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
            for note in override_review(prof):
                if note.kind != "applied":  # ids and vital names only: no values, no PHI
                    log.warning("%s: %s range override %s", p.id, note.vital, note.kind)
            for d in p.devices:
                if "interval_s" in d.model_fields_set:
                    self._interval[(p.id, d.id)] = d.interval_s
        self._plaus: dict[str, PlausibilityChecker] = {}
        kw = {"debounce": settings.debounce_readings, "clear": settings.clear_readings,
              "cooldown_s": settings.alert_cooldown_s, "confirm_s": settings.critical_confirm_s}  # fmt: skip
        self.alerts = AlertTracker(**kw)  # type: ignore[arg-type]
        self.retro = AlertTracker(**kw)  # type: ignore[arg-type]  # late data, own timeline
        self.stale = StaleTracker(
            factor=settings.stale_factor, default_interval_s=settings.default_device_interval_s
        )
        self.timeline = Timeline(settings.late_after_s)
        self.anomaly = anomaly or AnomalyService(min_history=settings.anomaly_min_history)
        self.counters: Counter[str] = Counter()
        self._events = EventBuilder(clock, lambda p: self._people[p].profile)
        self._implausible_sent: dict[tuple[str, str, str], float] = {}
        # (person, device, vital) asked about since its last plausible value: ask once.
        self._unconfirmed: set[tuple[str, str, str]] = set()
        self._battery_low: set[str] = set()
        self._device_state: dict[tuple[str, str], str] = {}
        self._location: dict[str, tuple[float, float]] = {}
        self.dirty = False
        self._load_state()

    # --- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        self.save_state()
        self.anomaly.close()

    def state_blob(self) -> str:
        """Open alerts, snoozes and pending confirmations survive a restart (taken on the
        loop; written off it by `write_state`)."""
        self.dirty = False
        return json.dumps(
            {"alerts": self.alerts.snapshot(), "unconfirmed": sorted(self._unconfirmed)}
        )

    def write_state(self, blob: str) -> None:
        tmp = self._state_path.with_suffix(".tmp")
        try:
            tmp.write_text(blob)
            os.replace(tmp, self._state_path)
        except OSError:
            log.exception("could not save monitor state")

    def save_state(self) -> None:
        self.write_state(self.state_blob())

    def _load_state(self) -> None:
        try:
            data = json.loads(self._state_path.read_text())
            self.alerts.restore(data.get("alerts", {}))
            self._unconfirmed = {
                (str(a), str(b), str(c)) for a, b, c in data.get("unconfirmed", [])
            }
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
        timing = self.timeline.judge(r.person, r.device, r.ts, now)
        retro = timing.late
        if retro:
            self.counters["late_readings"] += 1
        if timing.skew_detected is not None:
            events.append(Event(EventType.DEVICE_CLOCK_SKEW, r.person, now,
                                {"device": r.device, "offset_s": round(timing.skew_detected)}))  # fmt: skip
        key = (r.person, r.device)
        configured = self._interval.get(key)
        other = any(getattr(r, v) is not None for v in NUMERIC_VITALS if v != "heart_rate")
        for ch in self.stale.seen(r.person, r.device, ts_received=now, heart_rate=r.heart_rate,
                                  steps=r.steps, expected_interval_s=configured,
                                  other_vitals=other):  # fmt: skip
            events.append(self._state_event(ch, now))

        interval = configured or self.stale.interval(r.person, r.device)
        activity = activity_from_steps(r.steps, interval)
        ranges = ranges_for(st.profile, activity)
        pr = self._checker(r.device, st.profile).check(r, ranges)
        flags = [f"{f.vital}:{f.kind}" for f in pr.flags]
        moving = (r.steps or 0) >= MOVEMENT_STEPS
        events += self._flag_events(r, pr.flags, now, retro=retro, moving=moving)

        accepted = pr.accepted
        book = st.retro if retro else st.latest
        for v, value in accepted.items():
            prev = book.get(v)
            if prev is None or prev[0] <= r.ts:
                book[v] = (r.ts, value)
        if r.consciousness is not None:
            book["consciousness"] = (r.ts, r.consciousness)
        if r.on_supplemental_o2 is not None:
            book["on_supplemental_o2"] = (r.ts, r.on_supplemental_o2)

        news2: News2Result | None = None
        meows: MeowsResult | None = None
        if (accepted or r.consciousness is not None) and news2_applicable(st.profile):
            news2 = self._news2(st, book, r.ts)
            if not retro:
                st.news2, st.news2_ts = news2, r.ts
        if (accepted or r.consciousness is not None) and st.profile.pregnant:
            recent = {v: x for v in NUMERIC_VITALS if (x := _recent(book, v, r.ts)) is not None}
            meows = score_meows(recent, ranges, _recent(book, "consciousness", r.ts))
            if not retro:
                st.meows = meows

        score: float | None = None
        if accepted and not retro:
            row: dict[str, float | None] = dict(accepted)
            row["steps_per_min"] = (r.steps * 60.0 / interval) if r.steps is not None else None
            score = self.anomaly.score(r.person, row)
            st.anomaly = score

        classes = {v: classify(val, ranges[v]) for v, val in accepted.items() if v in ranges}
        if any(c != RangeClass.NORMAL for c in classes.values()):
            flags.append("abnormal")  # never learn "normal" from this reading
        if score is not None and score >= ANOMALY_OPEN:
            flags.append("anomalous")

        obs = [
            o for v, x in accepted.items() if v in ranges for o in observe.vital(v, x, ranges[v])
        ]
        # A sudden jump into the critical band is not yet believed, but it counts towards
        # the alert (and its time rule): an arrest looks exactly like a jump.
        jumped = {f.vital: f.value for f in pr.flags if f.kind == "jump" and f.vital in ranges
                  and classify(f.value, ranges[f.vital]) in _CRITICAL}  # fmt: skip
        obs += [o for v, x in jumped.items() for o in observe.vital(v, x, ranges[v])
                if o.status == "abnormal"]  # fmt: skip
        if news2 is not None:
            # NEWS2 is a resting score: while walking, the pulse is judged by its activity-
            # widened range instead, and the alert is scored without it (partial: can raise,
            # never clear).
            n2 = news2 if activity == "rest" else self._news2(st, book, r.ts, skip_hr=True)
            obs.append(observe.news2(n2, accepted, clearable=self._clearable(st, book, r.ts)))
        if meows is not None:
            obs.append(observe.meows(meows, accepted))
        if r.consciousness is not None and not news2_applicable(st.profile):
            obs.append(observe.consciousness(r.consciousness))

        tracker = self.retro if retro else self.alerts
        needed = self._needed(interval)
        transitions: list[Transition] = []
        for o in obs:
            if o.status != "abnormal" and not tracker.tracking(r.person, o.condition):
                continue  # healthy and untracked: skip the evidence (hot path)
            ev = observe.evidence(o.vitals, ranges, news2=news2, meows=meows, score=score,
                                  unconfirmed=frozenset(jumped))  # fmt: skip
            ev["rule"] = o.rule
            t = tracker.observe(
                r.person, o.condition, status=o.status, severity=o.severity, evidence=ev,
                ts=r.ts, received=None if retro else now,
                needed=needed if severity_rank(o.severity) >= URGENT_RANK else None,
            )  # fmt: skip
            if t is not None:
                transitions.append(t)
        if score is not None:
            t = self._observe_anomaly(r, score, accepted, ranges, classes, news2)
            if t is not None:
                transitions.append(t)
        if transitions:
            self.dirty = self.dirty or not retro
            events += self._events.from_transitions(
                transitions, retrospective=retro, at=r.ts if retro else now, device=r.device
            )

        if r.latitude is not None and r.longitude is not None and not retro:
            self._location[r.person] = (r.latitude, r.longitude)
        if r.fall_detected:
            events.append(Event(EventType.FALL_DETECTED, r.person, r.ts if retro else now,
                                {"device": r.device, "retrospective": retro}))  # fmt: skip
        if r.battery is not None and not retro:
            events.extend(self._battery(r, now))
        return Outcome(
            events=events,
            news2_total=news2.total if news2 else None,
            news2_level=news2.level if news2 else None,
            anomaly=score,
            flags=flags,
            moved=moving and not retro,
            retrospective=retro,
        )

    def tick(self) -> list[Event]:
        now = self._clock.now()
        events = [self._state_event(ch, now) for ch in self.stale.tick(now)]
        transitions = self.alerts.tick(now)
        if transitions:
            self.dirty = True
            events += self._events.from_transitions(transitions, retrospective=False, at=now)
        return events

    def device_status(self, person: str, device: str, online: bool) -> list[Event]:
        now = self._clock.now()
        return [self._state_event(ch, now) for ch in self.stale.status(person, device, online, now)]

    # --- the wearer answered ----------------------------------------------------------------
    def answered(self, person: str, *, ok: bool, alert_ids: list[str], snooze_s: float) -> None:
        """An answer to "are you OK?". Answering at all is evidence of being Alert (ACVPU);
        "OK" snoozes the alerts it was about, so a still-critical value is asked about again
        after `snooze_s` instead of never."""
        st = self._people.get(person)
        if st is None:
            return
        now = self._clock.now()
        st.answered_at = now
        if not ok:
            return
        for a in self.alerts.open_alerts(person):
            if a.alert_id in alert_ids:
                self.alerts.snooze(person, a.condition, now + snooze_s)
                self.dirty = True

    def all_clear(self, person: str, by: str) -> list[Event]:
        """Someone checked on the person: close every open alert (the explicit all-clear)."""
        now = self._clock.now()
        ts = self.alerts.clear_all(person, now, f"all-clear by {by}")
        self.dirty = self.dirty or bool(ts)
        return self._events.from_transitions(ts, retrospective=False, at=now)

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

    def latest_meows(self, person: str) -> dict[str, Any] | None:
        st = self._people.get(person)
        return None if st is None or st.meows is None else st.meows.to_dict()

    def open_alerts(self, person: str) -> list[dict[str, Any]]:
        return [t.to_dict() for t in self.alerts.open_alerts(person)]

    def open_alert_count(self, person: str) -> int:
        return self.alerts.open_count(person)

    def profile(self, person: str) -> Profile | None:
        st = self._people.get(person)
        return None if st is None else st.profile

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
    def _checker(self, device: str, profile: Profile) -> PlausibilityChecker:
        checker = self._plaus.get(device)
        if checker is None:
            # A paced rhythm is steady by design: never call it a frozen sensor.
            rules = {k: v for k, v in DEFAULT_FROZEN_RULES.items()
                     if not (profile.paced and k == "heart_rate")}  # fmt: skip
            checker = self._plaus[device] = PlausibilityChecker(frozen_rules=rules)
        return checker

    def _needed(self, interval: float) -> int:
        """Readings needed to open an urgent alert: as many as arrive within the confirm
        window, so a spot-check device (one reading in 5+ minutes) alarms on its first."""
        window = self._s.critical_confirm_s
        return max(1, min(self._s.debounce_readings, 1 + int(window // max(interval, 1e-9))))

    def _news2(
        self,
        st: _PersonState,
        book: Mapping[str, tuple[float, Any]],
        ts: float,
        *,
        skip_hr: bool = False,
    ) -> News2Result:
        return score_news2(
            respiratory_rate=_recent(book, "respiratory_rate", ts),
            spo2=_recent(book, "spo2", ts),
            on_supplemental_o2=_recent(book, "on_supplemental_o2", ts),
            systolic_bp=_recent(book, "systolic_bp", ts),
            heart_rate=None if skip_hr else _recent(book, "heart_rate", ts),
            consciousness=_recent(book, "consciousness", ts),
            temperature_c=_recent(book, "temperature_c", ts),
            spo2_scale=st.spo2_scale,
        )

    def _clearable(
        self, st: _PersonState, book: Mapping[str, tuple[float, Any]], ts: float
    ) -> bool:
        """A NEWS2 alert clears only on complete evidence: all five measured parameters,
        consciousness observed (reported, or the wearer answered a prompt within the window)
        and the oxygen flag reported when the person may be on oxygen."""
        aware = _recent(book, "consciousness", ts) is not None or (
            st.answered_at is not None and abs(self._clock.now() - st.answered_at) <= NEWS2_WINDOW_S
        )
        needs_o2 = st.spo2_scale == 2 or "home_oxygen" in st.profile.conditions
        o2 = not needs_o2 or _recent(book, "on_supplemental_o2", ts) is not None
        return aware and o2 and all(_recent(book, v, ts) is not None
                                    for v in ("respiratory_rate", "spo2", "systolic_bp",
                                              "heart_rate", "temperature_c"))  # fmt: skip

    def _flag_events(
        self, r: Reading, flags: Any, now: float, *, retro: bool, moving: bool
    ) -> list[Event]:
        out: list[Event] = []
        seen_plausible = {v for v in NUMERIC_VITALS if getattr(r, v) is not None}
        for f in flags:
            if f.kind in ("impossible", "out_of_plausible"):
                seen_plausible.discard(f.vital)
            if f.kind == "impossible":
                self.counters[f"impossible_{f.vital}"] += 1  # discarded, never asked about
                continue
            data: dict[str, Any] = {"device": r.device, "vital": f.vital, "kind": f.kind,
                                    "value": f.value, "detail": f.detail, "reading_ts": r.ts,
                                    "retrospective": retro}  # fmt: skip
            key = (r.person, r.device, f.vital)
            if f.kind == "out_of_plausible" and key not in self._unconfirmed:
                # Possible but implausible (a pulse of 0): ask now, once, until it reads
                # plausibly again. Unanswered it is a hard SOS (response.unconfirmed_value).
                if not retro:
                    self._unconfirmed.add(key)
                    self.dirty = True
                resp = unconfirmed_value(moving=moving, retrospective=retro)
                data |= {"ask": resp.ask, "response": resp.to_dict()}
                self._implausible_sent[(r.device, f.vital, f.kind)] = now
                out.append(
                    Event(EventType.IMPLAUSIBLE_READING, r.person, r.ts if retro else now, data)
                )
                continue
            k = (r.device, f.vital, f.kind)
            if now - self._implausible_sent.get(k, -1e18) >= IMPLAUSIBLE_COOLDOWN_S:
                self._implausible_sent[k] = now
                out.append(Event(EventType.IMPLAUSIBLE_READING, r.person, r.ts if retro else now,
                                 data | {"ask": False}))  # fmt: skip
        if not retro:
            for v in seen_plausible:
                if (r.person, r.device, v) in self._unconfirmed:
                    self._unconfirmed.discard((r.person, r.device, v))
                    self.dirty = True
        return out

    def _observe_anomaly(
        self,
        r: Reading,
        score: float,
        vitals: Mapping[str, float],
        ranges: Mapping[str, VitalRange],
        classes: Mapping[str, str],
        news2: News2Result | None,
    ) -> Transition | None:
        # The forest alone never raises an alert: it needs a vital outside its normal range
        # too. It clears only when the vitals it was about are measured and back in range.
        off = {v: vitals[v] for v, c in classes.items() if c != "normal"}
        abnormal = score >= ANOMALY_OPEN and bool(off)
        current = self.alerts.alert(r.person, "anomaly")
        about = set((current.evidence.get("abnormal") or {}) if current else ())
        cleared = (score < ANOMALY_CLEAR or not off) and about <= set(vitals)
        if not abnormal and not self.alerts.tracking(r.person, "anomaly"):
            return None
        ev = observe.evidence(off, ranges, news2=news2, meows=None, score=score)
        ev["rule"] = f"isolation-forest score {score:.2f} ≥ {ANOMALY_OPEN} with vitals out of range"
        status: Status = "abnormal" if abnormal else "cleared" if cleared else "band"
        return self.alerts.observe(r.person, "anomaly", status=status, severity="abnormal",
                                   evidence=ev, ts=r.ts, received=self._clock.now())  # fmt: skip

    def _state_event(self, ch: StateChange, now: float) -> Event:
        self._device_state[(ch.person, ch.device)] = {
            "stale": "stale", "recovered": "active", "not_worn": "not_worn",
            "worn": "active", "offline": "offline", "online": "active",
        }.get(ch.kind, ch.kind)  # fmt: skip
        kind = {
            "stale": EventType.DEVICE_STALE, "recovered": EventType.DEVICE_RECOVERED,
            "not_worn": EventType.DEVICE_NOT_WORN, "worn": EventType.DEVICE_RECOVERED,
            "offline": EventType.DEVICE_OFFLINE, "online": EventType.DEVICE_ONLINE,
        }[ch.kind]  # fmt: skip
        return Event(
            kind, ch.person, now, {"device": ch.device, "since": ch.since, **dict(ch.detail)}
        )

    def _battery(self, r: Reading, now: float) -> list[Event]:
        assert r.battery is not None
        if r.battery <= BATTERY_LOW and r.device not in self._battery_low:
            self._battery_low.add(r.device)
            return [Event(EventType.BATTERY_LOW, r.person, now,
                          {"device": r.device, "battery": r.battery})]  # fmt: skip
        if r.battery >= BATTERY_OK:
            self._battery_low.discard(r.device)
        return []


def _recent(book: Mapping[str, tuple[float, Any]], name: str, ts: float) -> Any:
    item = book.get(name)
    if item is None or abs(ts - item[0]) > NEWS2_WINDOW_S:
        return None
    return item[1]
