"""Ingest as a backlog drain: the whole gateway vs bare paho and bare aiomqtt, same broker, same run.

    .venv/bin/python bench/ingest.py [--messages 30000] [--persons 200] [--rounds 3] [--qos 1 0]

Each measurement:
1. The consumer connects once with a persistent session (clean_session=False), subscribes to
   `health/+/+/vitals` at QoS 1 and goes away.
2. A publisher (in this process, nothing else running) puts N valid readings on the broker at
   the QoS under test, round-robin over the household's devices; it finishes, and a QoS 1
   marker on another topic is acknowledged, so the broker holds the whole backlog.
3. The consumer reconnects; the broker sends it the backlog. Timed from the first message
   the consumer's code sees to the last: messages/s = (N - 1) / elapsed.

The publisher is outside the timed window, so the rate is the consumer's own. Consumers:
- bare paho: a paho `Client` (threaded loop) whose on_message only counts; QoS 1 messages are
  acknowledged the way paho does by default (automatically, on receipt);
- bare aiomqtt: `async for message in client.messages` that only counts;
- the gateway: `healthgw.assembly.hub.assemble()` in this process, as `healthgw run` builds it (minus
  the REST API): validation, dedupe, monitor, store, events, with whatever acknowledgement
  its MQTT link does. Its first and last are seen by polling its readings counter every
  1-5 ms (the counter moves after each reading is processed). The time until the store has
  committed all N is reported too. Its inbound queue bound is set above N so nothing is shed.

A QoS 0 backlog for an offline session is only kept with `queue_qos0_messages true`: the
benchmark runs its own mosquitto with the project's mosquitto/dev.conf plus that option and
`max_queued_messages` above N. Orders rotate between rounds; ratios use medians of the same
run. Prints JSON (targets: gateway/paho >= 0.5 at QoS 1, >= 0.6 at QoS 0).

`--profile` adds a fourth drain to each round, the gateway with a clock on each stage a
reading goes through (receive, validate, score, store, ack, ...; bench/_ingest_profile.py):
`qos1_cost` has the per-reading split in us, the loop thread's and the store writer's CPU
per reading, and the same run's bare clients in us per message (`--profile-detail`: the
monitor's steps clocked too, at more distortion). `--cprofile` adds one drain
under cProfile after the rounds (its top functions; cProfile slows Python code unevenly).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gw  # noqa: F401  (puts the repo root on sys.path)
import _ingest_profile as ingest_profile
import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from gateway.contract.topics import vitals_topic
from tests.brokers import MOSQUITTO, ROOT, free_port, stop_process, wait_port

TOPIC = "health/+/+/vitals"
TARGETS = {1: 0.5, 0: 0.6}
Devices = list[tuple[str, str]]


def start_broker(workdir: Path, max_queued: int) -> tuple[Any, int]:
    """mosquitto with the project's dev config, queueing QoS 0 for offline sessions."""
    import subprocess

    port = free_port()
    data = workdir / "data"
    data.mkdir(parents=True, exist_ok=True)
    base = [
        ln
        for ln in (ROOT / "mosquitto" / "dev.conf").read_text().splitlines()
        if not ln.startswith("max_queued_messages")
    ]
    conf = workdir / "mosquitto.conf"
    conf.write_text(
        "\n".join(base)
        + f"\nmax_queued_messages {max_queued}\nqueue_qos0_messages true\n"
        + f"listener {port} 127.0.0.1\npersistence_location {data}/\n"
    )
    proc = subprocess.Popen(
        [MOSQUITTO, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_port(port)
    return proc, port


def _paho(client_id: str, *, clean: bool) -> mqtt.Client:
    return mqtt.Client(
        callback_api_version=CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=clean
    )


def prime(port: int, client_id: str) -> None:
    """Create the consumer's persistent session and subscription, then leave."""
    c = _paho(client_id, clean=False)
    done = threading.Event()
    c.on_subscribe = lambda *_a: done.set()
    c.connect("127.0.0.1", port)
    c.loop_start()
    c.subscribe(TOPIC, qos=1)
    if not done.wait(10):
        raise RuntimeError("no SUBACK")
    c.disconnect()
    c.loop_stop()


def publish_backlog(port: int, devices: Devices, n: int, qos: int) -> float:
    """Put n readings on the broker; returns seconds taken (not part of any measurement)."""
    t0 = time.perf_counter()
    c = _paho("bench-pub", clean=True)
    c.max_inflight_messages_set(1000)
    c.max_queued_messages_set(0)
    c.connect("127.0.0.1", port)
    c.loop_start()
    rnd = random.Random(1)
    seqs = dict.fromkeys(devices, 0)
    infos = []
    for i in range(n):
        dev = devices[i % len(devices)]
        seqs[dev] += 1
        body = json.dumps(
            {
                "ts": time.time(),
                "seq": seqs[dev],
                "heart_rate": 60 + rnd.randint(0, 15),
                "spo2": 96 + rnd.randint(0, 3),
                "respiratory_rate": 14 + rnd.randint(0, 3),
                "steps": rnd.randint(0, 10),
            }
        )
        info = c.publish(vitals_topic(*dev), body, qos=qos)
        if qos:
            infos.append(info)
        elif i % 1000 == 999:
            info.wait_for_publish(60)  # keep paho's outgoing buffer small
    for info in infos:
        info.wait_for_publish(120)
    # Same connection, in order: once this is acknowledged the broker has queued them all.
    c.publish("bench/marker", b"1", qos=1).wait_for_publish(60)
    c.disconnect()
    c.loop_stop()
    return time.perf_counter() - t0


def drain_paho(port: int, n: int, client_id: str) -> float:
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

    c = _paho(client_id, clean=False)
    c.on_message = on_message
    c.connect("127.0.0.1", port)
    c.loop_start()
    if not done.wait(300):
        raise RuntimeError(f"paho drained only {got} of {n}")
    c.disconnect()
    c.loop_stop()
    return (n - 1) / (last - first)


async def _drain_aiomqtt(port: int, n: int, client_id: str) -> float:
    import aiomqtt

    got = 0
    first = last = 0.0
    async with aiomqtt.Client(
        "127.0.0.1", port, identifier=client_id, clean_session=False
    ) as client:
        async with asyncio.timeout(300):
            async for _m in client.messages:
                got += 1
                if got == 1:
                    first = time.perf_counter()
                if got >= n:
                    last = time.perf_counter()
                    break
    return (n - 1) / (last - first)


def drain_aiomqtt(port: int, n: int, client_id: str) -> float:
    return asyncio.run(_drain_aiomqtt(port, n, client_id))


async def _gateway_start(settings: Any, watch: Any = None) -> Any:
    from healthgw.assembly.hub import assemble, freeze_startup_heap, tune_interpreter

    tune_interpreter()  # as `healthgw run` does (healthgw/assembly/hub.py run_gateway)
    gw = assemble(settings).gateway
    watcher = None if watch is None else asyncio.create_task(watch(gw))
    await gw.start()  # the link may be draining before start() returns: the watcher is on
    freeze_startup_heap()
    await asyncio.wait_for(gw.link.connected.wait(), 30)
    return gw, watcher


async def _gateway_prime(settings: Any) -> None:
    gw, _ = await _gateway_start(settings)
    await asyncio.sleep(0.5)  # subscribed (the link subscribes right after connecting)
    await gw.stop()


async def _gateway_drain(
    settings: Any, n: int, mode: str = "plain"
) -> tuple[float, float, dict[str, Any], dict[str, Any]]:
    # Polls the readings counter every 1-5 ms (it moves after each reading is handled), then
    # the store's written count (it has no event to wait on). bench/_ingest_profile.py.
    return await ingest_profile.drain(_gateway_start, settings, n, mode=mode)


def gateway_settings(tmpd: Path, port: int, household: Path, n: int, tag: str) -> Any:
    from gateway.base.settings import Settings

    return Settings(
        mqtt_url=f"mqtt://127.0.0.1:{port}",
        data_dir=tmpd / f"data-{tag}",
        household=household,
        api_token="bench-admin-" + "x7Qp2Lm9Vb4Nz8Rt" * 2,
        gateway_id=f"bench-{tag}",
        queue_size=n + 1000,
        assistant_model="off",
    )


def _shed(stats: dict[str, Any]) -> int:
    mqtt_stats = stats.get("mqtt") or {}
    return sum(int(v) for k, v in mqtt_stats.items() if "shed" in k and isinstance(v, int))


def measure(
    kind: str, port: int, devices: Devices, n: int, qos: int, tag: str, tmpd: Path, hh: Path
) -> dict[str, Any]:
    cid = f"bench-{kind}-{tag}"
    if kind.startswith("gateway"):  # gateway, gateway_timed (--profile), gateway_cprofile
        tag = f"{tag}{kind[8:]}"
        settings = gateway_settings(tmpd, port, hh, n, tag)
        asyncio.run(_gateway_prime(settings))
        pub_s = publish_backlog(port, devices, n, qos)
        switch = sys.getswitchinterval()
        mode = {"gateway": "plain", "gateway_timed": "stages", "gateway_detail": "detail"}.get(
            kind, "cprofile"
        )
        try:
            rate, stored, stats, cost = asyncio.run(_gateway_drain(settings, n, mode))
        finally:  # the baselines run in this process too: as Python ships
            sys.setswitchinterval(switch)
            gc.unfreeze()
        return {
            "rate": rate,
            "stored_rate": stored,
            "publish_s": pub_s,
            "rejected": stats["counters"].get("rejected", 0),
            "duplicates": stats.get("duplicates", 0),
            "shed": _shed(stats),
            # Acknowledged before the store had them (it fell 2 s behind): must stay 0.
            "acks_forced": int(((stats.get("mqtt") or {}).get("acks") or {}).get("forced", 0)),
            "cost": cost,
        }
    prime(port, cid)
    pub_s = publish_backlog(port, devices, n, qos)
    rate = drain_paho(port, n, cid) if kind == "paho" else drain_aiomqtt(port, n, cid)
    return {"rate": rate, "publish_s": pub_s}


def run(
    messages: int,
    persons: int,
    rounds: int,
    qos_levels: list[int],
    *,
    profile: bool = False,
    cprofile: bool = False,
    detail: bool = False,
) -> dict[str, Any]:
    from gateway.household.model import load_household
    from simulators.fleet import make_household

    # --profile: a fourth drain each round, the gateway with stage clocks (_ingest_profile).
    timed_kind = "gateway_detail" if detail else "gateway_timed"
    kinds = ["paho", "aiomqtt", "gateway", *([timed_kind] if profile or detail else [])]
    rates: dict[int, dict[str, list[float]]] = {q: {k: [] for k in kinds} for q in qos_levels}
    costs: dict[int, list[dict[str, Any]]] = {q: [] for q in qos_levels}
    stored: dict[int, list[float]] = {q: [] for q in qos_levels}
    extra: dict[int, dict[str, int]] = {
        q: {"rejected": 0, "shed": 0, "acks_forced": 0} for q in qos_levels
    }
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        hh = tmpd / "household.yaml"
        make_household(persons, hh)
        devices = [(p.id, p.devices[0].id) for p in load_household(hh).persons]
        proc, port = start_broker(tmpd / "broker", max(100_000, 2 * messages))
        try:
            for r in range(rounds):
                for qos in qos_levels:
                    k = r % len(kinds)
                    order = kinds[k:] + kinds[:k]  # rotate: noise hits all sides
                    for kind in order:
                        got = measure(kind, port, devices, messages, qos, f"{r}q{qos}", tmpd, hh)
                        rates[qos][kind].append(got["rate"])
                        if "cost" in got:
                            costs[qos].append(got["cost"])
                        if kind == "gateway":
                            stored[qos].append(got["stored_rate"])
                            extra[qos]["rejected"] += got["rejected"]
                            extra[qos]["shed"] += got["shed"]
                            extra[qos]["acks_forced"] += got["acks_forced"]
            for qos in qos_levels if cprofile else []:  # once, after the rounds
                kind = "gateway_cprofile"
                costs[qos].append(
                    measure(kind, port, devices, messages, qos, f"q{qos}", tmpd, hh)["cost"]
                )
        finally:
            stop_process(proc)
    out: dict[str, Any] = {
        "bench": "ingest",
        "method": "backlog drain, publisher outside the timed window",
        "messages_per_drain": messages,
        "persons": persons,
        "rounds": rounds,
    }
    for qos in qos_levels:
        timed = rates[qos].pop(timed_kind, [])
        med = {k: statistics.median(v) for k, v in rates[qos].items()}
        if profile or cprofile or detail:
            out[f"qos{qos}_cost"] = {
                "gateway_timed_msgs_per_s": [round(x) for x in timed],
                **ingest_profile.summarize(costs[qos], med),
            }
        out[f"qos{qos}"] = {
            **{f"{k}_msgs_per_s": [round(x) for x in v] for k, v in rates[qos].items()},
            "gateway_stored_msgs_per_s": [round(x) for x in stored[qos]],
            "median_msgs_per_s": {k: round(v) for k, v in med.items()},
            "ratio_gateway_to_paho": round(med["gateway"] / med["paho"], 3),
            "ratio_gateway_to_aiomqtt": round(med["gateway"] / med["aiomqtt"], 3),
            "target_ratio_to_paho": TARGETS[qos],
            "gateway_rejected": extra[qos]["rejected"],
            "gateway_shed": extra[qos]["shed"],
            "gateway_acks_forced": extra[qos]["acks_forced"],
        }
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=30_000)
    ap.add_argument("--persons", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--qos", type=int, nargs="+", default=[1, 0], choices=[0, 1])
    ap.add_argument("--profile", action="store_true", help="add a drain with stage clocks")
    ap.add_argument("--profile-detail", action="store_true", help="--profile, monitor's steps too")
    ap.add_argument("--cprofile", action="store_true", help="add a drain under cProfile")
    args = ap.parse_args()
    got = run(args.messages, args.persons, args.rounds, args.qos,
              profile=args.profile, cprofile=args.cprofile,
              detail=args.profile_detail)  # fmt: skip
    print(json.dumps(got, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
