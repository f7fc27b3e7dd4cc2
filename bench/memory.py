"""The gateway's memory with a large household, every person's isolation forest really fitted.

    .venv/bin/python bench/memory.py [--persons 1000 10000] [--history 300]

For each household size: `--history` clean readings per person are written into a fresh data
folder with the gateway's own Store, then `healthgw run` starts on it. Its housekeeping refits
every person's forest at start (the same path as the 6-hourly refit: history read from SQLite,
fit in the anomaly worker process, the compact forest kept in the gateway). We wait until
/v1/stats says every forest is held, then read VmRSS of the gateway process (and, separately,
of its children: the anomaly worker and the local model's worker, each its own process).
Then `--load-rate` readings/s (default 1,000) are published for `--load-s` seconds (QoS 1, round
robin over every person's watch, from a publisher thread in this process, outside the gateway)
and the gateway's RSS is sampled every 0.5 s: the peak under load. The model is off
(HEALTHGW_ASSISTANT_MODEL=off): the local model's worker is its own process anyway.
Targets: <= 200 MB with 1,000 persons (after start, fitted, and at peak under load), <= 1 GB
with 10,000. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _gw import children, gateway_process, rss_mb, wait_until

from tests.brokers import running_broker

TARGETS_MB = {1000: 200, 10000: 1024}


def seed_history(data_dir: Path, household: Any, per_person: int) -> int:
    """Write `per_person` normal readings a minute apart per person, ending an hour ago."""
    from gateway.base.db import Database
    from gateway.contract.values import Reading
    from gateway.store import Store

    data_dir.mkdir(parents=True, exist_ok=True)
    db = Database(data_dir / "healthgw.db")
    store = Store(db, spill_dir=data_dir / "spill", queue_size=1_000_000)
    store.start()
    rnd = random.Random(3)
    end = time.time() - 3600
    n = 0
    for p in household.persons:
        dev = p.devices[0].id
        for i in range(per_person):
            store.add_reading(
                Reading(
                    person=p.id,
                    device=dev,
                    ts=end - (per_person - i) * 60.0,
                    seq=i + 1,
                    heart_rate=float(round(rnd.gauss(72, 8))),
                    spo2=float(min(100, round(rnd.gauss(97, 1.2)))),
                    respiratory_rate=float(round(rnd.gauss(15, 2))),
                    temperature_c=round(rnd.gauss(36.7, 0.3), 1) if i % 4 == 0 else None,
                    steps=rnd.choice((0, 0, 0, rnd.randint(0, 120))),
                ),
                news2_total=0,
                news2_level="low",
            )
            n += 1
            if n % 200_000 == 0:
                store.flush(600)  # keep the writer's queue (and memory) small
    store.flush(600)
    store.stop()
    db.close()
    return n


def publish_load(port: int, devices: list[tuple[str, str]], rate: float, seconds: float) -> int:
    """Paced QoS 1 readings; returns how many the broker acknowledged."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    from gateway.contract.topics import vitals_topic

    c = mqtt.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="memload")
    c.max_inflight_messages_set(1000)
    acked = [0]
    c.on_publish = lambda *a: acked.__setitem__(0, acked[0] + 1)
    c.connect("127.0.0.1", port)
    c.loop_start()
    rnd = random.Random(7)
    t0, seq = time.perf_counter(), 0
    while (elapsed := time.perf_counter() - t0) < seconds:
        person, dev = devices[seq % len(devices)]
        seq += 1
        body = {"ts": time.time(), "seq": 10_000_000 + seq, "heart_rate": 60 + rnd.randint(0, 20),
                "spo2": 95 + rnd.randint(0, 4), "respiratory_rate": 14 + rnd.randint(0, 4)}  # fmt: skip
        c.publish(vitals_topic(person, dev), json.dumps(body), qos=1)
        if (ahead := seq / rate - elapsed) > 0:
            time.sleep(ahead)
    time.sleep(1.0)
    c.loop_stop()
    c.disconnect()
    return acked[0]


