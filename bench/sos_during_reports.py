"""Hard SOS latency while every person's daily report is being built.

    .venv/bin/python bench/sos_during_reports.py [--persons 40] [--days 8] [--presses 20]

At HEALTHGW_REPORT_TIME (20:00) every person's report job fires at once. A report reads up
to 8 days of one person's readings, computes them with pandas and draws matplotlib charts.
The gateway runs as on a hub (`healthgw run`, texts through the real twilio SDK to a local
sink); `--days` of readings a minute apart are seeded per person first. Two phases, same
run: SOS presses with the gateway idle, then presses while all the reports are asked for at
once (POST /v1/persons/{p}/reports/{day}, one thread per person, as the evening jobs do).
Each press is timed from its publish to the first text at the sink. Reports p50/p99 of both
and their ratio, how long the reports took, and how many presses fell inside that window.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _gw import healthgw_exe, hub_env
from memory import seed_history
from sos_latency import SID, TOKEN, pct, presses

from simulators.sms_sink import SmsSink
from tests.brokers import free_port, running_broker, wait_port


def summary(xs: list[float]) -> dict[str, float]:
    return {"p50": round(statistics.median(xs), 1), "p99": round(pct(xs, 0.99), 1),
            "max": round(max(xs), 1), "n": len(xs)}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--persons", type=int, default=40)
    ap.add_argument("--days", type=int, default=8)
    ap.add_argument("--presses", type=int, default=20)
    args = ap.parse_args()
    from gateway.household.model import load_household
    from simulators.fleet import make_household

    result: dict[str, Any] = {"bench": "sos_during_reports", "persons": args.persons,
                              "days": args.days}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp, SmsSink(account_sid=SID, auth_token=TOKEN) as sink:
        tmpd = Path(tmp)
        hh_path = tmpd / "household.yaml"
        make_household(args.persons, hh_path)
        hh = load_household(hh_path)
        rows = seed_history(tmpd / "data", hh, args.days * 1440)
        devices = [(p.id, p.devices[0].id) for p in hh.persons]
        token = secrets.token_urlsafe(32)
        with running_broker(tmpd / "broker") as broker:
            api_port = free_port()
            env = hub_env(
                broker_url=broker.url, household=hh_path, data_dir=tmpd / "data",
                sink_url=sink.url, api_port=api_port, api_token=token,
                HEALTHGW_API_RATE_LIMIT="1000/second", HEALTHGW_ASSISTANT_MODEL="off",
            )  # fmt: skip
            gw = subprocess.Popen([healthgw_exe(), "--log-level", "WARNING", "run"], env=env)
            try:
                wait_port(api_port, 60)
                time.sleep(5)  # start-up housekeeping (the anomaly refit) out of the way
                n = min(args.presses, len(devices) // 2)
                idle = presses(broker.port, sink, devices[:n])
                day = datetime.now(ZoneInfo(hh.timezone)).date().isoformat()
                done: list[float] = []
                t0 = time.perf_counter()

                def report(person: str) -> None:
                    r = requests.post(
                        f"http://127.0.0.1:{api_port}/v1/persons/{person}/reports/{day}",
                        headers={"Authorization": f"Bearer {token}"},
                        timeout=600,
                    )
                    r.raise_for_status()
                    done.append(time.perf_counter() - t0)

                workers = [threading.Thread(target=report, args=(p.id,)) for p in hh.persons]
                for w in workers:
                    w.start()
                time.sleep(1.0)
                t_press = time.perf_counter() - t0
                busy = presses(broker.port, sink, devices[n : 2 * n])
                t_press_end = time.perf_counter() - t0
                for w in workers:
                    w.join()
                reports_s = max(done) if done else float("nan")
                result |= {
                    "history_rows": rows,
                    "idle_ms": summary(idle),
                    "during_reports_ms": summary(busy),
                    "p99_ratio": round(pct(busy, 0.99) / pct(idle, 0.99), 2),
                    "reports_made": len(done),
                    "reports_s": round(reports_s, 1),
                    "presses_window_s": [round(t_press, 1), round(t_press_end, 1)],
                    "presses_inside_reports": t_press_end <= reports_s,
                }
            finally:
                gw.terminate()
                gw.wait(30)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
