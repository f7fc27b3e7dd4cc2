"""Time-series write path: the cost of a point, and sustained points/s into a real server.

    python bench/tsdb_write.py [--points 50000] [--repeat 5] [--no-server]

Prints one JSON object. Baselines are measured in the same run, interleaved, best-of-N:
- building one reading's line by hand (gateway/tsdb/schema.py) vs influxdb-client's `Point()`
  with the same tags and fields, turned into line protocol (what the write API does with a
  Point): the ratio is why the writer formats lines itself;
- add_reading on the event loop vs a bare queue.Queue.put_nowait of the same item;
- end to end: the writer thread into Debian's VictoriaMetrics (/api/v2/write, gzip), points/s,
  against the same batches posted with influxdb-client directly (no writer, no outbox), and
  the outbox path (server down: points/s appended to disk with fsync per batch).
"""

from __future__ import annotations

import argparse
import json
import platform
import queue
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.contract.values import Reading
from gateway.tsdb.lines import make_reading_line
from gateway.tsdb.outbox import Outbox
from gateway.tsdb.sink import InfluxSink, SinkError
from gateway.tsdb.writer import TimeSeriesWriter

T0 = 1_790_000_000.0


def readings(n: int) -> list[Reading]:
    return [
        Reading(
            f"p{i % 20}",
            f"d{i % 20}",
            T0 + i * 0.01,
            seq=i,
            heart_rate=60.0 + i % 40,
            spo2=95.0 + i % 4,
            systolic_bp=120.0,
            diastolic_bp=80.0,
            temperature_c=36.8,
            respiratory_rate=16.0,
            steps=i % 50,
            battery=80.0,
        )
        for i in range(n)
    ]


def by_hand(rs: list[Reading]) -> float:
    t = time.perf_counter()
    for r in rs:
        make_reading_line(
            r, news2_total=1, news2_level="low", anomaly=0.1, flagged=False, open_alerts=0
        )
    return time.perf_counter() - t


def with_point(rs: list[Reading]) -> float:
    from influxdb_client import Point, WritePrecision

    t = time.perf_counter()
    for r in rs:
        p = (
            Point("vitals")
            .tag("person", r.person)
            .tag("device", r.device)
            .field("heart_rate", r.heart_rate)
            .field("spo2", r.spo2)
            .field("systolic_bp", r.systolic_bp)
            .field("diastolic_bp", r.diastolic_bp)
            .field("temperature_c", r.temperature_c)
            .field("respiratory_rate", r.respiratory_rate)
            .field("steps", r.steps)
            .field("battery", r.battery)
            .field("news2_total", 1)
            .field("news2_level", "low")
            .field("news2_level_num", 0)
            .field("anomaly_score", 0.1)
            .field("flagged", 0)
            .field("open_alerts", 0)
            .time(round(r.ts * 1000) * 1_000_000 + (r.seq or 0), WritePrecision.NS)
        )
        p.to_line_protocol()
    return time.perf_counter() - t


class _Null:
    def write(self, lines: Any) -> None:
        pass

    def close(self) -> None:
        pass


def enqueue_cost(rs: list[Reading], tmp: Path) -> tuple[float, float]:
    w = TimeSeriesWriter(_Null(), Outbox(tmp / "ob-enq", 1 << 30), queue_size=len(rs) + 10)
    t = time.perf_counter()
    for r in rs:
        w.add_reading(
            r, news2_total=1, news2_level="low", anomaly=0.1, flagged=False, open_alerts=0
        )
    ours = time.perf_counter() - t
    q: queue.Queue[object] = queue.Queue(len(rs) + 10)
    t = time.perf_counter()
    for r in rs:
        q.put_nowait((r, 1, "low", 0.1, False, 0))
    return ours, time.perf_counter() - t


def writer_throughput(sink: Any, rs: list[Reading], tmp: Path, name: str) -> float:
    ob = Outbox(tmp / name, 1 << 30)
    w = TimeSeriesWriter(sink, ob, queue_size=len(rs) + 10, backoff=(60,))
    for r in rs:
        w.add_reading(
            r, news2_total=1, news2_level="low", anomaly=0.1, flagged=False, open_alerts=0
        )
    t = time.perf_counter()
    w.start()
    while w.queue_depth() > 0:
        time.sleep(0.005)
    w.stop(60)
    return len(rs) / (time.perf_counter() - t)


def direct_throughput(url: str, rs: list[Reading]) -> float:
    lines = [
        make_reading_line(
            r, news2_total=1, news2_level="low", anomaly=0.1, flagged=False, open_alerts=0
        )
        for r in rs
    ]
    sink = InfluxSink(url, "org", "health", "tok", 30)
    t = time.perf_counter()
    for i in range(0, len(lines), 5000):
        sink.write([ln for ln in lines[i : i + 5000] if ln])
    sink.close()
    return len(rs) / (time.perf_counter() - t)


class _Down:
    def write(self, lines: Any) -> None:
        raise SinkError("down")

    def close(self) -> None:
        pass


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-server", action="store_true")
    a = ap.parse_args()
    rs = readings(a.points)
    hand, point = [], []
    for _ in range(a.repeat):
        hand.append(by_hand(rs[:10_000]))
        point.append(with_point(rs[:10_000]))
    out: dict[str, Any] = {
        "machine": platform.machine(),
        "line_us": round(min(hand) / 10_000 * 1e6, 2),
        "point_us": round(min(point) / 10_000 * 1e6, 2),
        "point_over_line": round(min(point) / min(hand), 2),
    }
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        enq = [enqueue_cost(rs[:20_000], tmp / f"e{i}") for i in range(a.repeat)]
        ours = min(e[0] for e in enq) / 20_000
        base = min(e[1] for e in enq) / 20_000
        out["add_reading_us"] = round(ours * 1e6, 3)
        out["queue_put_us"] = round(base * 1e6, 3)
        out["add_reading_over_put"] = round(ours / base, 2)
        out["outbox_points_per_s"] = round(writer_throughput(_Down(), rs, tmp, "down"))
        if not a.no_server:
            from tests.victoria import available, running_victoria

            if available():
                with running_victoria(tmp / "vm") as vm:
                    direct = direct_throughput(vm.url, rs)
                    sink = InfluxSink(vm.url, "org", "health", "tok", 30)
                    ours_s = writer_throughput(sink, readings(a.points), tmp, "up")
                    out["server"] = "victoria-metrics"
                    out["writer_points_per_s"] = round(ours_s)
                    out["direct_client_points_per_s"] = round(direct)
                    out["writer_over_direct"] = round(ours_s / direct, 2)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
