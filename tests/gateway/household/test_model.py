from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gateway.base.errors import ConfigError
from gateway.household.model import load_household

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "household.yaml"


def write(tmp_path: Path, text: str, name: str = "hh.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_example_loads() -> None:
    hh = load_household(EXAMPLE)
    assert [p.id for p in hh.persons] == ["grandma", "dad"]
    assert hh.device("grandma", "watch-maria") is not None
    assert hh.person("grandma").conditions == ["copd_hypercapnic", "hypertension"]  # type: ignore[union-attr]
    assert hh.specialists[0].slots[0].start.hour == 9


def test_json_works_too(tmp_path: Path) -> None:
    data = yaml.safe_load(EXAMPLE.read_text())
    p = write(tmp_path, json.dumps(data, default=str), "hh.json")
    assert len(load_household(p).persons) == 2


def test_each_problem_is_reported_with_path_and_line(tmp_path: Path) -> None:
    text = (
        EXAMPLE.read_text()
        .replace("sex: female", "sex: robot")
        .replace('phone: "+447700900102"', "phone: 12345")
    )
    p = write(tmp_path, text)
    with pytest.raises(ConfigError) as ei:
        load_household(p)
    msg = str(ei.value)
    lines = text.splitlines()
    sex_line = next(i for i, line in enumerate(lines, 1) if "sex: robot" in line)
    phone_line = next(i for i, line in enumerate(lines, 1) if "phone: 12345" in line)
    assert f"{p}:{sex_line}: persons.0.sex" in msg
    assert f"{p}:{phone_line}: persons.1.phone" in msg


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    p = write(tmp_path, "persons:\n  - id: a\n    name: [unclosed\n")
    with pytest.raises(ConfigError, match=r"hh.yaml:\d+: not valid"):
        load_household(p)


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda t: t.replace("id: dad", "id: grandma"), "used twice"),
        (
            lambda t: t.replace("specialization: cardiologist", "specialization: wizard"),
            "unknown specialization",
        ),
        (lambda t: t.replace("2026-12-01T09:30", "2026-12-01T08:30", 1), "ends before it starts"),
        (
            lambda t: t.replace("timezone: Europe/London", "timezone: Mars/Olympus"),
            "unknown timezone",
        ),
        (lambda t: t.replace("birth_date: 1978-11-20", "birth_date: 2999-01-01"), "future"),
        (
            lambda t: t.replace(
                "    devices:\n      - {id: watch-jon",
                "    gadgets: 1\n    devices:\n      - {id: watch-jon",
            ),
            "gadgets",
        ),
    ],
)
def test_invalid_households_are_refused(tmp_path: Path, mutate: object, needle: str) -> None:
    text = mutate(EXAMPLE.read_text())  # type: ignore[operator]
    with pytest.raises(ConfigError) as ei:
        load_household(write(tmp_path, text))
    assert needle in str(ei.value)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_household(tmp_path / "nope.yaml")


def test_check_config_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from healthgw.cli import main

    assert main(["check-config", "--household", str(EXAMPLE)]) == 0
    assert "2 persons" in capsys.readouterr().out
    bad = write(tmp_path, "persons: []\n")
    assert main(["check-config", "--household", str(bad)]) == 2


def test_a_clinician_contact_under_any_of_its_names(tmp_path: Path) -> None:
    base = (ROOT / "examples" / "household.yaml").read_text()
    for key in ("clinician", "care_line", "gp", "gp_contact"):
        text = base.replace(
            "    devices:\n      - {id: watch-jon",
            f'    {key}: {{name: Dr Green, phone: "+447700900301"}}\n'
            "    devices:\n      - {id: watch-jon",
        )
        path = tmp_path / f"{key}.yaml"
        path.write_text(text)
        p = load_household(path).person("dad")
        assert p is not None and p.clinician is not None and p.clinician.phone == "+447700900301"


def test_pregnant_flag_is_the_pregnancy_condition(tmp_path: Path) -> None:
    text = (
        (ROOT / "examples" / "household.yaml")
        .read_text()
        .replace(
            "    devices:\n      - {id: watch-jon",
            "    pregnant: true\n    devices:\n      - {id: watch-jon",
        )
    )
    path = tmp_path / "h.yaml"
    path.write_text(text)
    p = load_household(path).person("dad")
    assert p is not None and "pregnancy" in p.conditions
