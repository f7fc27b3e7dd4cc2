"""Hard SOS latency under load, and the gateway's memory with a large household.

    .venv/bin/python bench/sos_latency.py [--persons 1000] [--rate 1000] [--presses 40]

The gateway runs as its own process (`healthgw run`), exactly as on a hub, with texts going
through the real twilio SDK to a local Twilio-compatible sink. For each SOS press we time
"publish of the press" -> "first SMS request at the endpoint" for that person.

Two phases in one run: presses with the gateway idle (baseline), then presses while a load
process publishes `--rate` readings/s. Reports p50/p95/p99 for both, the ratio, and the
gateway's peak RSS (target: p99 under load <= 100 ms; RSS <= 200 MB with 1,000 persons).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import re
import secrets
import statistics
import subprocess
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

from gateway.contract.topics import sos_topic, vitals_topic  # noqa: E402
from simulators.sms_sink import SmsSink  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _gw import SMS_SID, SMS_TOKEN, healthgw_exe, hub_env  # noqa: E402

from tests.brokers import free_port, running_broker, wait_port  # noqa: E402

SID, TOKEN = SMS_SID, SMS_TOKEN
USER_RE = re.compile(r"user ID (\S+)\)")


def load(port: int, devices: list[tuple[str, str]], rate: float, stop: Any, sent: Any) -> None:
    """Publish `rate` readings/s (QoS 1) until told to stop. At nice 19: the load stands for
    the household's devices, which do not run on the hub; on this 2-core machine it would
    otherwise take CPU from the gateway under test (the rate reached is reported)."""
    os.nice(19)
    c = mqtt.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="bench-load")
    c.max_inflight_messages_set(500)
    c.connect("127.0.0.1", port)
    c.loop_start()
    rnd = random.Random(2)
    seq = 0
    t0 = time.perf_counter()
    while not stop.is_set():
        seq += 1
        dev = devices[seq % len(devices)]
        body = json.dumps(
            {
                "ts": time.time(),
                "seq": seq,
                "heart_rate": 60 + rnd.randint(0, 15),
                "spo2": 96 + rnd.randint(0, 3),
                "steps": rnd.randint(0, 10),
            }
        )
        c.publish(vitals_topic(*dev), body, qos=1)
        delay = t0 + seq / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
    sent.value = seq
    c.loop_stop()
    c.disconnect()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def presses(port: int, sink: SmsSink, persons: list[tuple[str, str]]) -> list[float]:
    """Press SOS for each person in turn; ms from publish to the first text's arrival."""
    c = mqtt.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="bench-sos")
    c.connect("127.0.0.1", port)
    c.loop_start()
    out: list[float] = []
    for person, device in persons:
        before = len(sink.messages)
        t0 = time.time()
        c.publish(sos_topic(person, device), json.dumps({"action": "start", "ts": t0}), qos=1)
        deadline = time.time() + 10
        first: float | None = None
        while time.time() < deadline and first is None:
            for m in sink.messages[before:]:
                found = USER_RE.search(m.body)
                if found and found.group(1) == person:
                    first = m.received_wall
                    break
            time.sleep(0.001)
        if first is not None:
            out.append((first - t0) * 1000)
        time.sleep(0.3)  # let the rest of this run's texts go out
    c.loop_stop()
    c.disconnect()
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--persons", type=int, default=1000)
    ap.add_argument("--rate", type=float, default=1000)
    ap.add_argument("--presses", type=int, default=40)
    ap.add_argument("--warmup", type=float, default=20, help="seconds of load before pressing")
    args = ap.parse_args()
    from gateway.household.model import load_household
    from simulators.fleet import make_household

    result: dict[str, Any] = {"bench": "sos_latency", "persons": args.persons, "rate": args.rate}
    with tempfile.TemporaryDirectory() as tmp, SmsSink(account_sid=SID, auth_token=TOKEN) as sink:
        tmpd = Path(tmp)
        hh_path = tmpd / "household.yaml"
        make_household(args.persons, hh_path)
        hh = load_household(hh_path)
        devices = [(p.id, p.devices[0].id) for p in hh.persons]
        with running_broker(tmpd / "broker") as broker:
            api_port = free_port()
            env = hub_env(
                broker_url=broker.url, household=hh_path, data_dir=tmpd / "data",
                sink_url=sink.url, api_port=api_port,
                api_token=secrets.token_urlsafe(32),  # weak tokens are refused
            )  # fmt: skip
            gw = subprocess.Popen([healthgw_exe(), "--log-level", "WARNING", "run"], env=env)
            try:
                wait_port(api_port, 30)
                time.sleep(1)
                peak = [rss_mb(gw.pid)]
                sampling = threading.Event()

                def sample() -> None:
                    while not sampling.is_set():
                        peak.append(rss_mb(gw.pid))
                        time.sleep(0.5)

                threading.Thread(target=sample, daemon=True).start()
                n = min(args.presses, len(devices) // 2)
                idle = presses(broker.port, sink, devices[:n])
                stop, sent = mp.Event(), mp.Value("i", 0)
                loader = mp.Process(target=load, args=(broker.port, devices, args.rate, stop, sent))
                t_load = time.perf_counter()
                loader.start()
                time.sleep(args.warmup)
                busy = presses(broker.port, sink, devices[n : 2 * n])
                stop.set()
                loader.join()
                load_s = time.perf_counter() - t_load
                sampling.set()
                result |= {
                    "idle_ms": {
                        "p50": round(statistics.median(idle), 1),
                        "p95": round(pct(idle, 0.95), 1),
                        "p99": round(pct(idle, 0.99), 1),
                        "n": len(idle),
                    },
                    "loaded_ms": {
                        "p50": round(statistics.median(busy), 1),
                        "p95": round(pct(busy, 0.95), 1),
                        "p99": round(pct(busy, 0.99), 1),
                        "n": len(busy),
                    },
                    "load_readings_per_s": round(sent.value / load_s),
                    "p99_ratio_loaded_to_idle": round(pct(busy, 0.99) / pct(idle, 0.99), 2),
                    "target_loaded_p99_ms": 100,
                    "gateway_rss_mb": {
                        "after_start": round(peak[0], 1),
                        "peak": round(max(peak), 1),
                    },
                    "target_rss_mb": 200,
                    "texts_received": len(sink.messages),
                }
            finally:
                gw.terminate()
                gw.wait(20)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
