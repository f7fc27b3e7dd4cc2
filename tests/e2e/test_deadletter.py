"""A device account flooding malformed payloads through the real broker: every reject is
counted and announced, its dead letters stop at the account's daily share, and an SOS
behind the flood is still handled."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.contract.topics import sos_topic, vitals_topic
from simulators.sms_sink import SmsSink
from tests.brokers import Broker
from tests.harness import device, make_settings, publish, running, watching

pytestmark = pytest.mark.integration


@pytest.fixture
def sink() -> Iterator[SmsSink]:
    with SmsSink() as s:
        yield s


async def test_a_flood_of_bad_payloads_is_counted_capped_and_an_sos_still_gets_through(
    tmp_path: Path, broker: Broker, sink: SmsSink
) -> None:
    s = make_settings(tmp_path / "data", broker, sink, deadletter_source_daily_kb=16)
    n = 300
    junk = b'{"ts": 1790000000, "heart_rate": "' + b"z" * 3000 + b'"}'  # schema reject, 3 kB
    async with watching(broker) as w, running(s) as asm, device(broker) as dev:
        gw = asm.gateway
        for _ in range(n):
            await publish(dev, vitals_topic("dad", "watch-jon"), junk)
        await publish(
            dev, sos_topic("grandma", "watch-maria"), {"action": "start", "ts": time.time()}
        )
        await w.wait(lambda: gw.counters["rejected"] >= n, within=30)
        await w.wait(lambda: len(sink.messages) >= 1, within=15)
        assert gw.deadletters.flush()
        assert gw.rejects["schema"] == n
        kept = sum(p.stat().st_size for p in (tmp_path / "data" / "deadletter").glob("*.jsonl"))
        assert 0 < kept <= 16 * 1024
        assert gw.deadletters.stats["quota"] > 0
        assert (
            gw.deadletters.stats["written"]
            + gw.deadletters.stats["quota"]
            + gw.deadletters.stats["queue_full"]
            == n
        )
