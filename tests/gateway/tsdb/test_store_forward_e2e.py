"""Store-and-forward against a real time-series server (Debian's VictoriaMetrics, which takes
influxdb-client's /api/v2/write unchanged): the whole gateway, readings over MQTT, the server
stopped for 60 s while readings keep arriving, restarted, and the export API must return
exactly the readings sent, once each."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from gateway.contract.topics import vitals_topic
from tests.brokers import Broker
from tests.harness import device, make_settings, publish, running, watching
from tests.victoria import running_victoria

OUTAGE_S = float(os.environ.get("HEALTHGW_TEST_OUTAGE_S", "60"))
RATE_HZ = 10


async def _send(c: object, n0: int, n: int, t0: float) -> None:
    for i in range(n0, n0 + n):
        await publish(
            c,  # type: ignore[arg-type]
            vitals_topic("grandma", "watch-maria"),
            {"ts": t0 + i / RATE_HZ, "seq": i, "heart_rate": 70 + i % 5, "spo2": 97},
        )
        await asyncio.sleep(1 / RATE_HZ)


async def test_outage_of_the_server_loses_and_duplicates_nothing(
    tmp_path: Path, broker: Broker
) -> None:
    with running_victoria(tmp_path / "vm") as vm:
        settings = make_settings(
            tmp_path / "data",
            broker,
            None,
            influx_url=vm.url,
            influx_token="token",
            influx_degraded_after_s=5,
            influx_health_interval_s=1,
        )
        async with running(settings) as asm, watching(broker) as w, device(broker) as c:
            gw = asm.gateway
            assert gw.tsdb is not None
            t0 = time.time() - 3600  # an hour of history, well inside the store's window
            sent = 0
            await _send(c, sent, 30, t0)
            sent += 30
            await w.wait(lambda: gw.tsdb is not None and gw.tsdb.written >= 30, 10)

            vm.stop()
            outage_start = time.monotonic()
            while time.monotonic() - outage_start < OUTAGE_S:
                await _send(c, sent, RATE_HZ, t0)
                sent += RATE_HZ
            degraded = await w.wait(lambda: w.events("monitoring_degraded"), 10)
            assert degraded[0]["person"] == "" and degraded[0]["active"] is True
            assert gw.tsdb.outbox.points > 0
            assert gw.stats()["tsdb"]["degraded"] is True

            vm.start()  # same data directory: the first 30 points are still there
            await _send(c, sent, 30, t0)
            sent += 30
            recovered = await w.wait(lambda: w.events("monitoring_recovered"), 60)
            assert recovered[0]["active"] is False
            await w.wait(lambda: gw.tsdb is not None and gw.tsdb.outbox.empty(), 30)
            await asyncio.sleep(2 * settings.influx_flush_s)

            # Events went to the hub's own topic, not a person's.
            assert all(
                t.startswith("gateway/testhub/events")
                for t, p in w.messages
                if isinstance(p, dict) and p.get("type") == "monitoring_degraded"
            )

        series = await asyncio.to_thread(
            vm.export, '{__name__="vitals_heart_rate",person="grandma"}'
        )
        ts = [t for s in series for t in s["timestamps"]]  # type: ignore[attr-defined]
        print(f"store-and-forward: sent {sent}, exported {len(ts)}, unique {len(set(ts))}")
        assert len(ts) == sent, (len(ts), sent)
        assert len(set(ts)) == sent  # no duplicates
        # The hub's health points and the degraded/recovered annotations arrived too.
        assert await asyncio.to_thread(vm.count, '{__name__="gateway_readings_total"}') > 0
        kinds = {
            s["metric"]["type"]  # type: ignore[index]
            for s in await asyncio.to_thread(vm.export, '{__name__="events_count"}')
        }
        assert {"monitoring_degraded", "monitoring_recovered"} <= kinds
