"""assess() and the `healthgw assess` JSON-lines loop: hand-computed NEWS2 cases, implausible
values kept out of the score, profiles, SpO2 scale precedence and bad input."""

from __future__ import annotations

import io
import json
from datetime import date
from typing import Any

import pytest

from gateway.contract.topics import VitalsPayload
from gateway.household.model import Household
from gateway.monitor.assess import AssessInputError, assess, assess_request, run_cli
from gateway.monitor.ranges import Profile

HEALTHY = {
    "respiratory_rate": 16,
    "spo2": 98,
    "on_supplemental_o2": False,
    "systolic_bp": 125,
    "diastolic_bp": 80,
    "heart_rate": 72,
    "consciousness": "A",
    "temperature_c": 36.8,
}


def household() -> Household:
    base = {"sex": "female", "location": {"latitude": 51.5, "longitude": -0.1}}
    return Household.model_validate(
        {
            "persons": [
                {
                    **base,
                    "id": "grandma",
                    "name": "Test One",
                    "birth_date": "1944-03-02",
                    "conditions": ["copd_hypercapnic"],
                    "medications": ["bisoprolol 5 mg"],
                },
                {**base, "id": "kid", "name": "Test Two", "birth_date": "2020-06-01"},
            ]
        }
    )


# --- hand-computed NEWS2 --------------------------------------------------------------------


def test_healthy_adult_scores_zero() -> None:
    out = assess(HEALTHY)
    assert out["news2"] == {
        "total": 0,
        "level": "low",
        "parameters": {
            "respiratory_rate": 0,
            "spo2": 0,
            "supplemental_o2": 0,
            "systolic_bp": 0,
            "heart_rate": 0,
            "consciousness": 0,
            "temperature_c": 0,
        },
        "missing": [],
        "assumed": [],
        "complete": True,
        "spo2_scale": 1,
        "red": [],
    }
    assert out["ranges"] == {
        "heart_rate": "normal",
        "spo2": "normal",
        "systolic_bp": "normal",
        "diastolic_bp": "normal",
        "temperature_c": "normal",
        "respiratory_rate": "normal",
    }
    assert out["plausibility"] == []
    assert out["activity"] == "rest"
    assert out["news2_applicable"] is True


def test_septic_picture_is_high() -> None:
    # RR 23 -> 2, SpO2 91 -> 3, air assumed -> 0, SBP 105 -> 1, HR 118 -> 2, A -> 0,
    # 38.4 °C -> 1: total 9, high.
    out = assess(
        {
            "heart_rate": 118,
            "spo2": 91,
            "respiratory_rate": 23,
            "systolic_bp": 105,
            "temperature_c": 38.4,
            "consciousness": "A",
        }
    )
    n = out["news2"]
    assert n["parameters"] == {
        "respiratory_rate": 2,
        "spo2": 3,
        "supplemental_o2": 0,
        "systolic_bp": 1,
        "heart_rate": 2,
        "consciousness": 0,
        "temperature_c": 1,
    }
    assert (n["total"], n["level"], n["red"], n["assumed"]) == (
        9,
        "high",
        ["spo2"],
        ["supplemental_o2"],
    )
    assert out["ranges"]["spo2"] == "critical_low"
    assert out["ranges"]["heart_rate"] == "high"


def test_new_confusion_with_modest_changes_is_medium() -> None:
    # C -> 3, RR 22 -> 2, HR 95 -> 1: total 6, medium (not just low-medium).
    out = assess({**HEALTHY, "consciousness": "C", "respiratory_rate": 22, "heart_rate": 95})
    assert (out["news2"]["total"], out["news2"]["level"]) == (6, "medium")
    assert out["news2"]["red"] == ["consciousness"]


def test_single_red_parameter_is_low_medium() -> None:
    out = assess({**HEALTHY, "systolic_bp": 88, "diastolic_bp": 60})
    assert (out["news2"]["total"], out["news2"]["level"]) == (3, "low-medium")
    assert out["ranges"]["systolic_bp"] == "critical_low"


