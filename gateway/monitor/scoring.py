"""The scoring step: one reading's accepted values and the person's recent books in, a frozen
`Scores` out (NEWS2 for adults, MEOWS in pregnancy, range classes for every age, the anomaly
score). No side effects: what is remembered and what is alerted on is decided by the caller,
as river keeps a model's score apart from the decision taken on it. (`news2_evidence.py` is the
NEWS2-over-a-book arithmetic this step calls.)"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from gateway.contract.topics import NUMERIC_VITALS
from gateway.contract.values import Reading
from gateway.monitor import news2_evidence, observe
from gateway.monitor.anomaly import AnomalyService
from gateway.monitor.meows import MeowsResult, score_meows
from gateway.monitor.news2 import News2Result
from gateway.monitor.people import PersonState
from gateway.monitor.ranges import RangeClass, VitalRange, classify, exertional_desaturation


class Scores(NamedTuple):
    """One reading's evidence, before anything is decided on it. (Immutable; a NamedTuple
    rather than a frozen dataclass because one is built per reading, on the hot path.)"""

    news2: News2Result | None  # the full score: shown, stored, quoted as evidence
    news2_alert: News2Result | None  # what the NEWS2 alert is judged on (no HR while walking)
    clearable: bool  # the NEWS2 evidence is complete enough to clear a NEWS2 alert
    meows: MeowsResult | None
    anomaly: float | None
    classes: Mapping[str, RangeClass]  # accepted vital -> its class in the person's ranges

    def flags(self) -> list[str]:
        """The reading's labels for storage: an abnormal one never teaches "normal"."""
        out = []
        if any(c != RangeClass.NORMAL for c in self.classes.values()):
            out.append("abnormal")  # never learn "normal" from this reading
        if self.anomaly is not None and self.anomaly >= observe.ANOMALY_OPEN:
            out.append("anomalous")
        return out


def book_view(
    st: PersonState,
    latest: news2_evidence.Book,
    by_device: news2_evidence.DeviceBook,
    ts: float,
    ranges: Mapping[str, VitalRange],
) -> news2_evidence.Book:
    """What the scores see: the latest values, or the worst across devices once some vital
    has been measured by more than one."""
    return (
        news2_evidence.worst_view(latest, by_device, ts, _rank(ranges))
        if st.several_devices
        else latest
    )


def score_reading(
    st: PersonState,
    r: Reading,
    accepted: Mapping[str, float],
    book: news2_evidence.Book,
    ranges: Mapping[str, VitalRange],
    *,
    exercising: bool,
    interval: float,
    retro: bool,
    now: float,
    news2_tracked: bool,
    anomaly: AnomalyService,
) -> Scores:
    """`news2_tracked`: the tracker holds a NEWS2 alert, so whether it may clear matters."""
    news2: News2Result | None = None
    meows: MeowsResult | None = None
    if (accepted or r.consciousness is not None) and st.news2_applies:
        news2 = news2_evidence.news2(book, r.ts, st.spo2_scale, home_oxygen=st.home_oxygen)
    if (accepted or r.consciousness is not None) and st.profile.pregnant:
        recent = {
            v: x for v in NUMERIC_VITALS if (x := news2_evidence.recent(book, v, r.ts)) is not None
        }
        meows = score_meows(recent, ranges, news2_evidence.recent(book, "consciousness", r.ts))

    score: float | None = None
    if accepted and not retro:
        row: dict[str, float | None] = dict(accepted)
        row["steps_per_min"] = (r.steps * 60.0 / interval) if r.steps is not None else None
        score = anomaly.score(r.person, row)

    classes = {v: classify(val, ranges[v]) for v, val in accepted.items() if v in ranges}

    n2_alert: News2Result | None = None
    clearable = False
    if news2 is not None:
        # NEWS2 is a resting score: while active and recovering, pulse and breathing are
        # judged by their activity-widened ranges instead, and the alert is scored without
        # them (partial: can raise, never clear).
        n2_alert = (news2 if not exercising
                    else news2_evidence.news2(book, r.ts, st.spo2_scale, skip_hr=True, skip_rr=True,
                                      skip_spo2=exertional_desaturation(st.profile),
                                      home_oxygen=st.home_oxygen))  # fmt: skip
        if news2_tracked and not exercising:  # scored without HR and RR: cannot clear
            answered = st.answered_at is not None and (
                abs(now - st.answered_at) <= news2_evidence.NEWS2_WINDOW_S
            )
            needs_o2 = st.spo2_scale == 2 or "home_oxygen" in st.profile.conditions
            clearable = news2_evidence.clearable(book, r.ts, answered_recently=answered,
                                         needs_o2=needs_o2)  # fmt: skip
    return Scores(news2, n2_alert, clearable, meows, score, classes)


_CLASS_RANK = {RangeClass.NORMAL: 0, RangeClass.LOW: 1, RangeClass.HIGH: 1,
               RangeClass.CRITICAL_LOW: 2, RangeClass.CRITICAL_HIGH: 2}  # fmt: skip


def _rank(ranges: Mapping[str, VitalRange]) -> Callable[[str, float], int]:
    def rank(vital: str, value: float) -> int:
        rng = ranges.get(vital)
        return 0 if rng is None else _CLASS_RANK.get(classify(value, rng), 0)

    return rank


def corroborated(
    sc: Scores,
    st: PersonState,
    book: news2_evidence.Book,
    short: Mapping[str, float],
    ts: float,
    ranges: Mapping[str, VitalRange],
    *,
    exercising: bool,
    asleep: bool = False,
) -> Scores:
    """Several wrist vitals agreeing: NEWS2 on their short windows' values (gateway/monitor/
    sustain.py). Used for the NEWS2 alert only when it scores medium or high with at least
    two parameters scoring 2 or more (one red value and a few 1s is not corroboration), and
    only when it scores higher than the long windows do (it never lowers anything)."""
    if asleep:
        return sc  # nocturnal dips and slow breathing move together; the long windows judge
    view = {**book, **{v: (ts, x) for v, x in short.items()}}
    n2 = news2_evidence.news2(view, ts, st.spo2_scale, skip_hr=exercising, skip_rr=exercising,
                      skip_spo2=exercising and exertional_desaturation(st.profile),
                      home_oxygen=st.home_oxygen)  # fmt: skip
    current = sc.news2_alert
    # A parameter corroborates only when it scores 2 or more *and* is outside the person's
    # own normal range (a COPD patient's usual breathing of 22 scores 2 and is his normal).
    strong = sum(
        1
        for v, p in n2.parameters.items()
        if p is not None and p >= 2 and (v not in short or not _normal(short[v], ranges.get(v)))
    )
    if current is None or n2.total < 5 or strong < 2 or n2.total <= current.total:
        return sc
    full = n2 if not exercising else news2_evidence.news2(view, ts, st.spo2_scale,
                                                   home_oxygen=st.home_oxygen)  # fmt: skip
    return sc._replace(news2=full, news2_alert=n2)


def _normal(value: float, rng: VitalRange | None) -> bool:
    return rng is not None and classify(value, rng) == RangeClass.NORMAL
