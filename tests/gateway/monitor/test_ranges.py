"""Ranges: adult defaults, classification edges, every conditional factor, the nesting
invariant for generated profiles, and agreement with NEWS2's red bands."""

from __future__ import annotations

import math
from datetime import date

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from gateway.contract.topics import NUMERIC_VITALS
from gateway.household.model import Person
from gateway.monitor.context import ACTIVE_CADENCE_SPM, activity_from_steps
from gateway.monitor.news2 import score_news2
from gateway.monitor.ranges import (
    KNOWN_CONDITIONS,
    RATE_LIMITING_DRUGS,
    Override,
    Profile,
    RangeClass,
    VitalRange,
    classify,
    computed_ranges,
    news2_applicable,
    ranges_for,
    spo2_scale_for,
)

ADULT = Profile()


def hr(profile: Profile, activity: str = "rest") -> VitalRange:
    return ranges_for(profile, activity)["heart_rate"]  # type: ignore[arg-type]


def test_adult_defaults() -> None:
    r = ranges_for(ADULT, "rest")
    assert dict(r) == {
        "heart_rate": VitalRange((50, 100), (41, 130), (25, 250)),
        # Intervention limits: SpO2 < 85 (BTS), BP >= 180/120 (NICE NG136).
        "spo2": VitalRange((95, 100), (92, 100), (50, 100), (85, math.inf)),
        "systolic_bp": VitalRange((100, 160), (91, 219), (50, 260), (-math.inf, 179)),
        "diastolic_bp": VitalRange((60, 100), (40, 130), (25, 160), (-math.inf, 119)),
        "temperature_c": VitalRange((36.1, 38.0), (35.1, 39.9), (30, 43)),
        "respiratory_rate": VitalRange((12, 20), (9, 24), (4, 60)),
    }
    assert set(r) == set(NUMERIC_VITALS)


C = RangeClass


@pytest.mark.parametrize(
    ("vital", "value", "expected"),
    [
        ("heart_rate", 24, C.IMPLAUSIBLE),
        ("heart_rate", 25, C.CRITICAL_LOW),
        ("heart_rate", 40, C.CRITICAL_LOW),  # NEWS2 red (<= 40)
        ("heart_rate", 40.5, C.CRITICAL_LOW),  # between two watch steps: the abnormal side
        ("heart_rate", 41, C.LOW),
        ("heart_rate", 49, C.LOW),
        ("heart_rate", 50, C.NORMAL),
        ("heart_rate", 100, C.NORMAL),
        ("heart_rate", 101, C.HIGH),
        ("heart_rate", 130, C.HIGH),
        ("heart_rate", 130.5, C.CRITICAL_HIGH),
        ("heart_rate", 131, C.CRITICAL_HIGH),
        ("heart_rate", 250, C.CRITICAL_HIGH),
        ("heart_rate", 251, C.IMPLAUSIBLE),
        ("spo2", 49, C.IMPLAUSIBLE),
        ("spo2", 91, C.CRITICAL_LOW),
        ("spo2", 92, C.LOW),
        ("spo2", 94, C.LOW),
        ("spo2", 95, C.NORMAL),
        ("spo2", 100, C.NORMAL),
        ("spo2", 100.5, C.IMPLAUSIBLE),
        ("systolic_bp", 49, C.IMPLAUSIBLE),
        ("systolic_bp", 90, C.CRITICAL_LOW),
        ("systolic_bp", 91, C.LOW),
        ("systolic_bp", 99, C.LOW),
        ("systolic_bp", 100, C.NORMAL),
        ("systolic_bp", 160, C.NORMAL),
        ("systolic_bp", 161, C.HIGH),
        ("systolic_bp", 219, C.HIGH),
        ("systolic_bp", 220, C.CRITICAL_HIGH),
        ("systolic_bp", 260, C.CRITICAL_HIGH),
        ("systolic_bp", 500, C.IMPLAUSIBLE),  # "a systolic of 500 is not plausible"
        ("diastolic_bp", 24, C.IMPLAUSIBLE),
        ("diastolic_bp", 39, C.CRITICAL_LOW),
        ("diastolic_bp", 40, C.LOW),
        ("diastolic_bp", 60, C.NORMAL),
        ("diastolic_bp", 90, C.NORMAL),
        ("diastolic_bp", 101, C.HIGH),
        ("diastolic_bp", 130, C.HIGH),
        ("diastolic_bp", 131, C.CRITICAL_HIGH),
        ("diastolic_bp", 161, C.IMPLAUSIBLE),
        ("temperature_c", 29.9, C.IMPLAUSIBLE),
        ("temperature_c", 35.0, C.CRITICAL_LOW),
        ("temperature_c", 35.1, C.LOW),
        ("temperature_c", 36.0, C.LOW),
        ("temperature_c", 36.1, C.NORMAL),
        ("temperature_c", 38.0, C.NORMAL),
        ("temperature_c", 38.1, C.HIGH),
        ("temperature_c", 39.9, C.HIGH),
        ("temperature_c", 40.0, C.CRITICAL_HIGH),
        ("temperature_c", 43.1, C.IMPLAUSIBLE),
        ("respiratory_rate", 3, C.IMPLAUSIBLE),
        ("respiratory_rate", 8, C.CRITICAL_LOW),
        ("respiratory_rate", 9, C.LOW),
        ("respiratory_rate", 12, C.NORMAL),
        ("respiratory_rate", 20, C.NORMAL),
        ("respiratory_rate", 21, C.HIGH),
        ("respiratory_rate", 24, C.HIGH),
        ("respiratory_rate", 25, C.CRITICAL_HIGH),
        ("respiratory_rate", 61, C.IMPLAUSIBLE),
    ],
)
def test_classify_adult_edges(vital: str, value: float, expected: RangeClass) -> None:
    assert classify(value, ranges_for(ADULT, "rest")[vital]) == expected