def test_scale_2_from_the_profile_on_oxygen() -> None:
    # Scale 2 on oxygen: SpO2 97 -> 3, oxygen -> 2, everything else 0: total 5, medium.
    profile = Profile(age=80, conditions=frozenset({"copd_hypercapnic"}))
    reading = {**HEALTHY, "spo2": 97, "on_supplemental_o2": True}
    out = assess(reading, profile=profile)
    assert out["news2"]["spo2_scale"] == 2
    assert out["news2"]["parameters"]["spo2"] == 3
    assert out["news2"]["parameters"]["supplemental_o2"] == 2
    assert (out["news2"]["total"], out["news2"]["level"]) == (5, "medium")
    # The explicit key wins over the profile: scale 1 gives 97 % on oxygen 0 + 2 = 2, low.
    out = assess({**reading, "spo2_scale": 1}, profile=profile)
    assert (out["news2"]["spo2_scale"], out["news2"]["total"], out["news2"]["level"]) == (
        1,
        2,
        "low",
    )


def test_scale_precedence_key_then_argument_then_profile() -> None:
    reading = {**HEALTHY, "spo2": 86}  # scale 1 -> 3, scale 2 -> 1
    copd = Profile(conditions=frozenset({"copd_hypercapnic"}))
    assert assess(reading)["news2"]["parameters"]["spo2"] == 3
    assert assess(reading, profile=copd)["news2"]["parameters"]["spo2"] == 1
    assert assess(reading, profile=copd, spo2_scale=1)["news2"]["parameters"]["spo2"] == 3
    assert assess(reading, spo2_scale=2)["news2"]["parameters"]["spo2"] == 1
    assert assess({**reading, "spo2_scale": 1}, spo2_scale=2)["news2"]["parameters"]["spo2"] == 3
    with pytest.raises(AssessInputError):
        assess(reading, spo2_scale=3)


def test_scale_2_from_the_conditions_key() -> None:
    out = assess({**HEALTHY, "spo2": 89, "conditions": ["COPD hypercapnic"]})
    assert out["news2"]["spo2_scale"] == 2
    assert out["news2"]["parameters"]["spo2"] == 0
    assert out["ranges"]["spo2"] == "normal"


# --- plausibility keeps bad values out of the score ----------------------------------------


def test_implausible_values_are_not_scored() -> None:
    out = assess({"systolic_bp": 500, "diastolic_bp": 80, "heart_rate": 72})
    assert out["news2"]["parameters"]["systolic_bp"] is None
    assert "systolic_bp" in out["news2"]["missing"]
    assert out["news2"]["total"] == 0
    assert out["ranges"]["systolic_bp"] == "implausible"
    # 500 mmHg is beyond any human value: "impossible", not a question for the wearer.
    assert out["plausibility"] == [
        {"vital": "systolic_bp", "kind": "impossible", "detail": "beyond any human value"}
    ]
    out = assess({"systolic_bp": 300, "diastolic_bp": 80, "heart_rate": 72})
    assert out["ranges"]["systolic_bp"] == "implausible"
    assert out["plausibility"] == [
        {"vital": "systolic_bp", "kind": "out_of_plausible", "detail": "above the plausible range"}
    ]


def test_inconsistent_pressure_is_not_scored() -> None:
    # 85 systolic would score 3; with a diastolic of 95 the pair cannot be right.
    out = assess({"systolic_bp": 85, "diastolic_bp": 95, "heart_rate": 72})
    assert out["news2"]["parameters"]["systolic_bp"] is None
    assert out["news2"]["total"] == 0
    assert [(f["vital"], f["kind"]) for f in out["plausibility"]] == [
        ("systolic_bp", "inconsistent"),
        ("diastolic_bp", "inconsistent"),
    ]


# --- profile, activity ------------------------------------------------------------------------


def test_activity_from_steps_and_interval() -> None:
    active = assess({"heart_rate": 150, "steps": 100, "age": 40})
    assert active["activity"] == "active"
    assert active["ranges"]["heart_rate"] == "normal"  # 0.9 x 180 = 162
    rest = assess({"heart_rate": 150, "steps": 100, "interval_s": 300, "age": 40})
    assert rest["activity"] == "rest"  # 20 steps/min
    assert rest["ranges"]["heart_rate"] == "critical_high"


def test_profile_keys() -> None:
    out = assess({"heart_rate": 44, "medications": ["Metoprolol"], "age": 70})
    assert out["ranges"]["heart_rate"] == "low"  # 45 floor; critical below 35
    assert assess({"heart_rate": 44})["ranges"]["heart_rate"] == "low"
    assert assess({"heart_rate": 40})["ranges"]["heart_rate"] == "critical_low"
    assert (
        assess({"heart_rate": 40, "medications": ["metoprolol"]})["ranges"]["heart_rate"] == "low"
    )
    child = assess({"heart_rate": 130, "respiratory_rate": 28, "age": 3})
    assert child["ranges"] == {"heart_rate": "normal", "respiratory_rate": "normal"}
    assert child["news2_applicable"] is False


