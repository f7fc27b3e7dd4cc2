"""The ranges the monitor looks up per reading (range_book.RangeBook, via PersonState.ranges) are
the ranges computed from scratch: for any profile and state, and after the profile moves on
(a new local date, other overrides)."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.base.clock import ManualClock
from gateway.base.settings import Settings
from gateway.contract.topics import NUMERIC_VITALS
from gateway.contract.values import Reading
from gateway.household.model import Household, Person
from gateway.monitor.engine import Monitor
from gateway.monitor.people import PersonState
from gateway.monitor.range_book import RangeBook
from gateway.monitor.ranges import (
    KNOWN_CONDITIONS,
    RATE_LIMITING_DRUGS,
    Activity,
    Override,
    Profile,
    VitalRange,
    ranges_for,
    spo2_scale_for,
)

uncached = ranges_for.__wrapped__  # the computation itself, without the lru_cache


def fresh(profile: Profile, activity: Activity, asleep: bool, wrist: bool) -> dict[str, VitalRange]:
    return dict(uncached(profile, activity, asleep, wrist))


def _pair(lo: float, hi: float) -> st.SearchStrategy[tuple[float, float]]:
    return st.tuples(st.integers(int(lo), int(hi)), st.integers(1, 60)).map(
        lambda t: (float(t[0]), float(t[0] + t[1]))
    )


overrides = st.dictionaries(
    st.sampled_from(NUMERIC_VITALS),
    st.builds(
        Override,
        normal=st.none() | _pair(20, 150),
        critical=st.none() | _pair(10, 150),
        plausible=st.none() | _pair(0, 150),
        clinician=st.none() | st.just("Dr Okoro: agreed at clinic"),
    ),
    max_size=3,
)
ages = st.none() | st.integers(0, 20) | st.integers(0, 150)
profiles = st.builds(
    Profile,
    age=ages,
    sex=st.sampled_from([None, "female", "male", "other"]),
    age_days=st.none() | st.integers(0, 400) | st.integers(0, 40_000),
    conditions=st.frozensets(
        st.sampled_from([*sorted(KNOWN_CONDITIONS), "Pregnant", "afib", "asthma", "ltot"]),
        max_size=4,
    ),
    medications=st.frozensets(
        st.sampled_from([*RATE_LIMITING_DRUGS, "Bisoprolol 5 mg", "apixaban", "salbutamol"]),
        max_size=3,
    ),
    overrides=overrides,
)
states = st.tuples(st.sampled_from(["rest", "active"]), st.booleans(), st.booleans())


@settings(max_examples=400, deadline=None)
@given(profiles, st.lists(states, min_size=1, max_size=12))
def test_looked_up_ranges_are_the_computed_ranges(
    profile: Profile, seq: list[tuple[Activity, bool, bool]]
) -> None:
    ps = PersonState(profile, spo2_scale_for(profile))
    book = RangeBook(profile)
    for activity, asleep, wrist in seq:  # repeats come from the book
        expected = fresh(profile, activity, asleep, wrist)
        assert dict(ps.ranges(activity, asleep, wrist)) == expected
        assert dict(book.get(activity, asleep, wrist)) == expected
        assert dict(ranges_for(profile, activity, asleep, wrist)) == expected  # today's path
    assert dict(ps.ranges()) == fresh(profile, "rest", False, False)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(profiles, st.lists(states, max_size=4)), min_size=2, max_size=6))
def test_a_new_profile_is_never_answered_from_the_old_book(
    steps: list[tuple[Profile, list[tuple[Activity, bool, bool]]]],
) -> None:
    ps = PersonState(steps[0][0], 1)
    for profile, seq in steps:
        ps.profile = profile  # what reprofile does on a new date, or other overrides
        for activity, asleep, wrist in [*seq, ("rest", False, False)]:
            assert dict(ps.ranges(activity, asleep, wrist)) == fresh(
                profile, activity, asleep, wrist
            )


def _person(birth: date, **kw: object) -> Person:
    fields = {"id": "p", "name": "P", "birth_date": birth, "sex": "female",
              "location": {"latitude": 51.5, "longitude": -0.1}}  # fmt: skip
    return Person.model_validate(fields | kw)


@settings(max_examples=150, deadline=None)
@given(
    birth=st.dates(date(1930, 1, 1), date(2025, 6, 1)),
    start=st.dates(date(2025, 6, 1), date(2026, 6, 1)),
    days=st.lists(st.integers(1, 200), min_size=1, max_size=5),
    pregnant=st.booleans(),
    conditions=st.lists(st.sampled_from(sorted(KNOWN_CONDITIONS)), max_size=2),
    seq=st.lists(states, min_size=1, max_size=4),
)
def test_reprofiled_on_a_new_date_the_ranges_follow_the_age(
    birth: date,
    start: date,
    days: list[int],
    pregnant: bool,
    conditions: list[str],
    seq: list[tuple[Activity, bool, bool]],
) -> None:
    person = _person(
        birth,
        pregnant=pregnant,
        conditions=conditions,
        medications=["bisoprolol 5 mg"] if "atrial_fibrillation" in conditions else [],
        ranges={"heart_rate": {"normal": [55, 95]}},
    )
    day = start
    ps = PersonState.of(person, day)
    for step in [0, *days]:
        day += timedelta(days=step)
        ps.reprofile(person, day)
        expected = Profile.from_person(person, day)
        assert ps.profile == expected
        for activity, asleep, wrist in seq:
            assert dict(ps.ranges(activity, asleep, wrist)) == fresh(
                expected, activity, asleep, wrist
            )


@pytest.mark.parametrize(
    ("birth", "vital"),
    [
        (date(2026, 1, 1), "temperature_c"),  # 90 days old on 2026-04-01: infant fever rule
        (date(2010, 4, 2), "heart_rate"),  # 16 on 2026-04-02: adult bands
    ],
)
def test_the_monitor_moves_the_ranges_on_at_local_midnight(
    tmp_path: Path, birth: date, vital: str
) -> None:
    tz = ZoneInfo("Europe/London")
    person = _person(birth, devices=[{"id": "w", "kind": "watch", "interval_s": 60}])
    hh = Household(timezone="Europe/London", persons=[person])
    before = datetime(2026, 4, 1, 23, 58, tzinfo=tz).timestamp()
    clock = ManualClock(before)
    m = Monitor(hh, Settings(data_dir=tmp_path), clock=clock, data_dir=tmp_path)

    def step() -> dict[str, VitalRange]:
        clock.advance(60)
        m.process(Reading("p", "w", clock.now(), heart_rate=90.0, spo2=98.0))
        return dict(m._people["p"].ranges())

    first = step()
    assert first == fresh(Profile.from_person(person, date(2026, 4, 1)), "rest", False, False)
    for _ in range(3):  # past midnight and the once-a-minute date check
        after = step()
    new = Profile.from_person(person, date(2026, 4, 2))
    assert after == fresh(new, "rest", False, False)
    assert after[vital] != first[vital]
    assert m.normal_ranges("p") == {v: r.normal for v, r in after.items()}
