"""The whole gateway as `healthgw run` in its own process, over a private mosquitto, texting a
local Twilio-compatible sink: the live API over real HTTP, with every part behind it running
(reminders, reports, the SOS ladder, the assistant without its model)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from simulators.sms_sink import SmsSink
from tests.brokers import free_port, running_broker, stop_process
from tests.harness import ADMIN, FAMILY, FROM, ROOT, SID, TOKEN, TRIAGE_CACHE

VIEWER = "viewer-token-for-tests-0123456789"


@dataclass(frozen=True)
class LiveGateway:
    base_url: str
    log: Path
    sink: SmsSink


def gateway_env(
    data: Path, mqtt_url: str, sink_url: str, port: int, **extra: str
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEALTHGW_")}
    env |= {
        "HEALTHGW_MQTT_URL": mqtt_url,
        "HEALTHGW_DATA_DIR": str(data),
        "HEALTHGW_HOUSEHOLD": str(ROOT / "examples" / "household.yaml"),
        "HEALTHGW_API_TOKEN": ADMIN,
        "HEALTHGW_FAMILY_TOKENS": FAMILY,
        "HEALTHGW_VIEWER_TOKENS": VIEWER,
        "HEALTHGW_API_PORT": str(port),
        "HEALTHGW_GATEWAY_ID": "fuzzhub",
        "HEALTHGW_ASSISTANT_MODEL": "off",
        "HEALTHGW_TRIAGE_CACHE_DIR": str(TRIAGE_CACHE),
        "HEALTHGW_TWILIO_ACCOUNT_SID": SID,
        "HEALTHGW_TWILIO_AUTH_TOKEN": TOKEN,
        "HEALTHGW_TWILIO_FROM": FROM,
        "HEALTHGW_TWILIO_API_BASE": sink_url,
    }
    return env | extra


@contextlib.contextmanager
def live_gateway(
    workdir: Path, *, ready_within: float = 60.0, **extra: str
) -> Iterator[LiveGateway]:
    """Yields once GET /readyz answers 200 (broker connected, store and texts running)."""
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "gateway.log"
    port = free_port()
    with (
        running_broker(workdir / "broker") as broker,
        SmsSink(account_sid=SID, auth_token=TOKEN) as sink,
    ):
        env = gateway_env(workdir / "data", broker.url, sink.url, port, **extra)
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "healthgw.cli", "run"],
                env=env,
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + ready_within
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(
                        f"the gateway exited: {log.read_text(errors='replace')[-2000:]}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"the gateway was not ready: {log.read_text(errors='replace')[-2000:]}"
                    )
                time.sleep(0.2)
            yield LiveGateway(base, log, sink)
        finally:
            stop_process(proc, timeout=15)
