"""The profile checks catch what they claim to: each broken copy of a good Observation fails
with the rule it breaks (so a passing export means something)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.gateway.export.vital_signs_profile import SD, vital_signs_problems

GOOD: dict[str, Any] = {
    "resourceType": "Observation",
    "meta": {"profile": [SD + "heartrate"]},
    "status": "final",
    "category": [{"coding": [{"system": "http://terminology.hl7.org/CodeSystem/observation-category",
                              "code": "vital-signs"}]}],
    "code": {"coding": [{"system": "http://loinc.org", "code": "8867-4"}]},
    "subject": {"reference": "urn:uuid:p"},
    "effectiveDateTime": "2026-05-28T20:26:40Z",
    "valueQuantity": {"value": 72, "unit": "/min", "system": "http://unitsofmeasure.org",
                      "code": "/min"},
}  # fmt: skip
BP: dict[str, Any] = {
    **{k: v for k, v in GOOD.items() if k != "valueQuantity"},
    "meta": {"profile": [SD + "bp"]},
    "code": {"coding": [{"system": "http://loinc.org", "code": "85354-9"}]},
    "component": [
        {"code": {"coding": [{"system": "http://loinc.org", "code": "8480-6"}]},
         "valueQuantity": {"value": 120, "unit": "mm[Hg]", "system": "http://unitsofmeasure.org",
                           "code": "mm[Hg]"}},
        {"code": {"coding": [{"system": "http://loinc.org", "code": "8462-4"}]},
         "dataAbsentReason": {"text": "not performed"}},
    ],
}  # fmt: skip


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda o: o.__setitem__(key, value)


def _drop(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda o: o.pop(key)


def test_the_good_ones_pass() -> None:
    assert vital_signs_problems(GOOD) == [] and vital_signs_problems(BP) == []


@pytest.mark.parametrize(
    ("broken", "rule"),
    [
        (_drop("category"), "VSCat"),
        (_drop("subject"), "subject"),
        (_drop("effectiveDateTime"), "effective"),
        (_set("effectiveDateTime", "2026-05"), "vs-1"),
        (_drop("valueQuantity"), "vs-2"),
        (_set("dataAbsentReason", {"text": "x"}), "obs-6"),
        (_set("code", {"coding": [{"system": "http://loinc.org", "code": "9279-1"}]}), "8867-4"),
        (lambda o: o["valueQuantity"].update(code="bpm"), "UCUM code"),
        (lambda o: o["valueQuantity"].update(system="http://example.org"), "not UCUM"),
        (lambda o: o["valueQuantity"].pop("value"), "value missing"),
        (_set("interpretation", [{"text": "high"}]), "interpretation"),
    ],
)
def test_each_rule_fails_a_broken_copy(broken: Callable[[dict[str, Any]], None], rule: str) -> None:
    obs = copy.deepcopy(GOOD)
    broken(obs)
    assert any(rule in p for p in vital_signs_problems(obs)), vital_signs_problems(obs)


@pytest.mark.parametrize(
    ("broken", "rule"),
    [
        (lambda o: o["component"].pop(), "diastolic"),
        (lambda o: o["component"][1].pop("dataAbsentReason"), "vs-3"),
        (lambda o: o.__setitem__("valueQuantity", o["component"][0]["valueQuantity"]), "panel"),
        (lambda o: o["component"][0]["valueQuantity"].update(code="mmHg"), "UCUM code"),
        (lambda o: o["component"].append(copy.deepcopy(o["component"][0])), "systolic"),
        (lambda o: o["component"].append({"code": o["code"], "valueInteger": 1}), "obs-7"),
    ],
)
def test_blood_pressure_rules(broken: Callable[[dict[str, Any]], None], rule: str) -> None:
    obs = copy.deepcopy(BP)
    broken(obs)
    assert any(rule in p for p in vital_signs_problems(obs)), vital_signs_problems(obs)
