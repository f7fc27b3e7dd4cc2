"""The data disk fills up under a running gateway (a real tmpfs of a few MB, filled by a
file): an SOS still texts, readings that cannot be kept are counted and announced, nothing
crashes, and when space comes back the gateway recovers on its own. Real mosquitto, a real
`healthgw run` process, the twilio SDK over HTTP to a local endpoint."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from simulators.sms_sink import SmsSink
from tests.brokers import Broker, stop_process
from tests.faults.conftest import gateway_env, start_gateway, summary
from tests.harness import ADMIN, ROOT, SID, TOKEN

pytestmark = [pytest.mark.faults, pytest.mark.integration]

DISK_MB = 24


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m,mode=0700", "tmpfs", str(mnt)],
        capture_output=True,
        check=False,
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode(errors='replace')[:200]}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(disk: Path) -> Path:
    """Fill the disk to the last byte (unbuffered: nothing left to fail at close)."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as fh:
        for chunk in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    fh.write(b"\0" * chunk)
    return filler


def stats(port: int) -> dict[str, Any]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/stats", headers={"Authorization": f"Bearer {ADMIN}"}
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        body: dict[str, Any] = json.load(r)
    return body


class Events:
    """Everything on the gateway's and the persons' event topics."""

    def __init__(self, broker: Broker) -> None:
        self.items: list[dict[str, Any]] = []
        self._c = mqtt.Client(CallbackAPIVersion.VERSION2)
        self._c.on_message = self._on
        self._c.connect("127.0.0.1", broker.port)
        self._c.subscribe([("gateway/+/events", 1), ("health/+/events", 1)])
        self._c.loop_start()

    def _on(self, _c: object, _u: object, m: mqtt.MQTTMessage) -> None:
        with contextlib.suppress(ValueError):
            self.items.append(json.loads(m.payload))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.items if e.get("type") == kind]

    def close(self) -> None:
        self._c.loop_stop()
        self._c.disconnect()


def wait(pred: Any, within: float, what: str) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.5)  # the API's rate limit: a poll every half second
    raise AssertionError(f"not reached within {within:.0f}s: {what}")


def publish_readings(broker: Broker, start: int, n: int) -> None:
    c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"disk-watch-{start}")
    c.connect("127.0.0.1", broker.port)
    c.loop_start()
    base = time.time()
    infos = [
        c.publish(
            "health/dad/watch-jon/vitals",
            json.dumps({"ts": base + i * 0.001, "seq": start + i, "heart_rate": 72, "spo2": 97}),
            qos=1,
        )
        for i in range(n)
    ]
    for info in infos:
        info.wait_for_publish(10)
    c.loop_stop()
    c.disconnect()


def test_a_full_data_disk_still_texts_an_sos_counts_what_is_lost_and_recovers(
    tmp_path: Path, broker: Broker, small_disk: Path
) -> None:
    data = small_disk / "data"
    log = tmp_path / "gateway.log"
    with SmsSink(account_sid=SID, auth_token=TOKEN) as sms:
        # A small memory bound, so that the full disk costs readings within the test.
        env, port = gateway_env(
            data, broker, sms, ROOT / "examples" / "household.yaml",
            HEALTHGW_STORE_QUEUE_SIZE="100",
        )  # fmt: skip
        gw = start_gateway(env, log, port)
        events = Events(broker)
        try:
            publish_readings(broker, 0, 50)
            wait(lambda: stats(port)["store"]["written"] >= 50, 20, "readings stored")
            filler = fill(small_disk)
            publish_readings(broker, 1000, 300)
            c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="disk-sos")
            c.connect("127.0.0.1", broker.port)
            c.loop_start()
            sos_at = time.monotonic()
            c.publish(
                "health/dad/watch-jon/sos",
                json.dumps({"action": "start", "ts": time.time()}),
                qos=1,
            )
            texts = wait(lambda: sms.messages, 30, "the SOS texted with a full disk")
            sos_s = time.monotonic() - sos_at
            degraded = wait(
                lambda: [e for e in events.of("monitoring_degraded")
                         if e.get("data", e).get("sink") == "store"],
                30, "the lost readings announced",
            )  # fmt: skip
            full = stats(port)
            assert gw.poll() is None, "the gateway died on a full disk"

            filler.unlink()  # space comes back
            publish_readings(broker, 5000, 50)
            wait(
                lambda: [e for e in events.of("monitoring_recovered")
                         if e.get("data", e).get("sink") == "store"],
                60, "the store's recovery announced",
            )  # fmt: skip
            after = wait(
                lambda: (
                    (s := stats(port))["store"]["written"] >= full["store"]["written"] + 50 and s
                ),
                60,
                "new readings stored after recovery",
            )
            c.publish(
                "health/dad/watch-jon/sos", json.dumps({"action": "end", "ts": time.time()}), qos=1
            )
            c.loop_stop()
            c.disconnect()
            gw.send_signal(signal.SIGTERM)
            rc = gw.wait(60)
        finally:
            events.close()
            stop_process(gw)
    lost = full["counters"].get("readings_lost", 0)
    summary(
        "disk_full",
        sos_to_first_text_s=round(sos_s, 2),
        texts=len(texts),
        readings_lost=lost,
        stored_before=full["store"]["written"],
        stored_after=after["store"]["written"],
        degraded_events=len(degraded),
        exit_code=rc,
    )
    assert rc == 0
    assert {m.to for m in texts} <= {"+447700900201", "+447700900901", "+447700900902",
                                      "+447700900903"}  # fmt: skip
    assert lost > 0  # counted, not silently gone
