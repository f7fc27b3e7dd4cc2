"""The layers hold (pyproject.toml's import-linter contracts, also run by `make lint`): the
gateway library never imports agents/, simulators/ or the composition root healthgw/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_are_kept() -> None:
    exe = Path(sys.executable).parent / "lint-imports"
    out = subprocess.run(
        [str(exe), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "3 kept, 0 broken" in out.stdout


def test_a_forbidden_import_is_caught(tmp_path: Path) -> None:
    # The contract is not vacuous: the same config over a copy with one bad import fails.
    import shutil

    for pkg in ("healthgw", "gateway", "agents", "simulators"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    clock = tmp_path / "gateway" / "clock.py"
    clock.write_text(clock.read_text() + "\nimport agents.policy  # noqa: E402\n")
    exe = Path(sys.executable).parent / "lint-imports"
    out = subprocess.run(
        [str(exe), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode != 0
    assert "gateway.clock -> agents.policy" in out.stdout
