"""The health monitor: per reading, timeline -> context -> plausibility -> confirmation ->
scores (NEWS2 for adults, MEOWS in pregnancy, APLS bands for children, anomaly evidence) ->
alert observations -> events that say why and who must be told. Scores are evidence; the
decision is code.

`Monitor` is the facade the gateway uses; the steps live beside it: `devices` (arrival),
`context` (activity, recovery, sleep), `sources` and `sustain` (how far a device's reading
is trusted; a wrist's values confirmed over its window), `people` (what is remembered per
person), `scoring` (a frozen `Scores`), `decision` (scores -> alert transitions),
`alert_events` and `wording` (transitions -> events and their words), `views`."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from gateway.base.clock import Clock
from gateway.base.settings import Settings
from gateway.contract.events import FallPayload
from gateway.contract.response import Response
from gateway.contract.topics import EventType
from gateway.contract.values import Event, Reading
from gateway.household.model import Household
from gateway.monitor.alert_events import EventBuilder
from gateway.monitor.alerts import AlertTracker
from gateway.monitor.anomaly import AnomalyService
from gateway.monitor.ask_first import Questions
from gateway.monitor.baseline import Baselines, learnable
from gateway.monitor.context import ContextTracker
from gateway.monitor.decision import alert_transitions, open_on_value
from gateway.monitor.devices import DeviceWatch
from gateway.monitor.fever import child_fever
from gateway.monitor.news2_evidence import news2 as news2_score
from gateway.monitor.overrides import override_review
from gateway.monitor.people import PersonState
from gateway.monitor.persist import MonitorPersistence
from gateway.monitor.plausibility import DEFAULT_FROZEN_RULES, PlausibilityChecker
from gateway.monitor.ranges import Profile
from gateway.monitor.refit import History, refit_all
from gateway.monitor.response import decide
from gateway.monitor.scoring import book_view, corroborated, score_reading
from gateway.monitor.severity import URGENT_RANK, severity_rank
from gateway.monitor.sources import DEFAULT_TRUST, Confirmation, household_trust, without_trend
from gateway.monitor.stale import StaleTracker
from gateway.monitor.sustain import FAST_INTERVAL_S, K_FAST, K_SLOW, Sustainer
from gateway.monitor.timeline import Timeline
from gateway.monitor.views import MonitorViews
from gateway.monitor.wording import summary

log = logging.getLogger(__name__)

MOVEMENT_STEPS = 5


@dataclass(frozen=True, slots=True)
class Outcome:
    events: list[Event]
    news2_total: int | None
    news2_level: str | None
    anomaly: float | None
    flags: list[str]
    moved: bool
    retrospective: bool = False


class Monitor(MonitorViews, MonitorPersistence):
    def __init__(
        self,
        household: Household,
        settings: Settings,
        *,
        clock: Clock,
        data_dir: Path,
        anomaly: AnomalyService | None = None,
        sos_open: Callable[[str], bool] | None = None,
    ) -> None:
        """`sos_open(person)`: a hard SOS is running for them (alerts then ask nobody)."""
        self._hh = household
        self._s = settings
        self._clock = clock
        self._state_path = data_dir / "monitor_state.json"
        self._baseline_path = data_dir / "baseline.json"
        today = self._today()
        self._profile_day = today
        self._refresh_check_at = self._clock.now() + 60.0
        self._people: dict[str, PersonState] = {}
        # Only intervals the household states; otherwise the stale tracker learns from gaps.
        self._interval: dict[tuple[str, str], float] = {}
        # How far one reading of each vital from each device can be trusted (its kind).
        self._trust = household_trust(household)
        for p in household.persons:
            st = self._people[p.id] = PersonState.of(p, today)
            for note in override_review(st.profile):
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
        self._events = EventBuilder(clock, lambda p: self._people[p].profile, sos_open)
        self.questions = Questions(self.counters, confirm_s=settings.critical_confirm_s)
        # Wrist values are confirmed over several readings (sustain.py); late data has its
        # own windows, as it has its own alert tracker.
        self.confirmation = Confirmation(self.questions, Sustainer(), Sustainer())
        self.context = ContextTracker(household.timezone)
        self.retro_context = ContextTracker(household.timezone)
        # Each person's usual resting range, learnt over days: softens low priority only.
        self.baseline = Baselines(household.timezone, min_days=settings.baseline_min_days)
        self.devices = DeviceWatch(self.stale, self.timeline)
        self._location: dict[str, tuple[float, float]] = {}
        self._dirty = False
        self._load_state()

    # --- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        self.save_state()
        self.anomaly.close()

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
        """Score first, decide second: arrival -> context -> plausibility -> confirmation
        (wrist values) -> books -> scores -> alerts."""
        self._refresh_profiles()
        st = self._people[r.person]
        now = self._clock.now()
        arrival = self.devices.arrived(r, now, self._interval.get((r.person, r.device)))
        events, retro, interval = list(arrival.events), arrival.late, arrival.interval
        if retro:
            self.counters["late_readings"] += 1

        trust = self._trust.get((r.person, r.device), DEFAULT_TRUST)
        ctx = (self.retro_context if retro else self.context).observe(r, interval)
        # A wrist temperature is skin temperature: stored and shown as a trend, never scored.
        scored = without_trend(r, trust)
        # Computed once per profile and state (range_book.RangeBook), looked up per reading.
        ranges = st.ranges("active" if ctx.exercising else "rest", ctx.asleep,
                           r.spo2 is not None and trust("spo2") == "wrist")  # fmt: skip
        pr = self._checker(r.device, st.profile).check(scored, ranges)
        if not retro:
            st.show(r.ts, pr.accepted)
        flags = [f"{f.vital}:{f.kind}" for f in pr.flags]
        events += self.questions.events(
            scored, pr.flags, now, retro=retro, moving=ctx.moving, interval=interval
        )

        # What the alarms see from a wrist sensor: the value its recent readings agree on.
        accepted, tracker_flags, short, consumer, asked = self.confirmation.confirm(
            scored, pr, ranges, trust, ctx, interval=interval, news2=st.news2_applies,
            retro=retro, now=now,
        )  # fmt: skip
        events += asked

        latest, by_device = st.record(r, accepted, retro=retro)
        book = book_view(st, latest, by_device, r.ts, ranges)
        tracker = self.retro if retro else self.alerts
        tracked = tracker.tracked(r.person)
        sc = score_reading(st, r, accepted, book, ranges, exercising=ctx.exercising,
                           interval=interval, retro=retro, now=now,
                           news2_tracked="news2" in tracked, anomaly=self.anomaly)  # fmt: skip
        if short and sc.news2_alert is not None:
            sc = corroborated(sc, st, book, short, r.ts, ranges, exercising=ctx.exercising,
                              asleep=ctx.asleep)  # fmt: skip
        usual: Mapping[str, tuple[float, float]] = {}
        if not retro and self.baseline.enabled:
            if not ctx.exercising and not self.alerts.urgent_open(r.person):
                self.baseline.learn(r.person, learnable(accepted, sc.classes, sc.anomaly),
                                    ts=r.ts, asleep=ctx.asleep)  # fmt: skip
            usual = self.baseline.usual(r.person, ts=r.ts, asleep=ctx.asleep)
        shown_n2 = sc.news2  # what the reading's row and the person's state show
        if not retro:  # the views show live data only
            if sc.news2 is not None:
                st.news2, st.news2_ts = sc.news2, r.ts
            elif st.news2 is None and st.news2_applies and pr.accepted:
                # A watch's first readings, before its values agree (sustain.py): the card
                # and the state show the measured values' score until then. Only shown: the
                # alarms judge the agreed values.
                st.news2 = shown_n2 = news2_score(st.shown, r.ts, st.spo2_scale,
                                                  home_oxygen=st.home_oxygen)  # fmt: skip
                st.news2_ts = r.ts
            if sc.meows is not None:
                st.meows = sc.meows
            if accepted:
                st.anomaly = sc.anomaly
        flags += sc.flags()

        transitions, touched = alert_transitions(
            tracker, r, sc, accepted, ranges, tracker_flags, tracked=tracked,
            consciousness=None if st.news2_applies else r.consciousness,
            retro=retro, now=now, needed=self._needed(interval, consumer),
            silence=not consumer, extra=child_fever(st, r, accepted, latest, short),
            usual=usual,
        )  # fmt: skip
        self._dirty = self._dirty or touched
        if transitions:
            self._dirty = self._dirty or not retro
            for t in transitions:
                # An urgent alert on the vital now asks about it (a mild one only records).
                if t.kind != "cleared" and severity_rank(t.peak_severity) >= URGENT_RANK:
                    self.questions.confirmed(r.person, t.condition.rsplit("_", 1)[0])
            events += self._events.from_transitions(
                transitions,
                retrospective=retro,
                at=r.ts if retro else now,
                device=r.device,
                reading_ts=r.ts,
            )

        if r.latitude is not None and r.longitude is not None and not retro:
            self._location[r.person] = (r.latitude, r.longitude)
        if r.fall_detected:
            fall = FallPayload(r.device, retro).to_data() | {"reading_ts": r.ts}
            events.append(Event(EventType.FALL_DETECTED, r.person, r.ts if retro else now, fall))
        if not retro:
            events.extend(self.devices.battery(r, now))
        return Outcome(
            events=events,
            news2_total=shown_n2.total if shown_n2 else None,
            news2_level=shown_n2.level if shown_n2 else None,
            anomaly=sc.anomaly,
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
                st.reprofile(p, today)

    def tick(self) -> list[Event]:
        self._refresh_profiles()
        now = self._clock.now()
        events = self.devices.tick(now)
        transitions = self.alerts.tick(now)
        # A single intervention-range wrist reading that was asked about and neither refuted
        # nor confirmed within its wait (silence is not a refutation): the alert opens on it.
        for q in self.questions.due(now):
            st = self._people.get(q.person)
            if st is not None:
                transitions += open_on_value(self.alerts, q.person, q.device, q.vital, q.value,
                                             q.ts, now, st.ranges())  # fmt: skip
        if transitions:
            self._dirty = True
            events += self._events.from_transitions(transitions, retrospective=False, at=now)
        return events + self.questions.held_silent(now)

    def next_due(self) -> float | None:
        """The earliest wall time `tick` could act: an alert's confirmation or snooze, a single
        reading meeting its silence (a virtual clock ticks there; None: nothing pending)."""
        times = [t for t in (self.alerts.next_due(), self.questions.next_due()) if t is not None]
        return min(times, default=None)

    def device_status(self, person: str, device: str, online: bool) -> list[Event]:
        now = self._clock.now()
        return self.devices.status(person, device, online, now)

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

    # --- internals ------------------------------------------------------------------------
    def _checker(self, device: str, profile: Profile) -> PlausibilityChecker:
        checker = self._plaus.get(device)
        if checker is None:
            # A paced rhythm is steady by design: never call it a frozen sensor.
            rules = {k: v for k, v in DEFAULT_FROZEN_RULES.items()
                     if not (profile.paced and k == "heart_rate")}  # fmt: skip
            checker = self._plaus[device] = PlausibilityChecker(frozen_rules=rules)
        return checker

    def _needed(self, interval: float, consumer: bool = False) -> int:
        """Readings needed to open an urgent alert: as many as arrive within the confirm
        window, so a spot-check device (one reading in 5+ minutes) alarms on its first. A wrist
        device's values are already agreed over its window (sustain.py): the readings that
        agreement took count towards it, so fast streams keep their timing."""
        window = self._s.critical_confirm_s
        n = max(1, min(self._s.debounce_readings, 1 + int(window // max(interval, 1e-9))))
        if consumer:
            k = K_FAST if interval <= FAST_INTERVAL_S else K_SLOW
            n = max(1, n - k // 2)
        return n