def test_classify_nan_is_implausible() -> None:
    assert classify(math.nan, ranges_for(ADULT, "rest")["heart_rate"]) == C.IMPLAUSIBLE


def test_range_class_is_a_plain_string_for_json() -> None:
    assert C.CRITICAL_HIGH == "critical_high"
    assert str(C.CRITICAL_LOW) == "critical_low"


# --- agreement with NEWS2: every NEWS2 red (3 points) is critical for a default adult ----------

RED_CHECKS = {
    "heart_rate": lambda v: score_news2(heart_rate=v).parameters["heart_rate"],
    "respiratory_rate": lambda v: score_news2(respiratory_rate=v).parameters["respiratory_rate"],
    "systolic_bp": lambda v: score_news2(systolic_bp=v).parameters["systolic_bp"],
    "spo2": lambda v: score_news2(spo2=v).parameters["spo2"],
    "temperature_c": lambda v: score_news2(temperature_c=v).parameters["temperature_c"],
}


@given(vital=st.sampled_from(sorted(RED_CHECKS)), value=st.floats(0, 300))
def test_news2_red_is_always_critical_for_an_adult(vital: str, value: float) -> None:
    rng = ranges_for(ADULT, "rest")[vital]
    cls = classify(value, rng)
    if RED_CHECKS[vital](value) == 3 and cls != C.IMPLAUSIBLE:
        assert cls in (C.CRITICAL_LOW, C.CRITICAL_HIGH)


@pytest.mark.parametrize("vital", sorted(RED_CHECKS))
def test_at_device_resolution_critical_is_exactly_news2_red(vital: str) -> None:
    # Whole numbers (0.1 °C for temperature): critical <=> 3 points, except that a
    # temperature of 40 °C and above is critical although NEWS2 gives it 2.
    rng = ranges_for(ADULT, "rest")[vital]
    steps = [x / 10 for x in range(300, 431)] if vital == "temperature_c" else range(0, 301)
    checked = 0
    for value in steps:
        cls = classify(value, rng)
        if cls == C.IMPLAUSIBLE:
            continue
        critical = cls in (C.CRITICAL_LOW, C.CRITICAL_HIGH)
        if vital == "temperature_c" and value >= 40.0:
            assert critical and RED_CHECKS[vital](value) == 2
        else:
            assert critical is (RED_CHECKS[vital](value) == 3), value
        checked += 1
    assert checked > 50


