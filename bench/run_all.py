"""Run the benchmarks and print a table (or JSON): `healthgw bench [--quick] [--json]`,
`make bench`. Each benchmark measures its own baseline in the same run (this machine is
shared and noisy: only ratios measured side by side mean anything). No target here fails
the run: the table says whether each was met."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

# name -> (script, full args, quick args or None when skipped by --quick)
BENCHES: dict[str, tuple[str, list[str], list[str] | None]] = {
    # --profile: a fourth drain a round with a clock on each stage (the per-reading split).
    "ingest": (
        "ingest.py",
        ["--messages", "30000", "--persons", "200", "--rounds", "3", "--profile"],
        ["--messages", "4000", "--persons", "100", "--rounds", "1", "--profile"],
    ),
    "sos_1000": (
        "sos_latency.py",
        ["--persons", "1000", "--presses", "40", "--rate", "1000"],
        ["--persons", "200", "--presses", "8", "--rate", "1000", "--warmup", "3"],
    ),
    "sos_5000": (
        "sos_latency.py",
        ["--persons", "1000", "--presses", "40", "--rate", "5000"],
        None,
    ),
    # --rate is set at run time: 1.5x the gateway's QoS 1 drain rate measured by "ingest".
    # 100 presses a phase: of 40, the p99 is the single worst press.
    "sos_overload": ("sos_latency.py", ["--persons", "1000", "--presses", "100"], None),
    "memory": (
        "memory.py",
        ["--persons", "1000", "10000"],
        ["--persons", "150", "--history", "220"],
    ),
    "anomaly_scoring": ("anomaly_scoring.py", [], None),
    "replay_day": ("replay_day.py", ["--rounds", "3"], ["--rounds", "1"]),
    # Monitor.process per reading: ranges looked up per profile and state vs the old paths.
    "monitor_step": ("monitor_step.py", ["--rounds", "5"], ["--rounds", "1"]),
    "store_write": ("store_write.py", [], None),
    "tsdb_write": ("tsdb_write.py", [], None),
    # A month of 5-second readings (518,400) exported as a FHIR Bundle to a file.
    "fhir_export": ("fhir_export.py", [], ["--days", "2"]),
}


def run_one(script: str, args: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, str(HERE / script), *args], capture_output=True, text=True, check=False
    )
    if "{" not in out.stdout:
        return {"error": (out.stderr or out.stdout)[-2000:], "returncode": out.returncode}
    got: dict[str, Any] = json.loads(out.stdout[out.stdout.index("{") :])
    if out.returncode != 0:
        got["returncode"] = out.returncode
    return got


def _met(value: float, target: float, *, at_most: bool) -> str:
    return "yes" if (value <= target if at_most else value >= target) else "NO"


def table_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per measured quantity: what, value, baseline (same run), ratio, target, met."""
    rows: list[dict[str, Any]] = []
    ing = results.get("ingest", {})
    for q in (1, 0):
        r = ing.get(f"qos{q}")
        if not r:
            continue
        med = r["median_msgs_per_s"]
        for base in ("paho", "aiomqtt"):
            ratio = r[f"ratio_gateway_to_{base}"]
            target = r["target_ratio_to_paho"] if base == "paho" else None
            rows.append(
                {
                    "what": f"ingest QoS {q}, gateway vs bare {base} (msgs/s, drain)",
                    "value": med["gateway"],
                    "baseline": med[base],
                    "ratio": ratio,
                    "target": f">= {target}" if target else "",
                    "met": _met(ratio, target, at_most=False) if target else "",
                }
            )
    rows += cost_rows(ing)
    for key in ("sos_1000", "sos_5000", "sos_overload"):
        r = results.get(key, {})
        if "loaded_ms" not in r:
            continue
        p99, idle = r["loaded_ms"]["p99"], r["idle_ms"]["p99"]
        over = key == "sos_overload"
        ratio = r["p99_ratio_loaded_to_idle"]
        rows.append(
            {
                "what": f"SOS -> first SMS p99 at {r['load_readings_per_s']} readings/s"
                + (" (150% of capacity)" if over else "")
                + " (ms; baseline: idle p99)",
                "value": p99,
                "baseline": idle,
                "ratio": ratio,
                "target": "<= 2x idle" if over else "<= 100 ms",
                "met": _met(ratio, 2, at_most=True) if over else _met(p99, 100, at_most=True),
            }
        )
    rd = results.get("replay_day", {})
    if "replay_day_s" in rd:
        worst = rd["replay_day_s"]["max"]
        rows.append(
            {
                "what": "healthgw replay, one person-day (s, worst; baseline: monitor alone)",
                "value": worst,
                "baseline": rd["monitor_only_day_s"]["median"],
                "ratio": rd["ratio_replay_to_monitor"],
                "target": "< 1 s",
                "met": _met(worst, 0.999, at_most=True),
            }
        )
    ms = results.get("monitor_step", {})
    for old, what in (("lru", "ranges_for's lru_cache"), ("uncached", "ranges rebuilt")):
        if "us_per_reading" not in ms:
            break
        rows.append(
            {
                "what": f"Monitor.process per reading, ranges looked up (us, median; baseline: "
                f"{what} per reading)",
                "value": ms["us_per_reading"]["book"]["median"],
                "baseline": ms["us_per_reading"][old]["median"],
                "ratio": ms[f"ratio_book_to_{old}"]["median"],
                "target": "",
                "met": "",
            }
        )
    for run in results.get("memory", {}).get("runs", []):
        if "error" in run:
            rows.append({"what": f"RSS, {run['persons']} persons", "value": "error",
                         "baseline": "", "ratio": "", "target": "", "met": "NO"})  # fmt: skip
            continue
        target = run.get("target_mb")
        rows.append(
            {
                "what": f"RSS, {run['persons']} persons, {run['forests_fitted']} forests (MB)",
                "value": run["rss_peak_mb"],
                "baseline": run["rss_after_start_mb"],
                "ratio": "",
                "target": f"<= {target} MB" if target else "",
                "met": _met(run["rss_peak_mb"], target, at_most=True) if target else "",
            }
        )
    fx = results.get("fhir_export", {})
    if "export_s" in fx:
        month = fx["readings"] >= 500_000  # the targets are for a month; --quick runs 2 days
        for what, key, target in (
            ("FHIR export of {n} readings to a file (s)", "export_s", 60),
            ("FHIR export of {n} readings, added RSS (MB; baseline: RSS before)", "added_rss_mb",
             100),
        ):  # fmt: skip
            rows.append(
                {
                    "what": what.format(n=f"{fx['readings']:,}"),
                    "value": fx[key],
                    "baseline": fx["rss_before_mb"] if key == "added_rss_mb" else "",
                    "ratio": "",
                    "target": f"< {target}" if month else "",
                    "met": _met(fx[key], target, at_most=True) if month else "",
                }
            )
    return rows


