"""`healthgw export fhir`: a valid Bundle written durably and owner-only, an audit row, exit 2
with one line (no traceback) on bad input, exports in the data folder pruned by retention."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import yaml

from gateway.base.db import Database
from healthgw.cli import main
from tests.gateway.export.checks import validate
from tests.gateway.export.data import HOUSEHOLD, make_source, standard_data


@pytest.fixture
def data(tmp_path: Path) -> Path:
    src, _ = make_source(tmp_path)
    standard_data(src)
    (tmp_path / "household.yaml").write_text(yaml.safe_dump(json.loads(json.dumps(HOUSEHOLD))))
    return tmp_path


def run(data: Path, *args: str) -> int:
    return main(["export", "fhir", *args, "--data-dir", str(data),
                 "--household", str(data / "household.yaml")])  # fmt: skip


def test_writes_a_valid_bundle_and_audits(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = data / "ann.json"
    rc = run(data, "ann", "--since", "2026-05-28", "--until", "2026-05-28", "--out", str(out))
    assert rc == 0, capsys.readouterr().err
    validate(out.read_bytes())
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert not [p for p in data.iterdir() if p.name.endswith(".tmp")]
    (row,) = Database(data / "healthgw.db").conn().execute("SELECT * FROM audit").fetchall()
    args = json.loads(row["args"])
    assert row["tool"] == "fhir_export" and row["actor"].startswith("cli:")
    assert args["person"] == "ann" and args["out"] == str(out)
    # Retention reads the file's age from the newest data it holds, not the day it was made.
    assert out.stat().st_mtime == 1_780_012_800  # 2026-05-29T00:00Z, the period's end


def test_default_location_is_the_data_folder_and_retention_prunes_it(data: Path) -> None:
    old = data / "exports" / "ann-20200101-20200102.fhir.json"
    old.parent.mkdir()
    old.write_text("{}")
    os.utime(old, (1_500_000_000, 1_500_000_000))
    assert run(data, "ann", "--since", "2026-05-28", "--until", "2026-05-29", "--no-name",
               "--downsample", "hour") == 0  # fmt: skip
    (made,) = (data / "exports").iterdir()
    assert made.name == "ann-20260528-20260530.fhir.json" and not old.exists()
    assert '"name"' not in made.read_text().split('"resourceType":"Device"')[0]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["nobody", "--since", "2026-05-28", "--until", "2026-05-29"], "no such person"),
        (["ann", "--since", "2026-05-29", "--until", "2026-05-27"], "ends before it starts"),
        (["ann", "--since", "soon", "--until", "2026-05-29"], "ISO 8601"),
        (["ann", "--since", "2020-01-01", "--until", "2020-01-02"], "no readings or texts"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    data: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    assert run(data, *args) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and err.count("\n") == 1
    assert not (data / "exports").exists()
    (row,) = Database(data / "healthgw.db").conn().execute("SELECT ok, error FROM audit")
    assert row["ok"] == 0 and words in row["error"]  # refused, and audited as refused


def test_no_data_folder_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "household.yaml").write_text(yaml.safe_dump(json.loads(json.dumps(HOUSEHOLD))))
    assert run(tmp_path, "ann", "--since", "2026-05-28", "--until", "2026-05-29") == 2
    assert "no healthgw.db" in capsys.readouterr().err
