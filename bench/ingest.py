"""Sustained ingest: the whole gateway vs a do-nothing paho subscriber, same broker, same run.

    .venv/bin/python bench/ingest.py [--messages 30000] [--persons 200] [--rounds 2]

A publisher process pushes N valid readings at QoS 1 as fast as the broker takes them. The
baseline is a paho subscriber (QoS 1, persistent session) that only counts. The gateway runs
in-process with its real pipeline (validation, dedupe, monitor, store, events). Both consume the
same kind of backlog from a private mosquitto; rounds alternate baseline and gateway so machine
noise hits both. Prints JSON with msgs/s for each and the ratio (target: gateway >= 0.5).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import paho.mqtt.client as mqtt  # noqa: E402
from paho.mqtt.enums import CallbackAPIVersion  # noqa: E402

from gateway.contract import vitals_topic  # noqa: E402
from tests.brokers import running_broker  # noqa: E402


def make_household(path: Path, persons: int) -> list[tuple[str, str]]:
    from simulators.fleet import make_household as mk

    mk(persons, path)
    from gateway.household import load_household

    hh = load_household(path)
    return [(p.id, p.devices[0].id) for p in hh.persons]


def publisher(port: int, devices: list[tuple[str, str]], n: int, ready: Any) -> None:
    """Publish n readings (QoS 1), round-robin over devices, as fast as the broker acks."""
    c = mqtt.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="bench-pub")
    c.max_inflight_messages_set(200)
    c.max_queued_messages_set(0)
    c.connect("127.0.0.1", port)
    c.loop_start()
    rnd = random.Random(1)
    now = time.time() - 600
    seqs = dict.fromkeys(devices, 0)
    infos = []
    for i in range(n):
        dev = devices[i % len(devices)]
        seqs[dev] += 1
        body = json.dumps(
            {
                "ts": now + i * 0.01,
                "seq": seqs[dev],
                "heart_rate": 60 + rnd.randint(0, 15),
                "spo2": 96 + rnd.randint(0, 3),
                "respiratory_rate": 14 + rnd.randint(0, 3),
                "steps": rnd.randint(0, 10),
            }
        )
        infos.append(c.publish(vitals_topic(*dev), body, qos=1))
    for info in infos:
        info.wait_for_publish(60)
    c.loop_stop()
    c.disconnect()
    ready.set()


def run_baseline(port: int, devices: list[tuple[str, str]], n: int) -> float:
    """Do-nothing paho subscriber: msgs/s from first to last message."""
    got = 0
    first = last = 0.0
    done = threading.Event()

    def on_message(_c: Any, _u: Any, _m: Any) -> None:
        nonlocal got, first, last
        got += 1
        if got == 1:
            first = time.perf_counter()
        if got >= n:
            last = time.perf_counter()
            done.set()

    sub = mqtt.Client(
        callback_api_version=CallbackAPIVersion.VERSION2,
        client_id="bench-base",
        clean_session=False,
    )
    sub.on_message = on_message
    sub.connect("127.0.0.1", port)
    sub.subscribe("health/+/+/vitals", qos=1)
    sub.loop_start()
    time.sleep(0.5)
    pub_done = mp.Event()
    p = mp.Process(target=publisher, args=(port, devices, n, pub_done))
    p.start()
    done.wait(300)
    p.join()
    sub.loop_stop()
    sub.disconnect()
    return (n - 1) / (last - first)


async def _gateway_round(
    settings: Any, port: int, devices: list[tuple[str, str]], n: int
) -> tuple[float, dict[str, Any]]:
    from gateway.wiring import assemble

    asm = assemble(settings)
    gw = asm.gateway
    await gw.start()
    await asyncio.wait_for(gw.link.connected.wait(), 10)
    base = gw.counters["readings"]
    pub_done = mp.Event()
    p = mp.Process(target=publisher, args=(port, devices, n, pub_done))
    p.start()
    first = last = 0.0
    while gw.counters["readings"] - base < n:
        got = gw.counters["readings"] - base
        if got and not first:
            first = time.perf_counter()
        await asyncio.sleep(0.002)
        if not p.is_alive() and time.perf_counter() - (first or time.perf_counter()) > 300:
            break
    last = time.perf_counter()
    await asyncio.to_thread(p.join)
    stats = gw.stats()
    await gw.stop()
    return (n - 1) / (last - first), stats


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=30_000)
    ap.add_argument("--persons", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    mp.set_start_method("fork")
    from gateway.settings import Settings

    base_rates: list[float] = []
    gw_rates: list[float] = []
    last_stats: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        hh = tmpd / "household.yaml"
        devices = make_household(hh, args.persons)
        with running_broker(tmpd / "broker") as broker:
            for r in range(args.rounds):
                base_rates.append(run_baseline(broker.port, devices, args.messages))
                settings = Settings(
                    mqtt_url=broker.url,
                    data_dir=tmpd / f"data{r}",
                    household=hh,
                    api_token="bench-admin-token-0123456789",
                    gateway_id=f"bench{r}",
                )
                rate, last_stats = asyncio.run(
                    _gateway_round(settings, broker.port, devices, args.messages)
                )
                gw_rates.append(rate)
    b, g = statistics.median(base_rates), statistics.median(gw_rates)
    out = {
        "bench": "ingest",
        "messages_per_round": args.messages,
        "persons": args.persons,
        "rounds": args.rounds,
        "baseline_paho_msgs_per_s": [round(x) for x in base_rates],
        "gateway_msgs_per_s": [round(x) for x in gw_rates],
        "ratio_gateway_to_baseline": round(g / b, 3),
        "target_ratio": 0.5,
        "gateway_rejected": last_stats.get("counters", {}).get("rejected", 0),
        "gateway_store": last_stats.get("store"),
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
