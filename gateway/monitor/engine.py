"""The health monitor: per reading, timeline -> plausibility -> ranges -> scores (NEWS2 for
adults, MEOWS in pregnancy, APLS bands for children, anomaly evidence) -> alert observations
-> events that say why and who must be told. Scores are evidence; the decision is code."""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from gateway.clock import Clock
from gateway.contract import NUMERIC_VITALS, EventType
from gateway.household import Household
from gateway.model import Event, Reading
from gateway.monitor import observe, scores
from gateway.monitor.alert_state import read_state, write_atomic
from gateway.monitor.alerts import AlertTracker, Transition
from gateway.monitor.anomaly import AnomalyService
from gateway.monitor.devices import DeviceWatch
from gateway.monitor.meows import MeowsResult, score_meows
from gateway.monitor.monitor_events import EventBuilder
from gateway.monitor.news2 import News2Result
from gateway.monitor.overrides import override_review
from gateway.monitor.plausibility import DEFAULT_FROZEN_RULES, PlausibilityChecker
from gateway.monitor.questions import Questions
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
from gateway.monitor.refit import History, refit_all
from gateway.monitor.response import Response, decide
from gateway.monitor.severity import URGENT_RANK, severity_rank
from gateway.monitor.stale import StaleTracker
from gateway.monitor.timeline import Timeline
from gateway.monitor.wording import summary
from gateway.settings import Settings

log = logging.getLogger(__name__)