# --- conditional factors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("age", "hr_normal", "hr_critical", "rr_normal", "rr_critical", "sbp_normal", "sbp_crit_low"),
    [
        # Upper limits APLS (awake); lower limits about Fleming's 1st centile (asleep).
        (0, (90, 160), (60, 220), (25, 40), (10, 60), (70, 90), 70),
        (1, (80, 150), (60, 180), (20, 35), (10, 60), (80, 95), 72),
        (2, (70, 140), (60, 180), (18, 30), (10, 60), (80, 100), 74),
        (4, (70, 140), (60, 180), (18, 30), (10, 60), (80, 100), 78),
        (5, (55, 120), (50, 180), (14, 25), (10, 60), (90, 110), 80),
        (10, (55, 120), (50, 180), (14, 25), (10, 60), (90, 110), 90),
        (11, (55, 120), (50, 180), (14, 25), (10, 60), (90, 110), 90),
        (12, (50, 100), (41, 130), (12, 20), (9, 24), (100, 160), 91),
        (15, (50, 100), (41, 130), (12, 20), (9, 24), (100, 160), 91),
        (16, (50, 100), (41, 130), (12, 20), (9, 24), (100, 160), 91),
    ],
)
def test_children_are_age_banded(
    age: int,
    hr_normal: tuple[float, float],
    hr_critical: tuple[float, float],
    rr_normal: tuple[float, float],
    rr_critical: tuple[float, float],
    sbp_normal: tuple[float, float],
    sbp_crit_low: float,
) -> None:
    r = ranges_for(Profile(age=age), "rest")
    assert r["heart_rate"].normal == hr_normal
    assert r["heart_rate"].critical == hr_critical
    assert r["respiratory_rate"].normal == rr_normal
    assert r["respiratory_rate"].critical == rr_critical
    assert r["systolic_bp"].normal == sbp_normal
    assert r["systolic_bp"].critical[0] == sbp_crit_low


def test_a_healthy_toddler_is_not_critical() -> None:
    r = ranges_for(Profile(age=3), "rest")
    assert classify(130, r["heart_rate"]) == C.NORMAL  # adult: high
    assert classify(28, r["respiratory_rate"]) == C.NORMAL  # adult: critical
    assert classify(85, r["systolic_bp"]) == C.NORMAL  # adult: critical
    assert classify(190, r["heart_rate"]) == C.CRITICAL_HIGH  # PALS: SVT likely in a child
    assert classify(59, r["heart_rate"]) == C.CRITICAL_LOW  # PALS: bradycardia < 60
    assert classify(9, r["respiratory_rate"]) == C.CRITICAL_LOW
    assert classify(61, r["respiratory_rate"]) == C.CRITICAL_HIGH
    assert classify(75, r["systolic_bp"]) == C.CRITICAL_LOW  # PALS: < 70 + 2 x 3


def test_infant_heart_rate_plausible_range_reaches_svt_rates() -> None:
    assert classify(280, ranges_for(Profile(age=0), "rest")["heart_rate"]) == C.CRITICAL_HIGH
    assert classify(280, ranges_for(ADULT, "rest")["heart_rate"]) == C.IMPLAUSIBLE


@pytest.mark.parametrize(
    ("profile", "applicable"),
    [
        (Profile(), True),
        (Profile(age=15), False),
        (Profile(age=16), True),
        (Profile(age=90), True),
        (Profile(age=30, sex="female", conditions=frozenset({"pregnancy"})), False),
        (Profile(age=30, sex="female", conditions=frozenset({"Pregnant"})), False),
    ],
)
def test_news2_applicable(profile: Profile, applicable: bool) -> None:
    assert news2_applicable(profile) is applicable


