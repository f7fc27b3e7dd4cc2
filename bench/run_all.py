"""Run every benchmark and print one JSON document (`make bench`). Each benchmark reports its
own baseline, measured in the same run, because this machine is noisy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = [
    ["ingest.py", "--messages", "20000", "--persons", "200", "--rounds", "2"],
    ["sos_latency.py", "--persons", "1000", "--presses", "40"],
    ["anomaly_scoring.py"],
    ["store_write.py"],
    ["tsdb_write.py"],
]


def main() -> int:
    results = {}
    for cmd in BENCHES:
        out = subprocess.run(
            [sys.executable, str(HERE / cmd[0]), *cmd[1:]], capture_output=True, text=True
        )
        if out.returncode != 0:
            results[cmd[0]] = {"error": out.stderr[-2000:]}
            continue
        results[cmd[0]] = json.loads(out.stdout[out.stdout.index("{") :])
    print(json.dumps(results, indent=2))
    return 0 if all("error" not in r for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
