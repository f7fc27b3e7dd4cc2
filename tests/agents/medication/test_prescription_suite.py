"""The prescription suite (tests/data/prescriptions.yaml): every form the parser must read,
refuse or ask about, with the person's profile and other prescriptions where they matter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from agents.medication.dose_limits import MedProfile
from agents.medication.prescription import WEEKDAYS, Dose, Prescription, parse_prescription

CASES: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).resolve().parents[2] / "data" / "prescriptions.yaml").read_text()
)


def _d(d: Dose) -> str:
    return f"{d.amount:g} {d.unit}"


def _got(rx: Prescription, key: str) -> Any:
    if key == "doses":
        return [_d(d) for d in (rx.doses() or (rx.dose,))]
    if key == "times":
        return [t.strftime("%H:%M") for t in rx.times]
    if key == "days":
        return [WEEKDAYS[d] for d in rx.days_of_week]
    if key == "max_per_day":
        return _d(rx.max_per_day) if rx.max_per_day else None
    return getattr(rx, key)


def _other(text: str) -> Prescription:
    rx = parse_prescription(text).prescription
    assert rx is not None, text
    return rx


def test_the_suite_is_big_enough() -> None:
    assert len(CASES) >= 40
    kinds = {k for c in CASES for k in ("expect", "asks", "refused") if k in c}
    assert kinds == {"expect", "asks", "refused"}


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{i:03d} {c['text'][:50]}" for i, c in enumerate(CASES)]
)
def test_prescription(case: dict[str, Any]) -> None:
    prof = MedProfile.of(**case["profile"]) if "profile" in case else None
    others = [_other(t) for t in case.get("others", [])]
    r = parse_prescription(case["text"], prof, others)
    if "expect" in case:
        assert r.ok and r.prescription is not None, (r.questions, r.warnings)
        rx = r.prescription
        for key, want in case["expect"].items():
            if key == "summary":
                for part in want:
                    assert part in rx.summary(), rx.summary()
            else:
                assert _got(rx, key) == want, (key, rx)
        # What is stored with a proposal comes back the same.
        assert Prescription.from_dict(rx.as_dict()) == rx
    elif "refused" in case:
        assert r.prescription is None and r.refused, r
        assert any(case["refused"] in q for q in r.questions), r.questions
    else:
        assert r.prescription is None and not r.refused, r
        assert any(case["asks"] in q for q in r.questions), r.questions
    for w in case.get("warns", []):
        assert any(w in x for x in r.warnings), (w, r.warnings)
    if case.get("no_warnings"):
        assert r.warnings == (), r.warnings
