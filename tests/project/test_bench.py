"""Smoke test of the benchmarks behind `healthgw bench`: tiny sizes, real broker and gateway.
Asserts the table's rows and that the numbers are positive, never a timing threshold."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


def _run_all() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run_all", BENCH / "run_all.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _bench(script: str, *args: str) -> dict:  # type: ignore[type-arg]
    out = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got: dict = json.loads(out.stdout[out.stdout.index("{") :])  # type: ignore[type-arg]
    return got


def test_ingest_and_memory_rows_are_measured() -> None:
    results = {
        "ingest": _bench(
            "ingest.py", "--messages", "600", "--persons", "20", "--rounds", "1", "--profile"
        ),
        "memory": _bench("memory.py", "--persons", "30", "--history", "210"),
    }
    ingest = results["ingest"]
    assert ingest["method"].startswith("backlog drain")
    for q in ("qos1", "qos0"):
        med = ingest[q]["median_msgs_per_s"]
        assert set(med) == {"paho", "aiomqtt", "gateway"}
        assert all(v > 0 for v in med.values()), med
        assert ingest[q]["ratio_gateway_to_paho"] > 0
        assert ingest[q]["gateway_rejected"] == 0
        cost = ingest[f"{q}_cost"]  # --profile: the per-reading split of a timed drain
        split = cost["split_us_per_reading"]
        assert set(split) >= {"receive", "validate", "score", "store", "ack", "rest"}
        assert split["score"] > 0 and split["validate"] > 0 and split["receive"] > 0
        assert abs(sum(split.values()) - cost["timed_total_us"]) < 0.01 * cost["timed_total_us"]
        assert cost["writer_cpu_us"] > 0 and set(cost["us_per_message"]) == set(med)
    (mem,) = results["memory"]["runs"]
    assert mem["forests_fitted"] == 30 and mem["all_fitted"]
    assert 0 < mem["rss_after_start_mb"] <= mem["rss_peak_mb"]

    run_all = _run_all()
    rows = run_all.table_rows(results)
    whats = [r["what"] for r in rows]
    assert sum(w.startswith("ingest QoS 1,") for w in whats) == 2
    assert sum(w.startswith("ingest QoS 0,") for w in whats) == 2
    assert any(w.startswith("RSS, 30 persons, 30 forests") for w in whats)
    assert sum(w.startswith("ingest QoS 1 per reading: score") for w in whats) == 1
    assert all(isinstance(r["value"], int | float) for r in rows)
    # (a stage's share can round to 0, or below after the clocks' calibrated cost is taken out)
    assert all(r["value"] > 0 for r in rows if "per reading:" not in r["what"])
    table = run_all.render(rows)
    assert table.splitlines()[0].split()[:2] == ["what", "value"]
    print(table)  # pytest -s shows the numbers


def test_cli_has_bench() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "healthgw.cli", "bench", "--help"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert out.returncode == 0 and "--quick" in out.stdout and "--json" in out.stdout