def cost_rows(ing: dict[str, Any]) -> list[dict[str, Any]]:
    """The drain's per-reading split (bench/_ingest_profile.py): wall us per reading on the
    event loop thread by stage, against the timed drain's total less the clocks' own cost
    (ratio: the stage's share); the store writer thread's CPU; the untimed gateway against
    bare paho and bare aiomqtt, in us per message."""
    rows: list[dict[str, Any]] = []
    for q in (1, 0):
        c = ing.get(f"qos{q}_cost")
        if not c or "split_us_per_reading" not in c:
            continue
        total = c["timed_net_us"]  # the timed drain less the clocks' own cost
        for stage, share in c["split_share"].items():
            us = c["split_us_per_reading"][stage]
            if us == 0 and stage == "tsdb":
                continue  # no time-series database in the bench
            rows.append({"what": f"ingest QoS {q} per reading: {stage} (wall us; baseline: total "
                                 "less the clocks)",
                         "value": us, "baseline": total, "ratio": share,
                         "target": "", "met": ""})  # fmt: skip
        per = c["us_per_message"]
        rows.append({"what": f"ingest QoS {q} store writer thread CPU per reading (us; "
                             "baseline: the loop thread's CPU)",
                     "value": c["writer_cpu_us"], "baseline": c["loop_cpu_us"], "ratio": "",
                     "target": "", "met": ""})  # fmt: skip
        for base in ("paho", "aiomqtt"):
            rows.append({"what": f"ingest QoS {q} us per message, gateway vs bare {base}",
                         "value": per["gateway"], "baseline": per[base],
                         "ratio": round(per["gateway"] / per[base], 2), "target": "",
                         "met": ""})  # fmt: skip
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    cols = ["what", "value", "baseline", "ratio", "target", "met"]
    cells = [cols] + [[str(r[c]) for c in cols] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cols))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes, under ~2 minutes")
    ap.add_argument("--json", action="store_true", help="print JSON instead of the table")
    ap.add_argument("--only", nargs="+", choices=sorted(BENCHES), help="run only these")
    args = ap.parse_args(argv)
    results: dict[str, Any] = {}
    for name, (script, full, quick) in BENCHES.items():
        if args.only and name not in args.only:
            continue
        bench_args = quick if args.quick else full
        if bench_args is None:
            continue
        if name == "sos_overload":
            capacity = results.get("ingest", {}).get("qos1", {}).get("median_msgs_per_s", {})
            if "gateway" not in capacity:
                continue
            bench_args = [*bench_args, "--rate", str(round(1.5 * capacity["gateway"]))]
        print(f"running {name} ...", file=sys.stderr, flush=True)
        results[name] = run_one(script, bench_args)
    rows = table_rows(results)
    if args.json:
        print(json.dumps({"quick": args.quick, "results": results, "table": rows}, indent=2))
    else:
        print(render(rows))
        for name, r in results.items():
            if "error" in r:
                print(f"\n{name} failed:\n{r['error']}")
    return 0 if all("error" not in r for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
