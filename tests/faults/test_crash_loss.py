"""Zero loss across a crash: a QoS 1 reading acknowledged to the broker is a stored reading.

Real processes throughout: a private mosquitto with the project's config (persistence on), a
`healthgw run` process, and a watch stream published from a third process. The gateway is
`kill -9`ed mid-stream (no stop hooks), or the broker is restarted mid-stream; afterwards the
SQLite store must hold every published reading exactly once. The counts are printed."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.brokers import Broker, stop_process, wait_port
from tests.faults.conftest import gateway_env, start_gateway
from tests.harness import ADMIN, ROOT

pytestmark = [pytest.mark.faults, pytest.mark.integration]

N = 4000


def _env(data: Path, broker: Broker, gateway_id: str) -> dict[str, str]:
    env, _ = gateway_env(
        data, broker, None, ROOT / "examples" / "household.yaml", HEALTHGW_GATEWAY_ID=gateway_id
    )
    return env


def _gateway(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return start_gateway(env, log, int(env["HEALTHGW_API_PORT"]))


def _publisher(port: int, n: int, rate: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.faults.stream_publisher", str(port), str(n), str(rate)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


def _wait_published(pub: subprocess.Popen[str], at_least: int, within: float = 60) -> None:
    assert pub.stdout is not None
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        line = pub.stdout.readline()
        if not line:
            break
        if line.startswith("published") and int(line.split()[1]) >= at_least:
            return
    raise AssertionError(f"the stream did not reach {at_least} readings")


def _stored(db: Path) -> tuple[int, int]:
    """(rows, distinct (device, seq)) of the test stream in the gateway's store."""
    if not db.exists():
        return 0, 0
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10) as c:
        rows, distinct = c.execute(
            "SELECT count(*), count(DISTINCT device || ':' || seq) FROM readings"
        ).fetchone()
    return int(rows), int(distinct)


def _wait_stored(db: Path, n: int, within: float) -> int:
    deadline = time.monotonic() + within
    rows = 0
    while time.monotonic() < deadline:
        rows = _stored(db)[0]
        if rows >= n:
            return rows
        time.sleep(0.2)
    return rows


def _wait_online(broker: Broker, gateway_id: str, within: float = 30) -> None:
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    seen: list[bytes] = []
    c = mqtt.Client(CallbackAPIVersion.VERSION2)
    c.on_message = lambda _c, _u, m: seen.append(m.payload)
    c.connect("127.0.0.1", broker.port)
    c.subscribe(f"gateway/{gateway_id}/status", qos=1)
    c.loop_start()
    try:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if seen and seen[-1] == b"online":
                return
            time.sleep(0.05)
        raise AssertionError("the gateway never came online")
    finally:
        c.loop_stop()
        c.disconnect()


def _stats(env: dict[str, str]) -> dict[str, Any]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{env['HEALTHGW_API_PORT']}/v1/stats",
        headers={"Authorization": f"Bearer {ADMIN}"},
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        body: dict[str, Any] = json.load(r)
    return body


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes] | subprocess.Popen[str]]]:
    started: list[subprocess.Popen[bytes] | subprocess.Popen[str]] = []
    yield started
    for p in started:
        stop_process(p)  # type: ignore[arg-type]


def test_kill_9_mid_stream_then_restart_stores_every_reading_once(
    tmp_path: Path, broker: Broker, procs: list[subprocess.Popen[bytes] | subprocess.Popen[str]]
) -> None:
    data, log = tmp_path / "data", tmp_path / "gateway.log"
    env = _env(data, broker, "crashhub")
    gw = _gateway(env, log)
    procs.append(gw)
    _wait_online(broker, "crashhub")
    pub = _publisher(broker.port, N, rate=800)
    procs.append(pub)
    _wait_published(pub, N // 2)
    gw.send_signal(signal.SIGKILL)  # no stop hooks, no final flush
    gw.wait(10)
    at_kill = _stored(data / "healthgw.db")[0]
    gw = _gateway(env, log)
    procs.append(gw)
    assert pub.wait(90) == 0, "the broker did not acknowledge every published reading"
    rows = _wait_stored(data / "healthgw.db", N, within=60)
    time.sleep(1.0)  # a doubled row would land now
    gw.send_signal(signal.SIGTERM)
    gw.wait(30)
    rows, distinct = _stored(data / "healthgw.db")
    print(f"\nkill -9 mid-stream: published {N}, stored before the kill {at_kill}, "
          f"stored at the end {rows}, distinct {distinct}, lost {N - distinct}")  # fmt: skip
    assert at_kill < N, "the kill landed after the stream: nothing was tested"
    assert (rows, distinct) == (N, N)


def test_broker_restart_mid_stream_processes_every_reading_once(
    tmp_path: Path, broker: Broker, procs: list[subprocess.Popen[bytes] | subprocess.Popen[str]]
) -> None:
    data, log = tmp_path / "data", tmp_path / "gateway.log"
    env = _env(data, broker, "brokerhub")
    gw = _gateway(env, log)
    procs.append(gw)
    _wait_online(broker, "brokerhub")
    pub = _publisher(broker.port, N, rate=800)
    procs.append(pub)
    _wait_published(pub, N // 2)
    broker.stop()  # SIGTERM: mosquitto saves its persistence file on the way out
    down_at = time.monotonic()
    time.sleep(3.0)  # long enough for several reconnect attempts to fail
    broker.start()  # same port, same persistence_location
    wait_port(broker.port)
    up_at = time.monotonic()
    before = _stored(data / "healthgw.db")[0]
    # Ingest resumes: the store grows again (the publisher resends what was not acknowledged).
    resumed_at = None
    while time.monotonic() - up_at < 20:
        if _stored(data / "healthgw.db")[0] > before:
            resumed_at = time.monotonic()
            break
        time.sleep(0.05)
    assert pub.wait(90) == 0, "the broker did not acknowledge every published reading"
    rows = _wait_stored(data / "healthgw.db", N, within=60)
    time.sleep(1.0)
    processed = _stats(env)["counters"].get("readings")
    gw.send_signal(signal.SIGTERM)
    gw.wait(30)
    rows, distinct = _stored(data / "healthgw.db")
    resume_s = None if resumed_at is None else round(resumed_at - up_at, 2)
    print(f"\nbroker restart mid-stream: published {N}, stored {rows}, distinct {distinct}, "
          f"processed {processed}, broker down {up_at - down_at:.1f}s, "
          f"ingest resumed {resume_s}s after it was back")  # fmt: skip
    assert (rows, distinct) == (N, N)
    assert processed == N  # redeliveries were recognised, not processed twice
    assert resume_s is not None and resume_s <= 2.0, resume_s
