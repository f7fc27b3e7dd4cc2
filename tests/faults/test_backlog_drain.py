"""A hub back from an outage drains the broker's backlog: every reading stored exactly once,
nothing shed, an SOS pressed mid-drain texted within a second, RSS within 200 MB.

Real processes: a private mosquitto with the project's broker settings (mosquitto/dev.conf:
the same `max_queued_messages` and `max_inflight_messages` as the shipped mosquitto.conf, a
test below holds them equal), a `healthgw run` process, publisher processes, the real twilio
SDK against a local endpoint. The gateway runs once to create its persistent sessions and is
stopped; the backlog is published while it is down; then it starts and drains.

Two sizes: 20,000 readings (issue 26: the landed main shed 264-296 of them every round) and
the broker's own queue limit (100,000: what a hub may find after ~14 h away)."""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from simulators.sms_sink import SmsSink
from tests.brokers import Broker, stop_process, wait_port
from tests.faults.conftest import gateway_env, rss_mb, start_gateway, summary
from tests.faults.load import Presser, collect, run_publishers, stats
from tests.harness import ROOT, SID, TOKEN, spawn_gateway

pytestmark = [pytest.mark.faults, pytest.mark.integration]

PERSONS = 200
RSS_CAP_MB = 200.0
SOS_BOUND_MS = 1000.0
QUEUE_LIMIT = 100_000  # mosquitto/*.conf max_queued_messages


def _conf_value(name: str, key: str) -> str:
    m = re.search(rf"^{key}\s+(\S+)", (ROOT / "mosquitto" / name).read_text(), re.M)
    assert m, (name, key)
    return m.group(1)


def test_the_test_broker_queues_like_the_shipped_one() -> None:
    for key in ("max_queued_messages", "max_inflight_messages"):
        assert _conf_value("dev.conf", key) == _conf_value("mosquitto.conf", key), key
    assert int(_conf_value("mosquitto.conf", "max_queued_messages")) == QUEUE_LIMIT


def _stored_rows(data: Path) -> int:
    """Rows committed so far (0 before the gateway made its database)."""
    if not (data / "healthgw.db").exists():
        return 0
    try:
        with sqlite3.connect(f"file:{data / 'healthgw.db'}?mode=ro", uri=True, timeout=10) as c:
            return int(c.execute("SELECT count(*) FROM readings").fetchone()[0])
    except sqlite3.OperationalError:  # the table is not made yet
        return 0


def _stored(data: Path) -> tuple[int, int]:
    with sqlite3.connect(f"file:{data / 'healthgw.db'}?mode=ro", uri=True, timeout=10) as c:
        row = c.execute(
            "SELECT count(*), count(DISTINCT device || ':' || seq) FROM readings"
        ).fetchone()
    return int(row[0]), int(row[1])


@pytest.mark.timeout(600)
@pytest.mark.parametrize("n", [20_000, QUEUE_LIMIT], ids=["20k", "queue-limit"])
def test_backlog_drains_with_nothing_lost_and_sos_on_time(
    tmp_path: Path, broker: Broker, n: int
) -> None:
    from gateway.household.model import load_household
    from simulators.fleet import make_household

    hh_path = tmp_path / "household.yaml"
    make_household(PERSONS, hh_path)
    devices = [(p.id, p.devices[0].id) for p in load_household(hh_path).persons]
    data = tmp_path / "data"
    rss: list[float] = []
    with SmsSink(account_sid=SID, auth_token=TOKEN) as sms:
        env, api = gateway_env(
            data,
            broker,
            sms,
            hh_path,
            HEALTHGW_LOG_LEVEL="WARNING",
            HEALTHGW_API_RATE_LIMIT="100/second",
        )  # polled while draining
        log = tmp_path / "gateway.log"
        stop_process(start_gateway(env, log, api), 20)  # its sessions now exist at the broker
        t0 = time.monotonic()
        pubs = collect(run_publishers(broker.port, devices, 0.0, 600.0, 2, count=n), 400)
        accepted = sum(r["acked"] for r in pubs)
        publish_s = time.monotonic() - t0
        assert accepted == n, pubs  # the broker holds the whole backlog
        presser = Presser(broker.port, sms, iter(devices))
        sampling = threading.Event()
        # Not start_gateway(): it waits for the API, and under load the drain can be over by
        # then. The store's own rows say how far the drain is.
        proc = spawn_gateway(env, log)
        t_start = time.monotonic()
        try:

            def sample() -> None:
                while not sampling.is_set():
                    rss.append(rss_mb(proc.pid))
                    time.sleep(0.2)

            threading.Thread(target=sample, daemon=True).start()
            presses: list[float | None] = []
            at: list[int] = []
            deadline = time.monotonic() + 400
            while (done := _stored_rows(data)) < n:
                assert proc.poll() is None, "the gateway exited"
                assert time.monotonic() < deadline, f"drained {done} of {n}"
                # Three presses while the backlog drains (each a new person).
                if len(presses) < 3 and done >= n * (len(presses) + 1) // 5:
                    at.append(done)
                    presses.append(presser.press())
                time.sleep(0.02)
            drain_s = time.monotonic() - t_start
            wait_port(api, 60)
            end = stats(api)
        finally:
            sampling.set()
            presser.close()
            stop_process(proc, 30)
    rows, distinct = _stored(data)
    mqtt = end["mqtt"]
    print(
        f"backlog {n}: published in {publish_s:.1f}s; drained in {drain_s:.1f}s "
        f"({n / drain_s:.0f}/s from the process start); stored {rows} rows, {distinct} distinct; shed "
        f"{mqtt['shed']}; read pauses {mqtt.get('read_pauses')}; SOS ms {presses} at "
        f"readings {at}; RSS MB peak {max(rss):.1f} (samples {len(rss)})"
    )
    summary(
        f"backlog_drain_{n}",
        drained_per_s=round(n / drain_s),
        stored=rows,
        shed=sum(mqtt["shed"].values()),
        sos_ms=[None if p is None else round(p) for p in presses],
        peak_rss_mb=round(max(rss), 1),
    )
    assert rows == distinct == n, "a reading was lost or stored twice"
    assert not mqtt["shed"], "a drain must not shed"
    assert len(presses) == 3 and all(p is not None for p in presses), "a press was never texted"
    assert max(p for p in presses if p is not None) <= SOS_BOUND_MS, presses
    assert max(rss) <= RSS_CAP_MB, max(rss)
