"""FHIR export of a month: one person's watch every 5 s for 30 days (518,400 readings), plus
a blood-pressure cuff and a thermometer twice a day and a few texts, exported to a file.

    python bench/fhir_export.py [--days 30] [--interval 5] [--downsample none|minute|hour]

The store is filled first (bulk insert with the store's schema); the export then runs in a
child process, so the insert's memory is not counted: added RSS is the child's peak (VmHWM)
minus its RSS just before the export (imports and household loaded). Targets (issue 28):
under 60 s and under 100 MB added. Prints one JSON object."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.base.db import Database

T0 = 1_777_593_600.0  # 2026-05-01T00:00:00Z
HOUSEHOLD: dict[str, Any] = {
    "timezone": "UTC",
    "persons": [{
        "id": "ann", "name": "Ann Smith", "birth_date": "1948-04-09", "sex": "female",
        "location": {"latitude": 51.5072, "longitude": -0.1276},
        "devices": [{"id": "ann-watch", "kind": "watch", "interval_s": 5},
                    {"id": "ann-cuff", "kind": "bp_cuff"},
                    {"id": "ann-therm", "kind": "thermometer"}],
        "emergency_contacts": [{"name": "Ben Smith", "phone": "+447700900201"}],
    }],
}  # fmt: skip


def _vm(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def fill(folder: Path, days: int, interval: float) -> int:
    from gateway.notify.text_rows import SCHEMA as TEXTS
    from gateway.store.schema import READING_COLS, SCHEMA

    db = Database(folder / "healthgw.db")
    db.ensure_schema(SCHEMA)
    idx = {c: i for i, c in enumerate(READING_COLS)}
    n = int(days * 86400 / interval)
    rows: list[list[Any]] = []

    def put(**kw: Any) -> None:
        row: list[Any] = [None] * len(READING_COLS)
        for k, v in {"person": "ann", "seq": len(rows), "received_at": kw["ts"], **kw}.items():
            row[idx[k]] = v
        rows.append(row)

    for i in range(n):
        ts = T0 + i * interval
        put(device="ann-watch", ts=ts, heart_rate=60.0 + (i * 7) % 45, spo2=93.0 + i % 6,
            respiratory_rate=12.0 + i % 10, temperature_c=32.5 + (i % 20) / 10)  # fmt: skip
    for d in range(days):
        for h in (8, 20):
            ts = T0 + d * 86400 + h * 3600 + 0.5
            put(device="ann-cuff", ts=ts, systolic_bp=118.0 + d % 30, diastolic_bp=76.0,
                heart_rate=64.0)  # fmt: skip
            put(device="ann-therm", ts=ts + 60, temperature_c=36.6 + (d % 15) / 10)
    marks = ", ".join("?" * len(READING_COLS))
    sql = f"INSERT INTO readings ({', '.join(READING_COLS)}) VALUES ({marks})"
    with db.tx() as c:
        for start in range(0, len(rows), 50_000):
            c.executemany(sql, rows[start : start + 50_000])
    safety = Database(folder / "safety.db")
    safety.ensure_schema(TEXTS)
    with safety.tx() as c:
        for d in range(0, days, 3):
            at = T0 + d * 86400 + 43_200
            c.execute(
                "INSERT INTO messages (id, key, person, purpose, to_phone, body, marker, state,"
                " next_attempt_at, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (f"m{d}", f"m{d}", "ann", "alert:contact", "+447700900201",
                 "Ann's heart rate is high.", f"ref m{d}", "sent", at, at, at + 2),
            )  # fmt: skip
    return len(rows)


def child(folder: Path, days: int, downsample: str) -> dict[str, Any]:
    from gateway.export import ExportSource, make_request, stream, write_stream
    from gateway.household.model import Household

    household = Household.model_validate(HOUSEHOLD)
    src = ExportSource(
        household, Database(folder / "healthgw.db"), Database(folder / "safety.db"), lambda r: None
    )
    since = time.strftime("%Y-%m-%d", time.gmtime(T0))
    until = time.strftime("%Y-%m-%d", time.gmtime(T0 + (days - 1) * 86400))
    rss0 = _vm("VmRSS")
    t = time.perf_counter()
    req = make_request(src, "ann", since, until, downsample=downsample)
    entries = 0

    def counted() -> Any:
        nonlocal entries
        for chunk in stream(src, req, now=time.time()):
            entries += chunk.count(b'"fullUrl"')
            yield chunk

    out = folder / "ann.fhir.json"
    size = write_stream(out, counted())
    elapsed = time.perf_counter() - t
    return {
        "export_s": round(elapsed, 2),
        "rss_before_mb": round(rss0 / 2**20, 1),
        "peak_rss_mb": round(_vm("VmHWM") / 2**20, 1),
        "added_rss_mb": round((_vm("VmHWM") - rss0) / 2**20, 1),
        "resources": entries,
        "file_mb": round(size / 2**20, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--interval", type=float, default=5.0)
    ap.add_argument("--downsample", choices=("none", "minute", "hour"), default="none")
    ap.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child is not None:
        print(json.dumps(child(a.child, a.days, a.downsample)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t = time.perf_counter()
        readings = fill(folder, a.days, a.interval)
        fill_s = time.perf_counter() - t
        out = subprocess.run(
            [sys.executable, __file__, "--child", tmp, "--days", str(a.days),
             "--downsample", a.downsample],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        got = json.loads(out.stdout)
    got |= {
        "readings": readings,
        "readings_per_s": round(readings / got["export_s"]),
        "fill_s": round(fill_s, 1),
        "downsample": a.downsample,
        "cpus": os.cpu_count(),
        "targets": {"export_s": "< 60", "added_rss_mb": "< 100"},
    }
    print(json.dumps(got, indent=1))


if __name__ == "__main__":
    main()
