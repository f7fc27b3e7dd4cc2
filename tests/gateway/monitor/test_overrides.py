"""Household range overrides: clamped unless a clinician's note, and reported by
`healthgw check-config` line by line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.household.model import load_household
from gateway.monitor.overrides import review_household
from healthgw.cli import main

HOUSEHOLD = """\
persons:
  - id: gran
    name: Gran
    birth_date: 1944-03-02
    sex: female
    location: {latitude: 51.5, longitude: -0.1}
    conditions: [migraine, copd]
    emergency_contacts: [{name: Ana, phone: "+447700900201"}]
    ranges:
      heart_rate: {normal: [30, 180], critical: [20, 200]}
      spo2: {critical: [80, 100], clinician_override: "Dr Lee, resp clinic: usual SpO2 84-88"}
      systolic_bp: {normal: [110, 150]}
"""


def write(tmp_path: Path, text: str = HOUSEHOLD) -> Path:
    path = tmp_path / "household.yaml"
    path.write_text(text)
    return path


def test_every_override_is_reported_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path)
    found = {f.where: f for f in review_household(load_household(path), path)}
    hr, spo2, sbp = (found[f"gran.ranges.{v}"] for v in ("heart_rate", "spo2", "systolic_bp"))
    assert (hr.level, hr.line) == ("error", 10)
    assert "clamped" in hr.text and "normal 50-105, critical 41-130" in hr.text
    assert (spo2.level, spo2.line) == ("warning", 11)
    assert "WIDENED" in spo2.text and "Dr Lee" in spo2.text and "critical 80-100" in spo2.text
    assert (sbp.level, sbp.line) == ("info", 12) and "applied" in sbp.text
    assert "migraine" in found["gran.conditions"].text


def test_check_config_fails_on_a_clamped_override(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path)
    assert main(["check-config", "--household", str(path)]) == 1
    err = capsys.readouterr().out
    assert f"{path}:10: gran.ranges.heart_rate: ERROR: override clamped" in err
    assert f"{path}:11: gran.ranges.spo2: WARNING: limits WIDENED" in err
    # With a clinician's note the same override is allowed (and still reported).
    fixed = HOUSEHOLD.replace(
        "critical: [20, 200]}", 'critical: [20, 200], clinician_override: "Dr Lee: paced"}'
    )
    assert main(["check-config", "--household", str(write(tmp_path, fixed))]) == 0
    assert "WIDENED" in capsys.readouterr().out


def test_no_contacts_is_a_warning(tmp_path: Path) -> None:
    text = HOUSEHOLD.replace('    emergency_contacts: [{name: Ana, phone: "+447700900201"}]\n', "")
    path = write(tmp_path, text)
    levels = {f.where: f.level for f in review_household(load_household(path), path)}
    assert levels["gran"] == "warning"


def test_an_override_needs_a_real_note(tmp_path: Path) -> None:
    from gateway.base.errors import ConfigError

    bad = HOUSEHOLD.replace("Dr Lee, resp clinic: usual SpO2 84-88", "")
    with pytest.raises(ConfigError, match="clinician_override"):
        load_household(write(tmp_path, bad))