def test_reading_keys_replace_profile_fields() -> None:
    copd = Profile(age=80, conditions=frozenset({"copd_hypercapnic"}))
    out = assess({"spo2": 89, "conditions": []}, profile=copd)
    assert out["news2"]["spo2_scale"] == 1
    assert out["ranges"]["spo2"] == "critical_low"


def test_accepts_every_vitals_payload_field() -> None:
    reading: dict[str, Any] = {
        "ts": "2026-05-01T10:00:00Z",
        "seq": 3,
        **HEALTHY,
        "steps": 10,
        "sleep": {"deep": 60, "light": 200, "rem": 90, "awake": 10},
        "fall_detected": False,
        "battery": 80,
        "location": {"latitude": 51.5, "longitude": -0.1},
    }
    assert set(reading) == set(VitalsPayload.model_fields)
    assert assess(reading)["news2"]["total"] == 0


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reading", "message"),
    [
        ({"heart_rate": float("nan")}, "heart_rate: Input should be a finite number"),
        ({"heart_rate": float("inf")}, "heart_rate: Input should be a finite number"),
        ({"heart_rate": "seventy-two"}, "heart_rate: Input should be a valid number"),
        ({"heart_rate": "72"}, "heart_rate: Input should be a valid number"),
        ({"heart_rate": True}, "heart_rate: Input should be a valid number"),
        ({"heart_rate": -5}, "heart_rate: Input should be greater than or equal to 0"),
        ({"heart_rate": 72, "pulse": 72}, "pulse: Extra inputs are not permitted"),
        ({"heart_rate": 72, "spo2_scale": 3}, "spo2_scale: Input should be 1 or 2"),
        ({"heart_rate": 72, "spo2_scale": True}, "spo2_scale: spo2_scale must be 1 or 2"),
        ({"consciousness": "confused"}, "consciousness: Input should be 'A', 'C', 'V', 'P' or 'U'"),
        ({"age": 70}, "input: a reading needs at least one vital"),
        ({"heart_rate": 72, "person": "no spaces allowed"}, "person: String should match pattern"),
        ({"heart_rate": 72, "ts": "yesterday"}, "ts: ts is not RFC 3339"),
    ],
)
def test_bad_input_gives_a_clear_message(reading: dict[str, Any], message: str) -> None:
    with pytest.raises(AssessInputError) as info:
        assess(reading)
    assert str(info.value).startswith(message)
    assert isinstance(info.value, ValueError)  # the REST layer turns ValueError into 422


def test_messages_do_not_echo_values() -> None:
    with pytest.raises(AssessInputError) as info:
        assess({"heart_rate": "PRIVATE-123", "temperature_c": 99999})
    assert "PRIVATE-123" not in str(info.value)
    assert "99999" not in str(info.value)


# --- the CLI -----------------------------------------------------------------------------------