@pytest.mark.parametrize(("age", "upper"), [(79, 160), (80, 170), (95, 170), (None, 160)])
def test_older_adults_systolic_upper(age: int | None, upper: float) -> None:
    assert ranges_for(Profile(age=age), "rest")["systolic_bp"].normal == (100, upper)


@pytest.mark.parametrize(
    ("age", "normal_upper", "critical_upper"),
    [
        (20, 180.0, 215),  # 0.9 x 200; 200 + 15
        (60, 144.0, 175),
        (None, 162.0, 195),  # unknown age: 40 assumed
        (110, 100, 130),  # the formula falls below the resting limits, which stay
    ],
)
def test_activity_widens_heart_rate(
    age: int | None, normal_upper: float, critical_upper: float
) -> None:
    active = hr(Profile(age=age), "active")
    assert active.normal == (50, pytest.approx(normal_upper))
    assert active.critical == (41, critical_upper)
    rest = hr(Profile(age=age), "rest")
    assert rest.normal == (50, 100)
    assert rest.critical == (41, 130)


def test_activity_changes_only_heart_rate_and_breathing() -> None:
    rest, active = ranges_for(ADULT, "rest"), ranges_for(ADULT, "active")
    for vital in NUMERIC_VITALS:
        if vital not in ("heart_rate", "respiratory_rate"):
            assert rest[vital] == active[vital]
    # Breathing while active (Nicolo 2017: 35-50 /min at vigorous exercise); the floor stays.
    rr = active["respiratory_rate"]
    assert rr.normal == (12, 35) and rr.critical == (9, 50)


@pytest.mark.parametrize(
    ("sex", "age", "upper"),
    [
        ("female", 40, 105),
        ("male", 40, 100),
        ("other", 40, 100),
        (None, 40, 100),
        ("female", 9, 120),
    ],  # the sex adjustment is for adults only
)
def test_sex(sex: str | None, age: int, upper: float) -> None:
    assert hr(Profile(age=age, sex=sex)).normal[1] == upper  # type: ignore[arg-type]


@pytest.mark.parametrize("drug", RATE_LIMITING_DRUGS)
def test_every_rate_limiting_drug_lowers_the_floor(drug: str) -> None:
    r = hr(Profile(age=60, medications=frozenset({f"{drug.upper()} 25 mg twice daily"})))
    assert r.normal == (45, 100)
    assert r.critical == (35, 130)


def test_rate_limiting_drug_uses_brawners_maximum() -> None:
    on_drug = hr(Profile(age=60, medications=frozenset({"Bisoprolol 5 mg"})), "active")
    # Brawner 2004, on beta-blockade: 164 - 0.7 x 60 = 122; normal up to 90 %, critical past
    # the maximum + 15 (not 220 - age = 160).
    assert on_drug.normal[1] == pytest.approx(109.8)
    assert on_drug.critical[1] == pytest.approx(137.0)


def test_other_drugs_change_nothing() -> None:
    p = Profile(age=60, medications=frozenset({"paracetamol", "salbutamol inhaler"}))
    assert ranges_for(p, "rest") == ranges_for(Profile(age=60), "rest")


def test_rate_limiting_drug_does_not_lower_a_childs_floor() -> None:
    assert hr(Profile(age=0, medications=frozenset({"propranolol"}))).normal == (90, 160)


def test_copd_hypercapnic() -> None:
    p = Profile(conditions=frozenset({"copd_hypercapnic"}))
    r = ranges_for(p, "rest")["spo2"]
    assert r.normal == (88, 100)
    assert r.critical == (85, 100)
    assert classify(88, r) == C.NORMAL
    assert classify(85, r) == C.LOW
    assert classify(84, r) == C.CRITICAL_LOW
    assert spo2_scale_for(p) == 2


def test_copd_without_hypercapnia() -> None:
    p = Profile(conditions=frozenset({"COPD"}))
    r = ranges_for(p, "rest")["spo2"]
    assert r.normal == (92, 100)
    assert r.critical == (92, 100)
    assert classify(93, r) == C.NORMAL
    assert classify(91, r) == C.CRITICAL_LOW
    assert spo2_scale_for(p) == 1


