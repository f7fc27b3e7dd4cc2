"""NEWS2 against the RCP 2017 chart: every band boundary, both sides, both SpO2 scales."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.monitor.news2 import News2Result, news2_level, score_news2, score_spo2

# A complete, all-zero set of observations that single tests change one parameter of.
NORMAL = {
    "respiratory_rate": 16.0,
    "spo2": 97.0,
    "on_supplemental_o2": False,
    "systolic_bp": 120.0,
    "heart_rate": 70.0,
    "consciousness": "A",
    "temperature_c": 37.0,
}


def points(param: str, **changes: object) -> int | None:
    obs = {**NORMAL, **changes}
    return score_news2(**obs).parameters[param]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 3),
        (8, 3),
        (8.5, 1),  # half-open: only x <= 8 scores 3
        (9, 1),
        (11, 1),
        (11.5, 0),
        (12, 0),
        (20, 0),
        (20.5, 2),
        (21, 2),
        (24, 2),
        (24.5, 3),
        (25, 3),
        (60, 3),
    ],
)
def test_respiratory_rate_bands(value: float, expected: int) -> None:
    assert points("respiratory_rate", respiratory_rate=value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (50, 3),
        (91, 3),
        (91.5, 2),
        (92, 2),
        (93, 2),
        (93.5, 1),
        (94, 1),
        (95, 1),
        (95.5, 0),
        (96, 0),
        (100, 0),
    ],
)
@pytest.mark.parametrize("on_o2", [False, True])
def test_spo2_scale_1_bands_ignore_oxygen(value: float, expected: int, on_o2: bool) -> None:
    assert points("spo2", spo2=value, on_supplemental_o2=on_o2) == expected


# Scale 2: (SpO2, points on air, points on oxygen).
SCALE_2 = [
    (70, 3, 3),
    (83, 3, 3),
    (83.5, 2, 2),
    (84, 2, 2),
    (85, 2, 2),
    (85.5, 1, 1),
    (86, 1, 1),
    (87, 1, 1),
    (87.5, 0, 0),
    (88, 0, 0),
    (90, 0, 0),
    (92, 0, 0),
    (92.5, 0, 1),
    (93, 0, 1),
    (94, 0, 1),
    (94.5, 0, 2),
    (95, 0, 2),
    (96, 0, 2),
    (96.5, 0, 3),
    (97, 0, 3),
    (100, 0, 3),
]


@pytest.mark.parametrize(("value", "on_air", "on_oxygen"), SCALE_2)
def test_spo2_scale_2_bands(value: float, on_air: int, on_oxygen: int) -> None:
    air = score_news2(**{**NORMAL, "spo2": value, "on_supplemental_o2": False}, spo2_scale=2)  # type: ignore[arg-type]
    oxygen = score_news2(**{**NORMAL, "spo2": value, "on_supplemental_o2": True}, spo2_scale=2)  # type: ignore[arg-type]
    assert air.parameters["spo2"] == on_air
    assert oxygen.parameters["spo2"] == on_oxygen
    assert air.parameters["supplemental_o2"] == 0
    assert oxygen.parameters["supplemental_o2"] == 2
    assert score_spo2(value, on_supplemental_o2=True, spo2_scale=2) == on_oxygen


def test_spo2_scale_2_unknown_oxygen_is_scored_as_air_and_reported() -> None:
    r = score_news2(spo2=97, spo2_scale=2)
    assert r.parameters["spo2"] == 0
    assert r.parameters["supplemental_o2"] == 0
    assert "supplemental_o2" in r.assumed
    assert r.spo2_scale == 2


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (50, 3),
        (90, 3),
        (90.5, 2),
        (91, 2),
        (100, 2),
        (100.5, 1),
        (101, 1),
        (110, 1),
        (110.5, 0),
        (111, 0),
        (219, 0),
        (219.5, 3),
        (220, 3),
        (260, 3),
    ],
)
def test_systolic_bands(value: float, expected: int) -> None:
    assert points("systolic_bp", systolic_bp=value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (25, 3),
        (40, 3),
        (40.5, 1),
        (41, 1),
        (50, 1),
        (50.5, 0),
        (51, 0),
        (90, 0),
        (90.5, 1),
        (91, 1),
        (110, 1),
        (110.5, 2),
        (111, 2),
        (130, 2),
        (130.5, 3),
        (131, 3),
        (220, 3),
    ],
)
def test_pulse_bands(value: float, expected: int) -> None:
    assert points("heart_rate", heart_rate=value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (30.0, 3),
        (35.0, 3),
        (35.05, 1),
        (35.1, 1),
        (36.0, 1),
        (36.05, 0),
        (36.1, 0),
        (38.0, 0),
        (38.05, 1),
        (38.1, 1),
        (39.0, 1),
        (39.05, 2),
        (39.1, 2),
        (42.0, 2),
    ],
)
def test_temperature_bands(value: float, expected: int) -> None:
    assert points("temperature_c", temperature_c=value) == expected


@pytest.mark.parametrize(
    ("level", "expected"), [("A", 0), ("C", 3), ("V", 3), ("P", 3), ("U", 3), (None, 0)]
)
def test_consciousness(level: str | None, expected: int) -> None:
    r = score_news2(**{**NORMAL, "consciousness": level})  # type: ignore[arg-type]
    assert r.parameters["consciousness"] == expected
    assert ("consciousness" in r.assumed) is (level is None)


@pytest.mark.parametrize(("on_o2", "expected"), [(True, 2), (False, 0), (None, 0)])
def test_air_or_oxygen(on_o2: bool | None, expected: int) -> None:
    r = score_news2(**{**NORMAL, "on_supplemental_o2": on_o2})  # type: ignore[arg-type]
    assert r.parameters["supplemental_o2"] == expected
    assert r.total == expected
    assert ("supplemental_o2" in r.assumed) is (on_o2 is None)


@pytest.mark.parametrize(
    ("changes", "total", "level", "red"),
    [
        ({}, 0, "low", ()),
        ({"heart_rate": 111, "respiratory_rate": 21}, 4, "low", ()),  # 2 + 2, no red
        ({"respiratory_rate": 8}, 3, "low-medium", ("respiratory_rate",)),
        ({"respiratory_rate": 8, "temperature_c": 38.5}, 4, "low-medium", ("respiratory_rate",)),
        # A red 3 with a total of 5 is medium: the aggregate band outranks the single red.
        ({"respiratory_rate": 25, "systolic_bp": 95}, 5, "medium", ("respiratory_rate",)),
        ({"heart_rate": 111, "respiratory_rate": 21, "temperature_c": 38.5}, 5, "medium", ()),
        ({"heart_rate": 111, "respiratory_rate": 21, "systolic_bp": 95}, 6, "medium", ()),
        (
            {"consciousness": "C", "respiratory_rate": 22, "heart_rate": 95},
            6,
            "medium",
            ("consciousness",),
        ),
        ({"respiratory_rate": 25, "spo2": 92, "heart_rate": 111}, 7, "high", ("respiratory_rate",)),
        (
            {
                "respiratory_rate": 25,
                "spo2": 91,
                "on_supplemental_o2": True,
                "systolic_bp": 90,
                "heart_rate": 131,
                "consciousness": "U",
                "temperature_c": 35.0,
            },
            20,
            "high",
            (
                "respiratory_rate",
                "spo2",
                "systolic_bp",
                "heart_rate",
                "consciousness",
                "temperature_c",
            ),
        ),
    ],
)
def test_levels(changes: dict[str, object], total: int, level: str, red: tuple[str, ...]) -> None:
    r = score_news2(**{**NORMAL, **changes})  # type: ignore[arg-type]
    assert (r.total, r.level, r.red) == (total, level, red)


@pytest.mark.parametrize(
    ("total", "red", "expected"),
    [
        (0, False, "low"),
        (4, False, "low"),
        (3, True, "low-medium"),
        (4, True, "low-medium"),
        (5, False, "medium"),
        (5, True, "medium"),
        (6, True, "medium"),
        (7, False, "high"),
        (7, True, "high"),
    ],
)
def test_news2_level(total: int, red: bool, expected: str) -> None:
    assert news2_level(total, red) == expected


def test_partial_observations_are_missing_not_zero() -> None:
    r = score_news2(heart_rate=135)
    assert r.parameters == {
        "respiratory_rate": None,
        "spo2": None,
        "supplemental_o2": 0,
        "systolic_bp": None,
        "heart_rate": 3,
        "consciousness": 0,
        "temperature_c": None,
    }
    assert r.missing == ("respiratory_rate", "spo2", "systolic_bp", "temperature_c")
    assert r.assumed == ("supplemental_o2", "consciousness")
    assert (r.total, r.level, r.complete, r.red) == (3, "low-medium", False, ("heart_rate",))


def test_nothing_given() -> None:
    r = score_news2()
    assert r.total == 0
    assert r.level == "low"
    assert not r.complete
    assert len(r.missing) == 5


def test_complete_with_assumptions_is_still_complete() -> None:
    r = score_news2(**{**NORMAL, "on_supplemental_o2": None, "consciousness": None})  # type: ignore[arg-type]
    assert r.complete
    assert r.missing == ()
    assert r.assumed == ("supplemental_o2", "consciousness")


def test_to_dict_is_json_ready() -> None:
    r = score_news2(**{**NORMAL, "respiratory_rate": 25, "on_supplemental_o2": None})  # type: ignore[arg-type]
    d = r.to_dict()
    assert d == {
        "total": 3,
        "level": "low-medium",
        "parameters": {
            "respiratory_rate": 3,
            "spo2": 0,
            "supplemental_o2": 0,
            "systolic_bp": 0,
            "heart_rate": 0,
            "consciousness": 0,
            "temperature_c": 0,
        },
        "missing": [],
        "assumed": ["supplemental_o2"],
        "complete": True,
        "spo2_scale": 1,
        "red": ["respiratory_rate"],
    }
    assert json.loads(json.dumps(d)) == d


def test_result_is_frozen() -> None:
    r = score_news2(**NORMAL)  # type: ignore[arg-type]
    assert isinstance(r, News2Result)
    with pytest.raises(AttributeError):
        r.total = 99  # type: ignore[misc]


@pytest.mark.parametrize("scale", [0, 3, -1])
def test_bad_scale_is_rejected(scale: int) -> None:
    with pytest.raises(ValueError, match="spo2_scale"):
        score_news2(spo2=95, spo2_scale=scale)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"heart_rate": math.nan}, "heart_rate must be finite"),
        ({"heart_rate": math.inf}, "heart_rate must be finite"),
        ({"spo2": -math.inf}, "spo2 must be finite"),
        ({"heart_rate": True}, "heart_rate must be a number"),
        ({"temperature_c": "37.9"}, "temperature_c must be a number"),
        ({"consciousness": "a"}, "consciousness must be one of A, C, V, P, U"),
        ({"consciousness": "confused"}, "consciousness must be one of A, C, V, P, U"),
        ({"on_supplemental_o2": "yes"}, "on_supplemental_o2 must be true, false or missing"),
    ],
)
def test_bad_values_raise_a_message_without_the_value(bad: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as info:
        score_news2(**bad)  # type: ignore[arg-type]
    assert str(info.value) == message


# --- an independent reading of the chart, as printed (inclusive whole-number ranges) -----------

CHART: dict[str, list[tuple[int, int, int]]] = {
    "respiratory_rate": [(0, 8, 3), (9, 11, 1), (12, 20, 0), (21, 24, 2), (25, 999, 3)],
    "systolic_bp": [(0, 90, 3), (91, 100, 2), (101, 110, 1), (111, 219, 0), (220, 999, 3)],
    "heart_rate": [
        (0, 40, 3),
        (41, 50, 1),
        (51, 90, 0),
        (91, 110, 1),
        (111, 130, 2),
        (131, 999, 3),
    ],
    "spo2": [(0, 91, 3), (92, 93, 2), (94, 95, 1), (96, 100, 0)],
}


def chart_points(param: str, value: int) -> int:
    return next(p for lo, hi, p in CHART[param] if lo <= value <= hi)


@given(
    rr=st.integers(0, 80),
    sbp=st.integers(40, 300),
    hr=st.integers(20, 250),
    spo2=st.integers(50, 100),
    temp_tenths=st.integers(300, 430),
    on_o2=st.booleans(),
)
def test_matches_the_printed_chart(
    rr: int, sbp: int, hr: int, spo2: int, temp_tenths: int, on_o2: bool
) -> None:
    temp = temp_tenths / 10
    r = score_news2(
        respiratory_rate=rr,
        spo2=spo2,
        on_supplemental_o2=on_o2,
        systolic_bp=sbp,
        heart_rate=hr,
        consciousness="A",
        temperature_c=temp,
    )
    expected_temp = (
        3
        if temp_tenths <= 350
        else 1
        if temp_tenths <= 360
        else 0
        if temp_tenths <= 380
        else 1
        if temp_tenths <= 390
        else 2
    )
    expected = {
        "respiratory_rate": chart_points("respiratory_rate", rr),
        "spo2": chart_points("spo2", spo2),
        "supplemental_o2": 2 if on_o2 else 0,
        "systolic_bp": chart_points("systolic_bp", sbp),
        "heart_rate": chart_points("heart_rate", hr),
        "consciousness": 0,
        "temperature_c": expected_temp,
    }
    assert r.parameters == expected
    assert r.total == sum(expected.values())
