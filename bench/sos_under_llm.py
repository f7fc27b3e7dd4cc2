"""Hard SOS latency while the local model is generating, against the same gateway with the
model idle (same run, same process, same household).

    .venv/bin/python bench/sos_under_llm.py [--persons 60] [--presses 30] [--chat-rate 3]
        [--model auto|off] [--assistant-process own|inline]

`healthgw run` runs as on a hub with HEALTHGW_ASSISTANT_MODEL=auto (SmolLM2-135M in its
own niced worker process). Phase 1 presses SOS with the model loaded and idle. Phase 2 keeps
the model busy: a chatter process sends symptom messages as intents for other persons at
`--chat-rate`/s (each starts a conversation whose steps call the model), and the presses
repeat. Reports p50/p95/p99 for both, their ratio (target: busy p99 <= 1.2x idle p99), and
the model's own call counts from /v1/stats so "busy" is shown, not assumed.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import paho.mqtt.client as mqtt  # noqa: E402
from paho.mqtt.enums import CallbackAPIVersion  # noqa: E402
from sos_latency import SID, TOKEN, pct, presses  # noqa: E402

from gateway.contract.topics import intent_topic  # noqa: E402
from simulators.sms_sink import SmsSink  # noqa: E402
from tests.brokers import free_port, running_broker, wait_port  # noqa: E402

API_TOKEN = "bench-admin-token-0123456789"  # the gateway refuses tokens under 24 chars
COMPLAINTS = [
    "I have chest pain when I walk uphill",
    "my knees are stiff every morning",
    "I keep coughing at night and feel short of breath",
    "there is an itchy rash on my arms",
    "I get headaches and my vision goes blurry",
    "it burns when I pee",
]


def chatter(port: int, persons: list[str], rate: float, stop: Any, sent: Any) -> None:
    c = mqtt.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="bench-chat")
    c.connect("127.0.0.1", port)
    c.loop_start()
    rnd = random.Random(3)
    n = 0
    t0 = time.perf_counter()
    while not stop.is_set():
        # A new session id each time: the open conversation is replaced, so every message
        # starts a fresh run whose first steps call the model.
        body = {"text": rnd.choice(COMPLAINTS), "session_id": f"b{n}"}
        c.publish(intent_topic(persons[n % len(persons)]), json.dumps(body), qos=1)
        n += 1
        delay = t0 + n / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
    sent.value = n
    c.loop_stop()
    c.disconnect()


def stats(api_port: int) -> dict[str, Any]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{api_port}/v1/stats", headers={"Authorization": f"Bearer {API_TOKEN}"}
    )
    with urllib.request.urlopen(req, timeout=5) as r:
        out: dict[str, Any] = json.loads(r.read())
        return out


def summary(xs: list[float]) -> dict[str, float]:
    return {
        "p50": round(statistics.median(xs), 1),
        "p95": round(pct(xs, 0.95), 1),
        "p99": round(pct(xs, 0.99), 1),
        "n": len(xs),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--persons", type=int, default=150)
    ap.add_argument("--presses", type=int, default=40)
    ap.add_argument("--chat-rate", type=float, default=3.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=2, help="alternating idle/busy phases")
    ap.add_argument(
        "--model",
        choices=("auto", "off"),
        default="auto",
        help="off: the same chat load with no model (separates model cost from the rest)",
    )
    ap.add_argument(
        "--assistant-process",
        choices=("inline", "own"),
        default="own",
        help="inline: the conversations in the gateway's process (the earlier layout)",
    )
    args = ap.parse_args()
    from gateway.household.model import load_household
    from simulators.fleet import make_household

    result: dict[str, Any] = {
        "bench": "sos_under_llm",
        "persons": args.persons,
        "model": args.model,
        "assistant_process": args.assistant_process,
    }
    with tempfile.TemporaryDirectory() as tmp, SmsSink(account_sid=SID, auth_token=TOKEN) as sink:
        tmpd = Path(tmp)
        hh_path = tmpd / "household.yaml"
        make_household(args.persons, hh_path)
        hh = load_household(hh_path)
        devices = [(p.id, p.devices[0].id) for p in hh.persons]
        n = min(args.presses, len(devices) // 3)
        with running_broker(tmpd / "broker") as broker:
            api_port = free_port()
            env = os.environ | {
                "HEALTHGW_MQTT_URL": broker.url,
                "HEALTHGW_HOUSEHOLD": str(hh_path),
                "HEALTHGW_DATA_DIR": str(tmpd / "data"),
                "HEALTHGW_TWILIO_ACCOUNT_SID": SID,
                "HEALTHGW_TWILIO_AUTH_TOKEN": TOKEN,
                "HEALTHGW_TWILIO_FROM": "+15005550006",
                "HEALTHGW_TWILIO_API_BASE": sink.url,
                "HEALTHGW_API_TOKEN": API_TOKEN,
                "HEALTHGW_API_PORT": str(api_port),
                "HEALTHGW_ASSISTANT_MODEL": args.model,
                "HEALTHGW_ASSISTANT_PROCESS": args.assistant_process,
                "HEALTHGW_TRIAGE_CACHE_DIR": str(Path.home() / ".cache" / "healthgw"),
                "HEALTHGW_LOG_LEVEL": "WARNING",
                # This tree's code, whichever checkout the venv was installed from.
                "PYTHONPATH": str(ROOT),
            }
            gw = subprocess.Popen(
                [str(ROOT / ".venv" / "bin" / "healthgw"), "--log-level", "WARNING", "run"], env=env
            )
            try:
                wait_port(api_port, 60)
                time.sleep(args.warmup)  # the model and triage load in the background
                idle: list[float] = []
                busy: list[float] = []
                talkers = [p for p, _ in devices[2 * n :]]
                sent_total = 0
                before = stats(api_port)["assistant"]["model"]
                per = max(1, n // args.rounds)
                # Phases alternate (idle, busy, idle, busy, ...) so drift hits both alike.
                for r in range(args.rounds):
                    idle += presses(broker.port, sink, devices[r * per : (r + 1) * per])
                    stop, sent = mp.Event(), mp.Value("i", 0)
                    proc = mp.Process(
                        target=chatter, args=(broker.port, talkers, args.chat_rate, stop, sent)
                    )
                    proc.start()
                    time.sleep(3)  # the model is generating by now
                    busy += presses(broker.port, sink, devices[n + r * per : n + (r + 1) * per])
                    stop.set()
                    proc.join()
                    sent_total += sent.value
                    time.sleep(5)  # let the queued conversations drain before the idle phase
                after = stats(api_port)["assistant"]["model"]
                result |= {
                    "idle_ms": summary(idle),
                    "model_busy_ms": summary(busy),
                    "p99_ratio_busy_to_idle": round(pct(busy, 0.99) / pct(idle, 0.99), 2),
                    "p95_ratio_busy_to_idle": round(pct(busy, 0.95) / pct(idle, 0.95), 2),
                    "target_ratio": 1.2,
                    "rounds": args.rounds,
                    "chat_messages_sent": sent_total,
                    "model_calls_idle_phase": {k: v["calls"] for k, v in before.items()},
                    "model_calls_total": {k: v["calls"] for k, v in after.items()},
                    "model_roles": after,
                }
            finally:
                gw.terminate()
                gw.wait(30)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