def test_hypercapnic_wins_over_plain_copd() -> None:
    p = Profile(conditions=frozenset({"copd", "copd_hypercapnic"}))
    assert ranges_for(p, "rest")["spo2"].normal == (88, 100)


@pytest.mark.parametrize(
    ("conditions", "sex", "normal", "critical"),
    [
        ({"atrial_fibrillation"}, None, (50, 110), (41, 130)),
        ({"Atrial Fibrillation"}, None, (50, 110), (41, 130)),
        ({"afib"}, None, (50, 110), (41, 130)),
        ({"atrial_fibrillation"}, "female", (50, 110), (41, 130)),  # the AF target is a floor
        # Pregnancy: the MEOWS band (yellow 100-120, red < 40 or > 120), not NEWS2's.
        ({"pregnancy"}, None, (50, 100), (40, 120)),
        ({"pregnancy"}, "female", (50, 100), (40, 120)),
        ({"pregnancy", "atrial_fibrillation"}, "female", (50, 110), (40, 120)),
        ({"athlete"}, None, (40, 100), (33, 130)),
        ({"athlete"}, "male", (40, 100), (33, 130)),
    ],
)
def test_heart_rate_conditions(
    conditions: set[str],
    sex: str | None,
    normal: tuple[float, float],
    critical: tuple[float, float],
) -> None:
    r = hr(Profile(age=35, sex=sex, conditions=frozenset(conditions)))  # type: ignore[arg-type]
    assert (r.normal, r.critical) == (normal, critical)


def test_athlete_on_a_beta_blocker_gets_the_lower_of_both() -> None:
    p = Profile(age=35, conditions=frozenset({"athlete"}), medications=frozenset({"atenolol"}))
    assert (hr(p).normal[0], hr(p).critical[0]) == (40, 33)


def test_hypertension() -> None:
    r = ranges_for(Profile(conditions=frozenset({"hypertension"})), "rest")["systolic_bp"]
    assert r.normal == (100, 170)
    assert classify(165, r) == C.NORMAL
    assert classify(171, r) == C.HIGH


def test_unknown_conditions_change_nothing() -> None:
    p = Profile(conditions=frozenset({"migraine"}))
    assert ranges_for(p, "rest") == ranges_for(ADULT, "rest")
    assert "migraine" in p.conditions
    assert "migraine" not in KNOWN_CONDITIONS


# --- overrides ---------------------------------------------------------------------------------


def test_override_replaces_a_pair() -> None:
    p = Profile(overrides={"heart_rate": Override(normal=(55, 95))})
    assert hr(p) == VitalRange((55, 95), (41, 130), (25, 250))


def test_a_family_override_cannot_widen_a_critical_limit() -> None:
    # Without a clinician's note, the normal range is clamped inside the computed critical
    # limits and a critical limit is never widened: editing YAML cannot silence an alarm.
    p = Profile(overrides={"heart_rate": Override(normal=(38, 140))})
    assert hr(p) == VitalRange((50, 100), (41, 130), (25, 250))
    p = Profile(overrides={"heart_rate": Override(normal=(45, 95))})  # narrows only the top
    assert hr(p) == VitalRange((50, 95), (41, 130), (25, 250))
    p = Profile(overrides={"heart_rate": Override(plausible=(30, 120))})
    assert hr(p) == VitalRange((50, 100), (41, 130), (25, 250))
    p = Profile(overrides={"spo2": Override(critical=(80, 99))})
    assert ranges_for(p, "rest")["spo2"] == VitalRange(
        (95, 99), (92, 99), (50, 100), (85, math.inf)
    )


def test_a_clinician_override_widens_outward() -> None:
    note = "Dr Patel, cardiology, 2026-10-01: paced at 50, asymptomatic at 42"
    p = Profile(overrides={"heart_rate": Override(normal=(38, 140), clinician=note)})
    assert hr(p) == VitalRange((38, 140), (38, 140), (25, 250))
    p = Profile(overrides={"spo2": Override(critical=(80, 99), clinician=note)})
    assert ranges_for(p, "rest")["spo2"] == VitalRange(
        (95, 100), (80, 100), (50, 100), (85, math.inf)
    )


