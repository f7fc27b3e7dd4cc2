"""/metrics: Prometheus text with messages, rejects by reason, queues, events, texts, tool
calls and a latency histogram, against the running gateway. No token needed, no PHI."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from gateway.api.server import create_app
from gateway.contract.topics import sos_topic, vitals_topic
from simulators.sms_sink import SmsSink
from tests.brokers import Broker
from tests.harness import ADMIN, device, make_settings, publish, running

pytestmark = pytest.mark.integration


async def test_metrics_cover_the_pipeline(tmp_path: Path, broker: Broker) -> None:
    with SmsSink() as sink:
        s = make_settings(tmp_path / "data", broker, sink)
        async with running(s) as asm, device(broker) as dev:
            gw = asm.gateway
            for i in range(5):
                await publish(
                    dev,
                    vitals_topic("dad", "watch-jon"),
                    {"ts": time.time(), "seq": i, "heart_rate": 70},
                )
            await publish(dev, vitals_topic("dad", "watch-jon"), b"not json")
            # Beyond any human value: discarded and counted, the pulse in it kept.
            await publish(dev, vitals_topic("dad", "watch-jon"),
                          {"ts": time.time(), "seq": 9, "heart_rate": 71, "spo2": 150})  # fmt: skip
            await publish(
                dev, sos_topic("grandma", "watch-maria"), {"action": "start", "ts": time.time()}
            )
            await asyncio.to_thread(sink.wait_for, 3, 20)
            app = create_app(gw.api, admin_token=ADMIN)
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://hub"
            ) as c:
                # Vitals and the SOS come on separate broker sessions (gateway/mqtt/sessions.py),
                # so their order is not kept: wait for both.
                for _ in range(50):
                    text = (await c.get("/metrics")).text
                    if (
                        'healthgw_sms_total{state="sent"} 3.0' in text
                        and 'healthgw_messages_total{kind="readings"} 6.0' in text
                    ):
                        break
                    await asyncio.sleep(0.1)
    assert 'healthgw_messages_total{kind="readings"} 6.0' in text
    assert 'healthgw_impossible_values_total{vital="spo2"} 1.0' in text
    assert "healthgw_late_readings_total 0.0" in text
    assert (
        'healthgw_rejected_total{reason="bad_json"}' in text
        or "healthgw_rejected_total{reason=" in text
    )
    assert 'healthgw_events_total{type="hard_sos"} 1.0' in text
    assert 'healthgw_sms_total{state="sent"} 3.0' in text
    assert 'healthgw_tool_calls_total{tool="send_message"}' in text
    assert 'healthgw_queue_depth{queue="mqtt_in"}' in text
    assert "healthgw_reading_process_seconds_count 6.0" in text
    # The SOS press to its first text, once per SOS.
    assert "healthgw_sos_first_text_seconds_count 1.0" in text
    assert "grandma" not in text and "+44" not in text  # no person labels, no numbers


async def test_metrics_show_the_time_series_outbox(tmp_path: Path, broker: Broker) -> None:
    """With InfluxDB configured but unreachable, the outbox depth and degraded flag show."""
    from tests.brokers import free_port

    s = make_settings(
        tmp_path / "data",
        broker,
        None,
        influx_url=f"http://127.0.0.1:{free_port()}",
        influx_degraded_after_s=0,
    )
    async with running(s) as asm, device(broker) as dev:
        gw = asm.gateway
        for i in range(3):
            await publish(
                dev,
                vitals_topic("dad", "watch-jon"),
                {"ts": time.time(), "seq": i, "heart_rate": 70},
            )
        app = create_app(gw.api, admin_token=ADMIN)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://hub"
        ) as c:
            for _ in range(100):
                text = (await c.get("/metrics")).text
                if "healthgw_tsdb_degraded 1.0" in text and "healthgw_tsdb_outbox 0.0" not in text:
                    break
                await asyncio.sleep(0.1)
    assert "healthgw_tsdb_degraded 1.0" in text
    assert "healthgw_tsdb_outbox_max_bytes" in text
    outbox = next(ln for ln in text.splitlines() if ln.startswith("healthgw_tsdb_outbox "))
    assert float(outbox.split()[1]) >= 3
