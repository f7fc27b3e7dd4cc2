"""Helpers the benchmarks share: run `healthgw run` as its own process, read its stats and
memory. (Not a benchmark: run_all.py skips files starting with "_".)"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.brokers import free_port, wait_port  # noqa: E402


def healthgw_exe() -> str:
    """The `healthgw` next to this interpreter (the venv's), else on PATH."""
    here = Path(sys.executable).parent / "healthgw"
    return str(here) if here.exists() else "healthgw"


def rss_mb(pid: int) -> float:
    """Resident set size of one process, from /proc (0 when it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children(pid: int) -> list[int]:
    """Direct children of a process (the anomaly worker, the model worker, ...)."""
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            out += [int(c) for c in (task / "children").read_text().split()]
    return out


@dataclass
class GatewayProcess:
    proc: subprocess.Popen[bytes]
    api_port: int
    token: str

    @property
    def pid(self) -> int:
        return self.proc.pid

    def get(self, path: str) -> Any:
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.api_port}{path}",
            headers={"Authorization": f"Bearer {self.token}"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read().decode()
        return json.loads(body) if path.startswith("/v1/") else body

    def stats(self) -> dict[str, Any]:
        got: dict[str, Any] = self.get("/v1/stats")
        return got


@contextlib.contextmanager
def gateway_process(
    *, broker_url: str, household: Path, data_dir: Path, extra_env: dict[str, str] | None = None
) -> Iterator[GatewayProcess]:
    """`healthgw run` as on a hub; stopped (SIGTERM, then SIGKILL) on exit."""
    api_port = free_port()
    token = secrets.token_urlsafe(32)
    env = os.environ | {
        "HEALTHGW_MQTT_URL": broker_url,
        "HEALTHGW_HOUSEHOLD": str(household),
        "HEALTHGW_DATA_DIR": str(data_dir),
        "HEALTHGW_API_TOKEN": token,
        "HEALTHGW_API_PORT": str(api_port),
        "HEALTHGW_LOG_LEVEL": "WARNING",
        **(extra_env or {}),
    }
    proc = subprocess.Popen([healthgw_exe(), "--log-level", "WARNING", "run"], env=env)
    try:
        wait_port(api_port, 60)
        yield GatewayProcess(proc, api_port, token)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_until(pred: Any, timeout: float, every: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(every)
    return False


SMS_SID = "AC" + "1" * 32  # the local Twilio-compatible sink's account (simulators/sms_sink.py)
SMS_TOKEN = "bench-token"


def hub_env(
    *,
    broker_url: str,
    household: Path,
    data_dir: Path,
    sink_url: str,
    api_port: int,
    api_token: str,
    **extra: str,
) -> dict[str, str]:
    """`healthgw run`'s environment for an SOS benchmark: texts through the real twilio SDK
    to the local sink at `sink_url`."""
    return os.environ | {
        "HEALTHGW_MQTT_URL": broker_url,
        "HEALTHGW_HOUSEHOLD": str(household),
        "HEALTHGW_DATA_DIR": str(data_dir),
        "HEALTHGW_TWILIO_ACCOUNT_SID": SMS_SID,
        "HEALTHGW_TWILIO_AUTH_TOKEN": SMS_TOKEN,
        "HEALTHGW_TWILIO_FROM": "+15005550006",
        "HEALTHGW_TWILIO_API_BASE": sink_url,
        "HEALTHGW_API_TOKEN": api_token,
        "HEALTHGW_API_PORT": str(api_port),
        "HEALTHGW_LOG_LEVEL": "WARNING",
        **extra,
    }  # fmt: skip
