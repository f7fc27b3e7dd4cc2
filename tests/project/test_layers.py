"""The layers hold (pyproject.toml's import-linter contracts, also run by `make lint`): the
gateway library never imports agents/, simulators/ or the composition root healthgw/; its
packages are layered; agents and simulators may import only what an allow-list names, so a
new gateway package is closed to them until someone decides otherwise."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).parent / "lint-imports"


def lint(cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT), "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=120, env=env
    )


def test_import_contracts_are_kept() -> None:
    out = lint(ROOT)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "6 kept, 0 broken" in out.stdout


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("layers")
    for pkg in ("healthgw", "gateway", "agents", "simulators"):
        shutil.copytree(ROOT / pkg, tmp / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp / "tests").mkdir()
    for f in ("__init__.py", "import_contracts.py"):
        shutil.copy(ROOT / "tests" / f, tmp / "tests" / f)
    shutil.copy(ROOT / "pyproject.toml", tmp / "pyproject.toml")
    return tmp


def broken_by(copy: Path, changes: dict[str, str]) -> str:
    """lint-imports over the copy with `changes` (path -> text appended, or a new file)."""
    saved = {p: (copy / p).read_text() if (copy / p).exists() else None for p in changes}
    try:
        for p, text in changes.items():
            f = copy / p
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text((saved[p] or "") + text)
        out = lint(copy, {"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"})
        assert out.returncode != 0, out.stdout[-2000:]
        return out.stdout
    finally:
        for p, old in saved.items():
            if old is None:
                (copy / p).unlink()
            else:
                (copy / p).write_text(old)


def test_the_gateway_importing_an_agent_is_caught(copy: Path) -> None:
    out = broken_by(copy, {"gateway/base/clock.py": "\nimport agents.assistant.runner  # noqa\n"})
    assert "gateway.base.clock -> agents.assistant.runner" in out


def test_an_import_up_a_layer_is_caught(copy: Path) -> None:
    out = broken_by(copy, {"gateway/ha/messages.py": "\nimport gateway.runtime.routing  # noqa\n"})
    assert "gateway.ha.messages -> gateway.runtime.routing" in out


def test_a_new_gateway_package_is_closed_to_agents_and_must_be_placed_in_the_layers(
    copy: Path,
) -> None:
    out = broken_by(
        copy,
        {
            "gateway/fresh/__init__.py": '"""new"""\n',
            "gateway/fresh/part.py": '"""new"""\n',
            "agents/retention.py": "\nimport gateway.fresh.part  # noqa\n",
        },
    )
    assert "agents.retention -> gateway.fresh.part" in out
    assert "layers below it BROKEN" in out  # exhaustive: every package must be placed
    assert "gateway.fresh" in out.split("Broken contracts")[1]
