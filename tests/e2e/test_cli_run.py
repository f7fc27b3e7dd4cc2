"""`healthgw run`, the real entry point: a weak API token stops it before anything is
written to disk, with a clear message that does not echo the token."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "env",
    [
        {"HEALTHGW_API_TOKEN": ""},
        {"HEALTHGW_API_TOKEN": "short-but-secret"},
        {"HEALTHGW_API_TOKEN": "change-me-to-a-long-random-string"},
        {"HEALTHGW_FAMILY_TOKENS": "tiny-family"},
    ],
    ids=["empty", "short", "placeholder", "weak-family"],
)
def test_a_weak_token_stops_the_gateway_before_it_writes_anything(
    tmp_path: Path, env: dict[str, str]
) -> None:
    base = {k: v for k, v in os.environ.items() if not k.startswith("HEALTHGW_")}
    data = tmp_path / "data"
    base |= {
        "HEALTHGW_DATA_DIR": str(data),
        "HEALTHGW_HOUSEHOLD": str(ROOT / "examples" / "household.yaml"),
        "HEALTHGW_MQTT_URL": "mqtt://127.0.0.1:9",  # never reached
        **env,
    }
    proc = subprocess.run(
        [sys.executable, "-m", "healthgw.cli", "run"],
        env=base,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "token" in proc.stderr.lower() and "at least 24 characters" in proc.stderr
    for value in env.values():
        if value:
            assert value not in proc.stderr
    assert not data.exists()


def test_household_and_broker_flags_reach_the_settings(tmp_path: Path) -> None:
    # No HEALTHGW_HOUSEHOLD in the environment: only the flag names the (broken) file, so
    # an error about that file proves the flag was used (healthgw.cli passes it to Settings).
    bad = tmp_path / "broken-household.yaml"
    bad.write_text("persons:\n  - id: dad\n    birth_date: 1944-13-02\n")
    base = {k: v for k, v in os.environ.items() if not k.startswith("HEALTHGW_")}
    base |= {
        "HEALTHGW_DATA_DIR": str(tmp_path / "data"),
        "HEALTHGW_API_TOKEN": "cli-flags-test-Qm7vT2pX9rLw4Kd8Zs",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "healthgw.cli", "run", "--household", str(bad),
         "--mqtt-url", "mqtt://127.0.0.1:9"],
        env=base, cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "broken-household.yaml" in proc.stderr
    assert "Traceback" not in proc.stderr