def cli(text: str, hh: Household | None = None) -> tuple[int, list[dict[str, Any]], str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_cli(io.StringIO(text), out, err, hh, today=date(2026, 5, 1))
    raw = out.getvalue()
    return code, [json.loads(line) for line in raw.splitlines()], err.getvalue(), raw


def test_cli_round_trip() -> None:
    text = json.dumps(HEALTHY) + "\n\n" + json.dumps({"respiratory_rate": 25}) + "\n"
    code, rows, err, raw = cli(text)
    assert code == 0
    assert err == ""
    assert len(rows) == 2  # the blank line is skipped
    assert rows[0] == assess(HEALTHY)
    assert rows[1]["news2"]["total"] == 3
    first = raw.splitlines()[0]
    assert first == json.dumps(assess(HEALTHY), sort_keys=True, separators=(",", ":"))


def test_cli_bad_lines_are_reported_in_place_and_processing_continues() -> None:
    lines = [
        json.dumps({"heart_rate": 72}),
        "not json",
        '{"heart_rate": NaN}',
        json.dumps({"heart_rate": "fast"}),
        json.dumps({"heart_rate": 72, "colour": "red"}),
        json.dumps({"heart_rate": 72, "spo2_scale": 3}),
        "[1, 2]",
        "",
        json.dumps({"heart_rate": 131}),
    ]
    code, rows, err, _ = cli("\n".join(lines) + "\n")
    assert code == 1
    assert len(rows) == 8
    assert rows[0]["news2"]["total"] == 0
    assert rows[1] == {"line": 2, "error": "not valid JSON (Expecting value, column 1)"}
    assert rows[2] == {"line": 3, "error": "heart_rate: Input should be a finite number"}
    assert rows[3] == {"line": 4, "error": "heart_rate: Input should be a valid number"}
    assert rows[4] == {"line": 5, "error": "colour: Extra inputs are not permitted"}
    assert rows[5] == {"line": 6, "error": "spo2_scale: Input should be 1 or 2"}
    assert rows[6] == {"line": 7, "error": "each line must be a JSON object"}
    assert rows[7]["news2"]["total"] == 3  # line 9; line 8 was blank
    assert err.splitlines() == [
        "healthgw assess: line 2: not valid JSON (Expecting value, column 1)",
        "healthgw assess: line 3: heart_rate: Input should be a finite number",
        "healthgw assess: line 4: heart_rate: Input should be a valid number",
        "healthgw assess: line 5: colour: Extra inputs are not permitted",
        "healthgw assess: line 6: spo2_scale: Input should be 1 or 2",
        "healthgw assess: line 7: each line must be a JSON object",
    ]


def test_cli_uses_the_household_profile() -> None:
    # grandma: 82, scale 2 (copd_hypercapnic), bisoprolol. SpO2 88 scores 0 on scale 2;
    # HR 44 is only "low" on a beta blocker.
    line = json.dumps({"person": "grandma", "spo2": 88, "heart_rate": 44})
    code, rows, _, _ = cli(line + "\n", household())
    assert code == 0
    assert rows[0]["news2"]["spo2_scale"] == 2
    assert rows[0]["news2"]["parameters"]["spo2"] == 0
    assert rows[0]["ranges"] == {"spo2": "normal", "heart_rate": "low"}
    kid = json.dumps({"person": "kid", "heart_rate": 130})  # 5 years old on 2026-05-01
    code, rows, _, _ = cli(kid + "\n", household())
    assert rows[0]["news2_applicable"] is False
    assert rows[0]["ranges"] == {"heart_rate": "high"}  # 80-120 normal at 5


def test_cli_unknown_person_is_an_error_line_without_the_id() -> None:
    code, rows, err, _ = cli(
        json.dumps({"person": "uncle-bob", "heart_rate": 70}) + "\n", household()
    )
    assert code == 1
    assert rows == [{"line": 1, "error": "person: not in the household"}]
    assert "uncle-bob" not in err


def test_cli_person_without_a_household_is_an_error() -> None:
    code, rows, _, _ = cli(json.dumps({"person": "grandma", "heart_rate": 70}) + "\n")
    assert code == 1
    assert rows == [
        {"line": 1, "error": "person: no household file is loaded to look the person up"}
    ]


def test_assess_request_resolves_the_person() -> None:
    out = assess_request({"person": "grandma", "spo2": 86}, household(), date(2026, 5, 1))
    assert out["news2"]["spo2_scale"] == 2
    assert out["news2"]["parameters"]["spo2"] == 1
    assert assess_request({"spo2": 86}, None)["news2"]["parameters"]["spo2"] == 3


def test_empty_input_is_ok() -> None:
    assert cli("")[0:2] == (0, [])
    assert cli("\n  \n")[0:2] == (0, [])


def test_explicit_scale_two_uses_hypercapnic_spo2_ranges() -> None:
    from gateway.monitor.assess import assess

    out = assess({"spo2": 90, "spo2_scale": 2})
    assert out["news2"]["parameters"]["spo2"] == 0
    assert out["ranges"]["spo2"] == "normal"
    assert assess({"spo2": 90, "spo2_scale": 1})["ranges"]["spo2"] == "critical_low"


def test_a_young_infants_fever_is_critical_by_age_in_days() -> None:
    young = assess({"temperature_c": 38.2, "heart_rate": 150, "age_days": 40})
    older = assess({"temperature_c": 38.2, "heart_rate": 150, "age_days": 200})
    assert young["ranges"]["temperature_c"] == "critical_high"  # NICE NG143 red under 3 months
    assert older["ranges"]["temperature_c"] == "high"
    assert young["news2_applicable"] is False
