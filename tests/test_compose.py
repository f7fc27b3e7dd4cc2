"""docker-compose.yml is for users' hubs; here it is validated with Debian's docker-compose."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_compose_file_is_valid(tmp_path: Path) -> None:
    exe = shutil.which("docker-compose")
    if exe is None:
        pytest.skip("Debian's docker-compose is not installed (scripts/setup.sh installs it)")
    env_file = ROOT / ".env"
    created = not env_file.exists()
    if created:
        env_file.write_text((ROOT / ".env.example").read_text())
    try:
        out = subprocess.run([exe, "config"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    finally:
        if created:
            env_file.unlink()
    assert out.returncode == 0, out.stderr
    cfg = yaml.safe_load(out.stdout)
    assert {"mosquitto", "gateway", "simulator"} <= set(cfg["services"])
    assert cfg["services"]["simulator"]["profiles"] == ["sim"]
    gw = cfg["services"]["gateway"]
    assert gw["depends_on"]["mosquitto"]["condition"] == "service_healthy"
    assert "healthcheck" in gw and "healthcheck" in cfg["services"]["mosquitto"]