def test_a_narrower_family_override_applies() -> None:
    p = Profile(overrides={"heart_rate": Override(normal=(55, 90), critical=(45, 120))})
    assert hr(p) == VitalRange((55, 90), (45, 120), (25, 250))


def test_override_applies_after_conditions() -> None:
    p = Profile(
        conditions=frozenset({"copd_hypercapnic"}),
        overrides={"spo2": Override(normal=(90, 100))},
    )
    # COPD hypercapnic computed normal is 88-100: a normal of 90-100 narrows it (applied).
    assert ranges_for(p, "rest")["spo2"] == VitalRange(
        (90, 100), (85, 100), (50, 100), (85, math.inf)
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"age": -1},
        {"age": 151},
        {"sex": "unknown"},
        {"conditions": "copd"},
        {"overrides": {"glucose": Override(normal=(4, 7))}},
        {"overrides": {"heart_rate": Override(normal=(100, 50))}},
        {"overrides": {"heart_rate": Override(critical=(60, 60))}},
    ],
)
def test_bad_profiles_are_rejected(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Profile(**kwargs)  # type: ignore[arg-type]


def test_profiles_are_hashable_and_the_cache_returns_read_only_ranges() -> None:
    a = Profile(age=70, conditions=frozenset({"copd"}), overrides={"spo2": Override((90, 100))})
    b = Profile(age=70, conditions=frozenset({"COPD"}), overrides={"spo2": Override((90, 100))})
    assert a == b
    assert hash(a) == hash(b)
    assert ranges_for(a, "rest") is ranges_for(b, "rest")
    with pytest.raises(TypeError):
        ranges_for(a, "rest")["spo2"] = VitalRange((0, 1), (0, 1), (0, 1))  # type: ignore[index]


def test_bad_activity() -> None:
    with pytest.raises(ValueError):
        ranges_for(ADULT, "sprinting")  # type: ignore[arg-type]


def test_from_person() -> None:
    person = Person.model_validate(
        {
            "id": "grandma",
            "name": "Test Person",
            "birth_date": "1944-03-02",
            "sex": "female",
            "location": {"latitude": 51.5, "longitude": -0.1},
            "conditions": ["COPD_hypercapnic", "Hypertension"],
            "medications": ["Bisoprolol 5 mg"],
            "ranges": {"heart_rate": {"normal": [48, 105]}},
        }
    )
    p = Profile.from_person(person, date(2026, 3, 1))
    assert p.age == 81  # the day before the birthday
    assert Profile.from_person(person, date(2026, 3, 2)).age == 82
    assert p.sex == "female"
    assert p.conditions == frozenset({"copd_hypercapnic", "hypertension"})
    assert p.rate_limited
    r = ranges_for(p, "rest")
    assert r["heart_rate"] == VitalRange((48, 105), (35, 130), (25, 250))
    assert r["systolic_bp"].normal == (100, 170)
    assert r["spo2"].normal == (88, 100)
    assert spo2_scale_for(p) == 2


# --- activity ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("steps", "interval_s", "expected"),
    [
        (None, 60, "rest"),
        (0, 60, "rest"),
        (39, 60, "rest"),
        (40, 60, "active"),
        (120, 60, "active"),
        (19, 30, "rest"),  # 38 steps/min
        (20, 30, "active"),  # 40 steps/min
        (3, 5, "rest"),  # 36 steps/min from a 5 s watch
        (4, 5, "active"),  # 48 steps/min
        (199, 300, "rest"),
        (200, 300, "active"),
    ],
)
def test_activity_from_steps(steps: int | None, interval_s: float, expected: str) -> None:
    assert ACTIVE_CADENCE_SPM == 40
    assert activity_from_steps(steps, interval_s) == expected


@pytest.mark.parametrize("interval_s", [0, -5, math.nan])
def test_activity_needs_a_positive_interval(interval_s: float) -> None:
    with pytest.raises(ValueError):
        activity_from_steps(10, interval_s)


