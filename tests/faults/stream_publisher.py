"""A watch stream in its own process: N valid readings at QoS 1, alternating between the
example household's two watches, paced, from a persistent paho session (so what it could not
deliver while the broker was away is resent). Prints `published <n>` every 100 and
`acked <n>` at the end (every PUBACK received from the broker).

    python -m tests.faults.stream_publisher PORT N [RATE_PER_S] [CLIENT_ID]"""

from __future__ import annotations

import json
import sys
import threading
import time

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

DEVICES = (("dad", "watch-jon"), ("grandma", "watch-maria"))


def reading(i: int, base_ts: float) -> tuple[str, bytes]:
    person, dev = DEVICES[i % 2]
    body = {
        # Distinct (device, seq, ts) per reading: what the store's unique key is made of.
        "ts": round(base_ts + i * 0.001, 3),
        "seq": i,
        "heart_rate": 70 + i % 7,
        "spo2": 95 + i % 3,
    }
    return f"health/{person}/{dev}/vitals", json.dumps(body).encode()


def main(argv: list[str]) -> int:
    port, n = int(argv[0]), int(argv[1])
    rate = float(argv[2]) if len(argv) > 2 else 800.0
    client_id = argv[3] if len(argv) > 3 else "fault-stream"
    acked = 0
    lock = threading.Lock()

    def on_publish(*_: object) -> None:
        nonlocal acked
        with lock:
            acked += 1

    c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=False)
    c.max_inflight_messages_set(100)
    c.max_queued_messages_set(0)  # unbounded: the stream is the test's ground truth
    c.reconnect_delay_set(0.1, 0.5)
    c.on_publish = on_publish
    c.connect("127.0.0.1", port)
    c.loop_start()
    base = time.time()
    start = time.monotonic()
    for i in range(n):
        topic, payload = reading(i, base)
        c.publish(topic, payload, qos=1)
        if (i + 1) % 100 == 0:
            print(f"published {i + 1}", flush=True)
        lag = start + (i + 1) / rate - time.monotonic()
        if lag > 0:
            time.sleep(lag)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with lock:
            if acked >= n:
                break
        time.sleep(0.05)
    print(f"acked {acked}", flush=True)
    c.loop_stop()
    c.disconnect()
    return 0 if acked >= n else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
