"""Per-row anomaly scoring: scikit-learn one-row score_samples vs CompactForest.score.

    python bench/anomaly_scoring.py [--rows N] [--seed S]

Both are measured in the same run on the same model and the same rows; prints JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.monitor.forest import FEATURES, prepare_training
from gateway.monitor.forest_fit import compact_from_sklearn, sklearn_forest


def watch_vitals(n: int, seed: int) -> np.ndarray:
    """Watch-rounded vitals in FEATURES order; BP only on every 4th reading (sparse)."""
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [
            rng.normal(72, 8, n).round(),
            rng.normal(97, 1.2, n).round().clip(85, 100),
            rng.normal(15, 2, n).round(),
            rng.normal(36.7, 0.3, n).round(1),
            rng.normal(125, 10, n).round(),
            np.where(rng.random(n) < 0.7, 0.0, rng.integers(0, 120, n)),
        ]
    )
    X[np.arange(n) % 4 != 0, FEATURES.index("systolic_bp")] = np.nan
    return X


def per_row_us(fn: Callable[[int], Any], n: int) -> dict[str, float]:
    fn(0)  # warm up
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t0)
    times.sort()
    return {
        "median_us": round(statistics.median(times) * 1e6, 1),
        "p95_us": round(times[int(0.95 * (len(times) - 1))] * 1e6, 1),
        "mean_us": round(statistics.fmean(times) * 1e6, 1),
        "n": n,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2000, help="rows scored one at a time")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    train = watch_vitals(5000, args.seed)
    ts = prepare_training(train)
    t0 = time.perf_counter()
    est = sklearn_forest(ts.X, seed=args.seed)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    model = compact_from_sklearn(est, ts.features, ts.medians, n_train=ts.X.shape[0])
    compact_s = time.perf_counter() - t0

    probe = watch_vitals(args.rows, args.seed + 1)
    rng = np.random.default_rng(args.seed + 2)
    probe[:, 0] += rng.choice([0.0, 40.0], size=len(probe))  # some tachycardic rows
    imputed = np.where(np.isnan(probe), np.asarray(model.medians), probe)
    rows = [
        {f: (None if np.isnan(v) else float(v)) for f, v in zip(FEATURES, r, strict=True)}
        for r in probe
    ]
    one_row = [imputed[i : i + 1] for i in range(len(imputed))]

    n_sklearn = min(args.rows, 300)  # ~10 ms each: keep the run short
    sk = per_row_us(lambda i: est.score_samples(one_row[i]), n_sklearn)
    cf = per_row_us(lambda i: model.score(rows[i]), args.rows)

    expected = est.score_samples(imputed)
    batch = model.score_batch(probe)
    singles = np.array([model.score(r) for r in rows])
    print(
        json.dumps(
            {
                "python": platform.python_version(),
                "machine": platform.machine(),
                "model": {
                    "n_trees": model.n_trees,
                    "max_samples": model.max_samples,
                    "n_train": model.n_train,
                    "features": list(model.features),
                    "nodes_per_tree": round(model.n_nodes / model.n_trees, 1),
                    "depth": model.depth,
                    "nbytes": model.nbytes,
                    "mb_per_1000_persons": round(model.nbytes * 1000 / 2**20, 1),
                },
                "fit_s": round(fit_s, 3),
                "flatten_s": round(compact_s, 3),
                "sklearn_score_samples_one_row": sk,
                "compact_forest_score": cf,
                "speedup_median": round(sk["median_us"] / cf["median_us"], 1),
                "parity": {
                    "rows": len(rows),
                    "batch_max_abs_diff": float(np.max(np.abs(batch - expected))),
                    "single_max_abs_diff": float(np.max(np.abs(singles - expected))),
                    "bit_identical": bool(
                        np.array_equal(batch, expected) and np.array_equal(singles, expected)
                    ),
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