# --- the nesting invariant for every profile we can generate ----------------------------------

pairs = st.tuples(st.floats(0, 300), st.floats(0, 300)).filter(lambda p: p[0] < p[1])
overrides = st.dictionaries(
    st.sampled_from(NUMERIC_VITALS),
    st.builds(
        Override,
        normal=st.none() | pairs,
        critical=st.none() | pairs,
        plausible=st.none() | pairs,
        clinician=st.none() | st.just("Dr X: agreed limits"),
    ),
    max_size=3,
)
profiles = st.builds(
    Profile,
    age=st.none() | st.integers(0, 150),
    sex=st.sampled_from([None, "female", "male", "other"]),
    conditions=st.frozensets(st.sampled_from([*sorted(KNOWN_CONDITIONS), "migraine", "afib"])),
    medications=st.frozensets(st.sampled_from([*RATE_LIMITING_DRUGS, "paracetamol"]), max_size=3),
    overrides=overrides,
)


@given(profile=profiles, activity=st.sampled_from(["rest", "active"]))
def test_plausible_contains_critical_contains_normal(profile: Profile, activity: str) -> None:
    r = ranges_for(profile, activity)  # type: ignore[arg-type]
    assert set(r) == set(NUMERIC_VITALS)
    for vital, rng in r.items():
        (nl, nh), (cl, ch), (pl, ph) = rng.normal, rng.critical, rng.plausible
        assert nl < nh, vital
        assert pl <= cl <= nl, vital
        assert nh <= ch <= ph, vital
        ov = profile.overrides.get(vital)
        if ov is not None and ov.normal is not None and ov.clinician:
            assert rng.normal == ov.normal  # a clinician's override is never narrowed
        if ov is not None and not ov.clinician:
            base = computed_ranges(profile, activity)[vital]  # type: ignore[arg-type]
            # A family override never widens a critical limit.
            assert base.critical[0] <= cl and ch <= base.critical[1], vital


@given(profile=profiles)
def test_activity_never_narrows(profile: Profile) -> None:
    ov = profile.overrides.get("heart_rate")
    # A family override is clamped into each activity's own computed limits, so a freak one
    # (critical 130-131) can land differently at rest and when active.
    assume(ov is None or bool(ov.clinician))
    rest, active = hr(profile, "rest"), hr(profile, "active")
    assert active.normal[0] == rest.normal[0]
    assert active.normal[1] >= rest.normal[1]
    assert active.critical[1] >= rest.critical[1]


def test_copd_tolerates_resting_tachypnoea_but_not_critical() -> None:
    copd = Profile(age=70, sex="female", conditions=frozenset({"copd"}))
    plain = Profile(age=70, sex="female")
    assert classify(22, ranges_for(copd)["respiratory_rate"]) == "normal"
    assert classify(22, ranges_for(plain)["respiratory_rate"]) == "high"
    assert classify(25, ranges_for(copd)["respiratory_rate"]) == "critical_high"


def test_exertional_desaturation_in_chronic_lung_disease() -> None:
    # Walking (and recovering), a COPD patient's SpO2 floor drops 4 points and the point
    # where help is needed is 80 % (Roberts 2015); at rest nothing moves, and nobody else's.
    hyper = Profile(age=72, conditions=frozenset({"copd_hypercapnic"}))
    walk, rest = ranges_for(hyper, "active")["spo2"], ranges_for(hyper, "rest")["spo2"]
    assert rest.normal[0] == 88 and rest.intervention[0] == 85
    assert walk.normal[0] == 84 and walk.critical[0] == 80 and walk.intervention[0] == 80
    assert classify(83, walk) == RangeClass.LOW and classify(79, walk) == RangeClass.CRITICAL_LOW
    for other in (
        Profile(age=72),
        Profile(age=30, sex="female", conditions=frozenset({"pregnancy"})),
        Profile(age=8),
    ):
        assert ranges_for(other, "active")["spo2"] == ranges_for(other, "rest")["spo2"]
