"""The gateway depends on MQTT 3.1.1, not on mosquitto: a slice of its integration tests, run
unchanged against a second implementation, NATS's MQTT gateway (nats-server with JetStream,
the system package; a private one on a free port, never the system's own).

The slice covers what the gateway relies on a broker for: QoS 1 readings stored and scored,
an SOS texted through the real twilio SDK to the local endpoint, an ack, rejected-message
notices, retained Home Assistant configs and state (and their clearing), the persistent
session that keeps readings while the gateway is down, reconnect and resubscribe after the
broker restarts, and the retained online/offline status with its last will. Differences found
are in docs/scale-out.md ("Other brokers")."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import aiomqtt
import pytest
import yaml

from gateway.contract.topics import vitals_topic
from tests.brokers import Broker, running_broker, running_nats, stop_process

# The same test functions, collected again in this module, where `broker` is NATS.
from tests.e2e.test_gateway import (  # noqa: F401
    sink,
    test_bad_payloads_are_rejected_with_reasons_and_the_loop_lives,
    test_hard_sos_texts_ambulance_and_every_contact_once_then_end,
    test_hypoxia_raises_soft_sos_that_says_why_and_ack_cancels_escalation,
)
from tests.gateway.ha.test_gateway_ha import test_gateway_publishes_discovery_and_state  # noqa: F401
from tests.gateway.runtime.test_resilience import (  # noqa: F401
    test_gateway_reconnects_and_resubscribes_after_broker_restart,
    test_qos1_redelivery_is_not_counted_twice,
    test_readings_sent_while_the_gateway_is_down_arrive_after_restart,
)
from tests.harness import (
    ROOT,
    device,
    gateway_process_env,
    make_settings,
    publish,
    running,
    spawn_gateway,
    watching,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    """NATS instead of mosquitto for every test in this module."""
    with running_nats(tmp_path / "nats") as b:
        yield b


@pytest.mark.parametrize("kind", ["mosquitto", "nats"])
async def test_status_is_retained_online_then_offline_by_the_last_will(
    tmp_path: Path, kind: str
) -> None:
    """A real `healthgw run` killed with SIGKILL (no goodbye): the broker publishes its will,
    so a watcher that subscribes afterwards still reads `offline` (retained)."""
    runner = running_nats if kind == "nats" else running_broker
    with runner(tmp_path / kind) as b:
        env = gateway_process_env(tmp_path / "data", b.url, gateway_id="willhub")
        proc = spawn_gateway(env, tmp_path / "gateway.log")
        topic = "gateway/willhub/status"
        try:
            async with watching(b) as w:
                await w.wait(lambda: (topic, "online") in w.messages, within=60)
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            await asyncio.sleep(0.5)
            async with watching(b) as w:  # a late subscriber: only the retained copy
                got = await w.wait(lambda: [p for t, p in w.messages if t == topic], within=10)
                assert got == ["offline"]
        finally:
            stop_process(proc)


# --- NATS and a sharded gateway: per-person subscriptions have a budget -----------------------


async def _granted(b: Broker, n: int) -> int:
    """How many of n QoS 1 subscriptions on one persistent session the broker grants."""
    granted = 0
    async with aiomqtt.Client("127.0.0.1", b.port, identifier="subs", clean_session=False) as c:
        for i in range(n):
            codes = await c.subscribe(f"health/p{i}/+/vitals", qos=1)
            granted += all(int(getattr(x, "value", x)) < 0x80 for x in codes)  # type: ignore[arg-type]
    return granted


async def test_nats_grants_a_session_65535_in_flight_messages_over_all_its_subscriptions(
    tmp_path: Path,
) -> None:
    """Why docs/scale-out.md asks for `mqtt { max_ack_pending }` on NATS: with its default
    (1024 per subscription) a session gets 63 subscriptions, 12 persons of a shard (5 each)."""
    with running_nats(tmp_path / "default") as b:
        assert await _granted(b, 80) == 65535 // 1024
    with running_nats(tmp_path / "tuned", max_ack_pending=64) as b:
        assert await _granted(b, 200) == 200


async def test_a_sharded_gateway_on_nats_hears_every_person(tmp_path: Path) -> None:
    """40 persons listed for one instance (200 subscriptions) on a NATS tuned as documented:
    a reading from each is processed."""
    base = yaml.safe_load((ROOT / "examples" / "household.yaml").read_text())
    tpl = base["persons"][0]
    ids = [f"r{i}" for i in range(40)]
    persons = [
        {**{f: tpl[f] for f in ("birth_date", "sex", "location")}, "id": p, "name": f"R {p}",
         "devices": [f"w-{p}"]}
        for p in ids
    ]  # fmt: skip
    hh = tmp_path / "household.yaml"
    hh.write_text(yaml.safe_dump({**base, "persons": persons}))
    with running_nats(tmp_path / "nats", max_ack_pending=64) as b:
        s = make_settings(tmp_path / "data", b, None, household=hh, gateway_id="nats-shard",
                          shard_persons=ids)  # fmt: skip
        async with running(s) as asm, device(b, "watches") as dev:
            for p in ids:
                await publish(dev, vitals_topic(p, f"w-{p}"),
                              {"ts": time.time(), "seq": 1, "heart_rate": 70, "spo2": 98})  # fmt: skip
            gw = asm.gateway
            deadline = time.monotonic() + 15
            while gw.counters["readings"] < len(ids):
                assert time.monotonic() < deadline, gw.counters["readings"]
                await asyncio.sleep(0.05)
            assert gw.stats()["shard"]["subscriptions"] == 5 * len(ids)