def one_size(
    persons: int, history: int, fit_timeout: float, load_rate: float, load_s: float
) -> dict[str, Any]:
    from gateway.household.model import load_household
    from simulators.fleet import make_household

    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        hh_path = tmpd / "household.yaml"
        make_household(persons, hh_path)
        hh = load_household(hh_path)
        t0 = time.perf_counter()
        rows = seed_history(tmpd / "data", hh, history)
        seed_s = time.perf_counter() - t0
        with (
            running_broker(tmpd / "broker") as broker,
            gateway_process(
                broker_url=broker.url,
                household=hh_path,
                data_dir=tmpd / "data",
                extra_env={"HEALTHGW_ASSISTANT_MODEL": "off"},
            ) as gw,
        ):
            t_start = time.perf_counter()
            time.sleep(2)  # start-up work (API, first housekeeping, model warm-up) under way
            after_start = rss_mb(gw.pid)
            samples = [after_start]
            child_peak = [0.0]
            stop = threading.Event()

            def sample() -> None:
                while not stop.is_set():
                    samples.append(rss_mb(gw.pid))
                    child_peak[0] = max(child_peak[0], sum(rss_mb(c) for c in children(gw.pid)))
                    time.sleep(0.5)

            threading.Thread(target=sample, daemon=True).start()

            def fitted() -> bool:
                return int(gw.stats()["monitor"].get("anomaly_models", 0)) >= persons

            ok = wait_until(fitted, fit_timeout, every=2)
            fit_s = time.perf_counter() - t_start
            time.sleep(3)  # the worker is released after the refit; let the heap settle
            rss_fitted = rss_mb(gw.pid)
            before_load = len(samples)
            devices = [(p.id, p.devices[0].id) for p in hh.persons]
            readings0 = int(gw.stats()["counters"].get("readings", 0))
            acked = publish_load(broker.port, devices, load_rate, load_s) if load_s > 0 else 0
            wait_until(
                lambda: int(gw.stats()["counters"].get("readings", 0)) - readings0 >= acked,
                60,
                every=0.5,
            )
            stop.set()
            load_samples = samples[before_load:] or [rss_fitted]
            processed = int(gw.stats()["counters"].get("readings", 0)) - readings0
            mon = gw.stats()["monitor"]
            target = TARGETS_MB.get(persons)
            # The target holds for every phase: after start, while fitting, fitted, under load.
            peak = max([after_start, *samples, rss_fitted])
            return {
                "persons": persons,
                "history_rows": rows,
                "seed_s": round(seed_s, 1),
                "forests_fitted": int(mon.get("anomaly_models", 0)),
                "all_fitted": ok,
                "forests_mb": round(int(mon.get("anomaly_model_kb", 0)) / 1024, 1),
                "fit_s": round(fit_s, 1),
                "rss_after_start_mb": round(after_start, 1),
                "rss_fitted_mb": round(rss_fitted, 1),
                "load_rate_per_s": load_rate,
                "load_s": load_s,
                "load_acked": acked,
                "load_processed": processed,
                "rss_load_peak_mb": round(max(load_samples), 1),
                "rss_peak_mb": round(peak, 1),
                "children_rss_peak_mb": round(child_peak[0], 1),
                "target_mb": target,
                "within_target": None if target is None else peak <= target,
            }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--persons", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--history", type=int, default=300, help="readings per person (>= 200)")
    ap.add_argument("--fit-timeout", type=float, default=3600)
    ap.add_argument("--load-rate", type=float, default=1000.0, help="readings/s after the fit")
    ap.add_argument("--load-s", type=float, default=30.0, help="0 = no load phase")
    args = ap.parse_args()
    runs = []
    for n in args.persons:
        try:
            runs.append(one_size(n, args.history, args.fit_timeout, args.load_rate, args.load_s))
        except Exception as exc:  # e.g. a household the gateway refuses: say so, go on
            runs.append({"persons": n, "error": f"{type(exc).__name__}: {exc}"[:500]})
        print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    print(json.dumps({"bench": "memory", "runs": runs}, indent=2))
    return 0 if all(r.get("all_fitted") for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