MOVEMENT_STEPS = 5
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
    news2_applies: bool = True  # adults who are not pregnant (RCP)

    @property
    def home_oxygen(self) -> bool:
        return "home_oxygen" in self.profile.conditions

    # vital -> device -> (ts, value): the worst recent value across devices is scored.
    devices: scores.DeviceBook = field(default_factory=dict)
    retro_devices: scores.DeviceBook = field(default_factory=dict)
    several_devices: bool = False  # some vital measured by more than one device


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
        today = self._today()
        self._profile_day = today
        self._refresh_check_at = self._clock.now() + 60.0
        self._people: dict[str, _PersonState] = {}
        # Only intervals the household states; otherwise the stale tracker learns from gaps.
        self._interval: dict[tuple[str, str], float] = {}
        for p in household.persons:
            prof = Profile.from_person(p, today)
            self._people[p.id] = _PersonState(
                prof, spo2_scale_for(prof), news2_applies=news2_applicable(prof)
            )
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
        self.questions = Questions(self.counters)
        self.devices = DeviceWatch()
        self._location: dict[str, tuple[float, float]] = {}
        self._dirty = False
        self._load_state()

    # --- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        self.save_state()
        self.anomaly.close()

    @property
    def dirty(self) -> bool:
        return self._dirty or self.questions.dirty

    def state_blob(self) -> str:
        """Open alerts, snoozes and pending questions survive a restart (taken on the loop;
        written off it by `write_state`)."""
        self._dirty = self.questions.dirty = False
        return json.dumps(
            {"alerts": self.alerts.snapshot(), "unconfirmed": self.questions.snapshot()}
        )

    def write_state(self, blob: str) -> None:
        write_atomic(self._state_path, blob)

    def save_state(self) -> None:
        self.write_state(self.state_blob())

    def _load_state(self) -> None:
        data = read_state(self._state_path)
        try:
            self.alerts.restore(data.get("alerts", {}))
            self.questions.restore(data.get("unconfirmed", []))
        except (ValueError, KeyError, TypeError):
            log.warning("monitor state unreadable; starting with no open alerts")

    def seed_latest(self, latest: Mapping[tuple[str, str], Mapping[str, Any]]) -> None:
        """After a restart, treat the stored last readings as the recent past: only the
        values the plausibility check accepted (the store keeps raw values and their flags;
        a pulse of 0 that was asked about must not score NEWS2 red after a restart)."""
        for (person, device), row in latest.items():
            st = self._people.get(person)
            ts = row.get("ts")
            if st is None or not isinstance(ts, int | float):
                continue
            flagged = {str(f).split(":", 1)[0] for f in row.get("flags") or () if ":" in str(f)}
            for v in NUMERIC_VITALS:
                if row.get(v) is not None and v not in flagged:
                    prev = st.latest.get(v)
                    if prev is None or prev[0] < ts:
                        st.latest[v] = (float(ts), row[v])
                    per = st.devices.setdefault(v, {})
                    st.several_devices = st.several_devices or (bool(per) and device not in per)
                    per[device] = (float(ts), row[v])

    async def refit_models(self, history: History) -> None:
        """Refit every person's forest on their clean stored history."""
        await refit_all(self.anomaly, list(self._people), history, self._interval,
                        self._s.default_device_interval_s)  # fmt: skip
        # /v1/stats shows the forests held (their memory is the gateway's largest per person).
        self.counters["anomaly_models"] = len(self.anomaly.persons)
        self.counters["anomaly_model_kb"] = self.anomaly.nbytes // 1024
        self.counters["anomaly_refits"] += 1

    # --- per reading ----------------------------------------------------------------------
    def process(self, r: Reading) -> Outcome:
        self._refresh_profiles()
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
            events.append(self.devices.change(ch, now))

        interval = configured or self.stale.interval(r.person, r.device)
        activity = activity_from_steps(r.steps, interval)
        ranges = ranges_for(st.profile, activity)
        pr = self._checker(r.device, st.profile).check(r, ranges)
        flags = [f"{f.vital}:{f.kind}" for f in pr.flags]
        # Walking, not a twitch: a cadence of purposeful steps over the reading's interval.
        moving = activity == "active"
        events += self.questions.events(r, pr.flags, now, retro=retro, moving=moving)

        accepted = pr.accepted
        latest = st.retro if retro else st.latest
        by_device = st.retro_devices if retro else st.devices
        for v, value in accepted.items():
            prev = latest.get(v)
            if prev is None or prev[0] <= r.ts:
                latest[v] = (r.ts, value)
            per = by_device.get(v)
            if per is None:
                per = by_device[v] = {}
            elif r.device not in per and per:
                st.several_devices = True  # from now on, score the worst across devices
            if r.device not in per or per[r.device][0] <= r.ts:
                per[r.device] = (r.ts, value)
        if r.consciousness is not None:
            latest["consciousness"] = (r.ts, r.consciousness)
        if r.on_supplemental_o2 is not None:
            latest["on_supplemental_o2"] = (r.ts, r.on_supplemental_o2)
        book = (
            scores.worst_view(latest, by_device, r.ts, _rank(ranges))
            if st.several_devices
            else latest
        )

        news2: News2Result | None = None
        meows: MeowsResult | None = None
        if (accepted or r.consciousness is not None) and st.news2_applies:
            news2 = scores.news2(book, r.ts, st.spo2_scale, home_oxygen=st.home_oxygen)
            if not retro:
                st.news2, st.news2_ts = news2, r.ts
        if (accepted or r.consciousness is not None) and st.profile.pregnant:
            recent = {
                v: x for v in NUMERIC_VITALS if (x := scores.recent(book, v, r.ts)) is not None
            }
            meows = score_meows(recent, ranges, scores.recent(book, "consciousness", r.ts))
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
        if score is not None and score >= observe.ANOMALY_OPEN:
            flags.append("anomalous")

        tracker = self.retro if retro else self.alerts
        tracked = tracker.tracked(r.person)
        n2_alert: News2Result | None = None
        clearable = False
        if news2 is not None:
            # NEWS2 is a resting score: while walking, the pulse is judged by its activity-
            # widened range instead, and the alert is scored without it (partial: can raise,
            # never clear).
            n2_alert = (news2 if activity == "rest"
                        else scores.news2(book, r.ts, st.spo2_scale, skip_hr=True,
                                          home_oxygen=st.home_oxygen))  # fmt: skip
            if "news2" in tracked and activity == "rest":  # scored without HR: cannot clear
                answered = st.answered_at is not None and (
                    abs(now - st.answered_at) <= scores.NEWS2_WINDOW_S
                )
                needs_o2 = st.spo2_scale == 2 or "home_oxygen" in st.profile.conditions
                clearable = scores.clearable(book, r.ts, answered_recently=answered,
                                             needs_o2=needs_o2)  # fmt: skip
        consciousness = None if st.news2_applies else r.consciousness
        obs, jumped = observe.collect(accepted, ranges, pr.flags, news2=n2_alert,
                                      clearable=clearable, meows=meows,
                                      consciousness=consciousness,
                                      tracked=tracked)  # fmt: skip
        if score is not None and not retro:
            current = self.alerts.alert(r.person, "anomaly")
            about = set(current.evidence.get("abnormal") or {}) if current else set()
            obs.append(observe.anomaly(score, accepted, classes, about=about))
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
                source=r.device if o.per_device else None,
            )  # fmt: skip
            if not retro:
                self._dirty = True  # counts, dormancy and sources survive a crash too
            if t is not None:
                transitions.append(t)
        if transitions:
            self._dirty = self._dirty or not retro
            events += self._events.from_transitions(
                transitions, retrospective=retro, at=r.ts if retro else now, device=r.device
            )

        if r.latitude is not None and r.longitude is not None and not retro:
            self._location[r.person] = (r.latitude, r.longitude)
        if r.fall_detected:
            events.append(Event(EventType.FALL_DETECTED, r.person, r.ts if retro else now,
                                {"device": r.device, "retrospective": retro}))  # fmt: skip
        if not retro:
            events.extend(self.devices.battery(r, now))
        return Outcome(
            events=events,
            news2_total=news2.total if news2 else None,
            news2_level=news2.level if news2 else None,
            anomaly=score,
            flags=flags,
            moved=(r.steps or 0) >= MOVEMENT_STEPS and not retro,
            retrospective=retro,
        )

    def _today(self) -> date:
        """The household's local date on the monitor's clock (ages change at midnight)."""
        return datetime.fromtimestamp(self._clock.now(), ZoneInfo(self._hh.timezone)).date()

    def _refresh_profiles(self) -> None:
        """Ages move on: a baby turns 3 months, a child turns 16 (NEWS2 starts) while the hub
        runs for months. Profiles are rebuilt when the local date changes (checked at most
        once a minute of the monitor's clock)."""
        now = self._clock.now()
        if now < self._refresh_check_at:
            return
        self._refresh_check_at = now + 60.0
        today = self._today()
        if today == self._profile_day:
            return
        self._profile_day = today
        for p in self._hh.persons:
            st = self._people.get(p.id)
            if st is not None:
                prof = Profile.from_person(p, today)
                st.profile, st.spo2_scale = prof, spo2_scale_for(prof)
                st.news2_applies = news2_applicable(prof)

    def tick(self) -> list[Event]:
        self._refresh_profiles()
        now = self._clock.now()
        events = [self.devices.change(ch, now) for ch in self.stale.tick(now)]
        transitions = self.alerts.tick(now)
        if transitions:
            self._dirty = True
            events += self._events.from_transitions(transitions, retrospective=False, at=now)
        return events

    def device_status(self, person: str, device: str, online: bool) -> list[Event]:
        now = self._clock.now()
        return [
            self.devices.change(ch, now) for ch in self.stale.status(person, device, online, now)
        ]

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
                self._dirty = True

    def unasked(self) -> list[tuple[str, str, Response, str]]:
        """Open, told, urgent alerts that nobody snoozed: after a crash, those whose question
        never reached the escalation watcher must be asked (the caller checks which)."""
        out = []
        for a in self.alerts.open_alerts():
            if (
                a.notified
                and not a.dormant
                and a.snoozed_until is None
                and severity_rank(a.severity) >= URGENT_RANK
            ):
                resp = decide([(a.condition, a.peak_severity)], self._people[a.person].profile,
                              retrospective=False)  # fmt: skip
                out.append((a.person, a.alert_id, resp, summary(a.evidence.get("abnormal") or {})))
        return out

    def remind_later(self, person: str, *, alert_ids: list[str], after_s: float) -> None:
        """The wearer did not answer and the contacts were texted: ask again after `after_s`
        if the value is still urgent (silence is not "I'm OK", but it is not worse either)."""
        until = self._clock.now() + after_s
        for a in self.alerts.open_alerts(person):
            if a.alert_id in alert_ids:
                self.alerts.snooze(person, a.condition, until)
                self._dirty = True

    def all_clear(self, person: str, by: str) -> list[Event]:
        """Someone checked on the person: close every open alert (the explicit all-clear)."""
        now = self._clock.now()
        ts = self.alerts.clear_all(person, now, f"all-clear by {by}")
        self._dirty = self._dirty or bool(ts)
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
        return self.devices.state(person, device)

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


_CLASS_RANK = {RangeClass.NORMAL: 0, RangeClass.LOW: 1, RangeClass.HIGH: 1,
               RangeClass.CRITICAL_LOW: 2, RangeClass.CRITICAL_HIGH: 2}  # fmt: skip


def _rank(ranges: Mapping[str, VitalRange]) -> Callable[[str, float], int]:
    def rank(vital: str, value: float) -> int:
        rng = ranges.get(vital)
        return 0 if rng is None else _CLASS_RANK.get(classify(value, rng), 0)

    return rank
