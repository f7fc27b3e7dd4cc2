"""The templates give byte for byte what encoding fhir_resources' dicts gives."""

from __future__ import annotations

from datetime import date

import pytest

from gateway.export import codes
from gateway.export import fhir_resources as fr
from gateway.export.fast import Templates, encode
from gateway.household.model import Household
from gateway.monitor.news2 import score_news2
from tests.gateway.export.data import HOUSEHOLD

SUBJECT = fr.Subject.of(Household.model_validate(HOUSEHOLD).persons[0], date(2026, 5, 28))
T = Templates(SUBJECT)
WHEN = "2026-05-28T20:26:40Z"


@pytest.mark.parametrize("key", list(codes.VITAL_CODES))
@pytest.mark.parametrize(
    ("value", "cls"),
    [(72.0, "normal"), (135.5, "high"), (30.0, "critical_low"), (900.0, "implausible")],
)
def test_vital_template_is_the_dict(key: str, value: float, cls: str) -> None:
    res = fr.observation(SUBJECT, "u1", key, {"effectiveDateTime": WHEN}, "urn:uuid:d")
    fr.set_value(res, value, codes.VITAL_CODES[key].unit, cls)
    assert T.vital("u1", key, WHEN, "urn:uuid:d", value, cls) == encode(res)


@pytest.mark.parametrize(
    "values",
    [
        {"heart_rate": 72.0},
        {"heart_rate": 135.0, "spo2": 90.0, "respiratory_rate": 25.0, "systolic_bp": 88.0,
         "temperature_c": 39.5, "consciousness": "V", "on_supplemental_o2": True},
    ],
)  # fmt: skip
@pytest.mark.parametrize(
    "effective",
    [{"effectiveDateTime": WHEN}, {"effectivePeriod": {"start": WHEN, "end": WHEN}}],
)
def test_news2_template_is_the_dict(
    values: dict[str, object], effective: dict[str, object]
) -> None:
    result = score_news2(**values)  # type: ignore[arg-type]
    derived = ["urn:uuid:a", "urn:uuid:b"]
    for _ in range(2):  # the second from the cache
        got = T.news2("n1", effective, result, derived)
        assert got == encode(fr.news2(SUBJECT, "n1", effective, result, derived))
