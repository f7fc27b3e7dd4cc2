"""A private VictoriaMetrics (Debian's package) on a free port: a real server that takes
influxdb-client's /api/v2/write unchanged and gives the points back through its export API."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.brokers import free_port, stop_process, wait_port

VM = shutil.which("victoria-metrics") or "/usr/bin/victoria-metrics"


def available() -> bool:
    return Path(VM).exists()


@dataclass
class Victoria:
    port: int
    data: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.data.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [
                VM,
                f"-httpListenAddr=127.0.0.1:{self.port}",
                f"-storageDataPath={self.data}",
                "-retentionPeriod=100y",
                "-loggerLevel=ERROR",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port, 20)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{self.url}/health", timeout=1) as r,
            ):
                if r.status == 200:
                    return
            time.sleep(0.1)
        raise TimeoutError("victoria-metrics did not become healthy")

    def stop(self) -> None:
        stop_process(self.proc, 15)
        self.proc = None

    def export(self, match: str) -> list[dict[str, object]]:
        """Every raw sample of the series matching `match` (a PromQL series selector)."""
        with urllib.request.urlopen(f"{self.url}/internal/force_flush", timeout=10):
            pass
        q = urllib.parse.urlencode({"match[]": match})
        with urllib.request.urlopen(f"{self.url}/api/v1/export?{q}", timeout=30) as r:
            body = r.read().decode()
        return [json.loads(line) for line in body.splitlines() if line.strip()]

    def count(self, match: str) -> int:
        return sum(len(s["timestamps"]) for s in self.export(match))  # type: ignore[arg-type]


@contextlib.contextmanager
def running_victoria(workdir: Path) -> Iterator[Victoria]:
    v = Victoria(free_port(), workdir)
    v.start()
    try:
        yield v
    finally:
        v.stop()
