"""The scoring step on its own (gateway/monitor/scoring.py): a reading and its books in, a
frozen `Scores` out, the person's state untouched; and the decision step after it."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from gateway.contract.values import Reading
from gateway.household.model import load_household
from gateway.monitor.alerts import AlertTracker
from gateway.monitor.anomaly import AnomalyService
from gateway.monitor.decision import alert_transitions
from gateway.monitor.people import PersonState
from gateway.monitor.ranges import RangeClass, ranges_for
from gateway.monitor.scoring import Scores, book_view, score_reading

ROOT = Path(__file__).resolve().parents[3]
HH = load_household(ROOT / "examples" / "household.yaml")
DAD = next(p for p in HH.persons if p.id == "dad")
T0 = 1_790_000_000.0


def scored(st: PersonState, r: Reading, *, activity: str = "rest") -> Scores:
    ranges = ranges_for(st.profile, activity)
    accepted = {v: float(getattr(r, v)) for v in ("spo2", "heart_rate") if getattr(r, v)}
    latest, by_device = st.record(r, accepted, retro=False)
    book = book_view(st, latest, by_device, r.ts, ranges)
    return score_reading(st, r, accepted, book, ranges, exercising=activity != "rest",
                         interval=60.0,
                         retro=False, now=r.ts, news2_tracked=False,
                         anomaly=AnomalyService())  # fmt: skip


def test_an_adult_reading_scores_news2_and_classes_without_touching_the_views() -> None:
    st = PersonState.of(DAD, date(2026, 1, 1))
    sc = scored(st, Reading("dad", "watch-jon", T0, spo2=89, heart_rate=80))
    assert sc.news2 is not None and sc.news2_alert is sc.news2 and sc.meows is None
    assert sc.classes["spo2"] == RangeClass.CRITICAL_LOW and sc.anomaly is None
    assert sc.flags() == ["abnormal"]
    assert st.news2 is None  # remembering the score is the caller's decision


def test_walking_scores_the_news2_alert_without_the_pulse() -> None:
    st = PersonState.of(DAD, date(2026, 1, 1))
    sc = scored(st, Reading("dad", "watch-jon", T0, spo2=97, heart_rate=135), activity="active")
    assert sc.news2 is not None and sc.news2_alert is not None
    assert sc.news2_alert.total < sc.news2.total and not sc.clearable


def test_the_decision_opens_an_urgent_alert_on_its_first_reading_when_one_is_needed() -> None:
    st = PersonState.of(DAD, date(2026, 1, 1))
    r = Reading("dad", "watch-jon", T0, spo2=89, heart_rate=80)
    sc = scored(st, r)
    tracker = AlertTracker()
    ts, touched = alert_transitions(
        tracker, r, sc, {"spo2": 89.0, "heart_rate": 80.0}, ranges_for(st.profile), [],
        tracked=tracker.tracked("dad"), consciousness=None, retro=False, now=T0, needed=1,
    )  # fmt: skip
    assert touched and sorted(t.condition for t in ts) == ["news2", "spo2_low"]
    assert all(t.kind == "opened" for t in ts)
