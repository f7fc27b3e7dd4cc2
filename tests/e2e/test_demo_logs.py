"""A whole `make demo` story, its logs scanned for PHI.

The demo prints texts to its own screen on purpose (HEALTHGW_PRINT_TEXTS, the family's
terminal); its log lines, which on a hub end up in journald and bug reports, must carry no
household name, phone number or coordinate. Logs run at INFO here (the demo's default is
WARNING, which would hide most of them).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.brokers import free_port
from tests.phi_scan import findings

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(240)
def test_a_full_demo_run_logs_no_phi(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEALTHGW_")}
    port = free_port()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "healthgw.cli",
            "--log-level",
            "INFO",
            "demo",
            "--speed",
            "40",
            "--data-dir",
            str(tmp_path / "demo"),
            "--mqtt-url",
            f"mqtt://127.0.0.1:{port}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=220,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    # The story ran: the screen shows the SOS texts (masked numbers, bodies on purpose).
    assert "[sms to +44…" in proc.stdout
    log_lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert any(" INFO " in ln for ln in log_lines)  # logging was on, so the scan means something
    hits = [f"{ln[:60]}… -> {f}" for ln in log_lines for f in findings(ln)]
    assert not hits, "PHI in the demo's logs:\n" + "\n".join(hits[:20])
