"""Load for the fault tests: publisher processes, timed SOS presses, an event tap, /v1/stats.

Shared by the overload and backlog-drain tests. Publishers run at nice 19 in their own
processes: they stand for the household's devices, which do not run on the hub."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import random
import re
import time
from collections.abc import Iterator
from typing import Any

import paho.mqtt.client as mqtt
import requests
from paho.mqtt.enums import CallbackAPIVersion

from gateway.contract.topics import sos_topic, vitals_topic
from simulators.sms_sink import SmsSink
from tests.harness import ADMIN

USER_RE = re.compile(r"user ID (\S+)\)")


def _publish_loop(port: int, devices: list[tuple[str, str]], rate: float, dur: float,
                  seed: int, out: Any, count: int = 0) -> None:  # fmt: skip
    """A publisher process: `rate` readings/s (0 = flat-out) for `dur` s, or `count` readings;
    reports how many the broker PUBACKed. At nice 19: it stands for the household's devices,
    which do not run on the hub, so it must not take the 2 cores from the gateway and the
    broker when they need them (the rate reached is printed)."""
    os.nice(19)
    c = mqtt.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id=f"load-{seed}")
    c.max_inflight_messages_set(500)
    c.max_queued_messages_set(0)
    acked = [0]
    c.on_publish = lambda *a: acked.__setitem__(0, acked[0] + 1)
    c.connect("127.0.0.1", port)
    c.loop_start()
    rnd = random.Random(seed)
    seq, t0 = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - t0) < dur and not (count and seq >= count):
        seq += 1
        dev = devices[(seq * 7 + seed) % len(devices)]
        body = {"ts": time.time(), "seq": seq * 16 + seed, "heart_rate": 60 + rnd.randint(0, 15),
                "spo2": 96 + rnd.randint(0, 3), "steps": rnd.randint(0, 10)}  # fmt: skip
        c.publish(vitals_topic(*dev), json.dumps(body), qos=1)
        if rate > 0 and (ahead := seq / rate - elapsed) > 0:
            time.sleep(ahead)
        elif rate <= 0 and seq % 200 == 0 and c.want_write():
            time.sleep(0)  # flat-out, but let paho's thread run
    time.sleep(1.0)
    c.loop_stop()
    c.disconnect()
    out.put({"seed": seed, "published": seq, "acked": acked[0], "seconds": elapsed})


class Presser:
    """Times SOS publish → first text request for that person at the endpoint."""

    def __init__(self, port: int, sms: SmsSink, persons: Iterator[tuple[str, str]]) -> None:
        self.sms = sms
        self.persons = persons
        self.c = mqtt.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="sos")
        self.c.connect("127.0.0.1", port)
        self.c.loop_start()

    def press(self, timeout: float = 5.0) -> float | None:
        person, dev = next(self.persons)
        before = len(self.sms.messages)
        t0 = time.time()
        self.c.publish(sos_topic(person, dev), json.dumps({"action": "start", "ts": t0}), qos=1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in self.sms.messages[before:]:
                got = USER_RE.search(m.body)
                if got and got.group(1) == person:
                    return (m.received_wall - t0) * 1000
            time.sleep(0.002)
        return None

    def close(self) -> None:
        self.c.loop_stop()
        self.c.disconnect()


class EventTap:
    """gateway/{id}/events, collected on a paho thread."""

    def __init__(self, port: int, topic: str) -> None:
        self.events: list[dict[str, Any]] = []
        self.c = mqtt.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="tap")
        self.connects = 0
        self.disconnects: list[str] = []
        self.c.on_message = lambda _c, _u, m: self.events.append(json.loads(m.payload))

        def on_connect(c: mqtt.Client, *_: Any) -> None:
            self.connects += 1
            c.subscribe(topic, qos=1)

        self.c.on_connect = on_connect
        self.c.on_disconnect = lambda _c, _u, _f, rc, *_: self.disconnects.append(str(rc))
        self.c.connect("127.0.0.1", port)
        self.c.loop_start()

    def close(self) -> None:
        self.c.loop_stop()
        self.c.disconnect()


def stats(api: int) -> dict[str, Any]:
    r = requests.get(f"http://127.0.0.1:{api}/v1/stats",
                     headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10)  # fmt: skip
    r.raise_for_status()
    return dict(r.json())


def run_publishers(port: int, devices: list[tuple[str, str]], rate: float, dur: float,
                   n: int, count: int = 0) -> list[Any]:  # fmt: skip
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_publish_loop, args=(port, devices, rate / n if rate else 0.0,
                                                     dur, i, out, count // n), daemon=True)
             for i in range(n)]  # fmt: skip
    for p in procs:
        p.start()
    return [procs, out]


def collect(handle: list[Any], timeout: float) -> list[dict[str, Any]]:
    procs, out = handle
    res = [out.get(timeout=timeout) for _ in procs]
    for p in procs:
        p.join(5)
    return res


BROKER_DROPPED = "$SYS/broker/publish/messages/dropped"


class BrokerDrops:
    """Messages the broker itself dropped (a session's queue full): silent to every client,
    so the gateway must shed before it happens. mosquitto publishes the count (retained, each
    second in the test config) only when it changes, with a 60 s expiry: a reader that
    subscribes late finds nothing, so this one subscribes at the start and keeps the latest."""

    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self._got: list[int] = []
        self.c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"sys-{os.getpid()}")

        def on_message(_c: mqtt.Client, _u: Any, m: mqtt.MQTTMessage) -> None:
            self._got.append(int(m.payload))

        self.c.on_message = on_message
        self.c.on_connect = lambda c_, *_: c_.subscribe(BROKER_DROPPED)  # not before CONNACK
        self.c.connect("127.0.0.1", port)
        self.c.loop_start()
        deadline = time.monotonic() + timeout
        while not self._got and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self._got, f"the broker published no {BROKER_DROPPED}"

    @property
    def dropped(self) -> int:
        return self._got[-1]

    def close(self) -> None:
        self.c.loop_stop()
        self.c.disconnect()
