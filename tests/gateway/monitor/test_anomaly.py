from __future__ import annotations

import asyncio
import math
import pickle
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.ensemble import IsolationForest

from gateway.monitor.anomaly import AnomalyService
from gateway.monitor.forest import FEATURES, CompactForest, Row, prepare_training, rows_to_matrix
from gateway.monitor.forest_fit import (
    compact_from_sklearn,
    fit_matrix,
    fit_model,
    person_seed,
    sklearn_forest,
)

ROOT = Path(__file__).resolve().parents[3]


def vitals(n: int, seed: int = 0) -> np.ndarray:
    """Watch-like vitals in FEATURES order: integers, temperature to 0.1, mostly still."""
    rng = np.random.default_rng(seed)
    return np.column_stack(
        [
            rng.normal(72, 8, n).round(),
            rng.normal(97, 1.2, n).round().clip(85, 100),
            rng.normal(15, 2, n).round(),
            rng.normal(36.7, 0.3, n).round(1),
            rng.normal(125, 10, n).round(),
            np.where(rng.random(n) < 0.7, 0.0, rng.integers(0, 120, n)),
        ]
    )


def as_rows(X: np.ndarray, features: Sequence[str] = FEATURES) -> list[dict[str, float | None]]:
    return [
        {f: (None if math.isnan(v) else float(v)) for f, v in zip(features, r, strict=True)}
        for r in X
    ]


def probe_points(X: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Training points, jittered points and far outliers."""
    rng = np.random.default_rng(seed)
    base = X[rng.integers(0, len(X), n)]
    scale = rng.choice([0.0, 0.5, 3.0, 40.0], size=base.shape)
    out: np.ndarray = base + rng.normal(size=base.shape) * scale
    return out


def threshold_points(est: Any, X: np.ndarray, per_tree: int, seed: int) -> np.ndarray:
    """Points whose feature sits exactly on (or one float32 step around) a split threshold.

    scikit-learn compares float32(x) <= float64 threshold; these are the cases where a wrong
    rounding of the threshold would send a point down the other branch.
    """
    rng = np.random.default_rng(seed)
    out = []
    for tree in est.estimators_:
        t = tree.tree_
        splits = np.flatnonzero(t.children_left != -1)
        for node in rng.choice(splits, size=min(per_tree, len(splits)), replace=False):
            thr = float(t.threshold[node])
            f32 = np.float32(thr)
            down = f32 if float(f32) <= thr else np.nextafter(f32, np.float32(-np.inf))
            up = np.nextafter(down, np.float32(np.inf))
            for value in (thr, float(f32), float(down), float(up)):
                row = X[rng.integers(0, len(X))].copy()
                row[t.feature[node]] = value
                out.append(row)
    return np.asarray(out)


def assert_parity(est: Any, model: CompactForest, P: np.ndarray, singles: int = 300) -> None:
    expected = est.score_samples(P)
    np.testing.assert_array_equal(model.score_batch(P), expected)
    one = np.array([model.score(dict(zip(model.features, p, strict=True))) for p in P[:singles]])
    np.testing.assert_array_equal(one, expected[:singles])


# --- exact parity with scikit-learn ------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_scores_equal_sklearn_bit_for_bit(seed: int) -> None:
    X = vitals(3000, seed)
    ts = prepare_training(X)
    est = sklearn_forest(ts.X, seed=seed)
    model = compact_from_sklearn(est, ts.features, ts.medians)
    assert model.n_trees == 100 and model.max_samples == 256
    P = probe_points(X, 4000, seed + 100)
    assert_parity(est, model, P)


def test_parity_on_continuous_data_and_exact_thresholds() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2000, 6)) * [10, 2, 3, 0.4, 12, 30] + [72, 97, 15, 36.7, 125, 20]
    ts = prepare_training(X)
    est = sklearn_forest(ts.X, seed=11)
    model = compact_from_sklearn(est, ts.features, ts.medians)
    P = threshold_points(est, X, per_tree=10, seed=5)
    assert len(P) == 4000
    # The probes really do straddle thresholds: some float64 thresholds are not float32 values.
    assert any(
        float(np.float32(t)) != t
        for tree in est.estimators_
        for t in tree.tree_.threshold[tree.tree_.children_left != -1]
    )
    assert_parity(est, model, P, singles=1000)


def test_parity_with_feature_subsets_and_bootstrap() -> None:
    # fit_model keeps max_features=1.0, but the flattening handles per-tree column subsets.
    X = vitals(1500, 4)
    est = IsolationForest(
        n_estimators=60, max_samples=128, max_features=0.5, bootstrap=True, random_state=2
    ).fit(X)
    model = compact_from_sklearn(est, FEATURES, np.median(X, axis=0))
    assert_parity(est, model, probe_points(X, 3000, 9))


@pytest.mark.parametrize("n", [1, 2, 3, 17])
def test_parity_on_tiny_training_sets(n: int) -> None:
    X = vitals(n, 8)
    ts = prepare_training(X)
    est = sklearn_forest(ts.X, seed=0, n_estimators=20)
    model = compact_from_sklearn(est, ts.features, ts.medians)
    P = probe_points(vitals(50, 9), 200, 1)
    assert_parity(est, model, P)
    if n == 1:
        # One training point: scikit-learn defines every score as -0.5.
        np.testing.assert_array_equal(model.score_batch(P), np.full(len(P), -0.5))


def test_fit_model_matches_sklearn_on_the_same_training_matrix() -> None:
    X = vitals(1000, 12)
    model = fit_model(as_rows(X), seed=42)
    ts = prepare_training(X)
    est = sklearn_forest(ts.X, seed=42)
    assert model.n_train == 1000 and model.seed == 42
    assert_parity(est, model, probe_points(X, 2000, 3))


# --- the score's meaning ----------------------------------------------------------------------


def test_anomaly_score_is_minus_score_samples_and_ranks_outliers_higher() -> None:
    X = vitals(2000, 1)
    model = fit_model(as_rows(X), seed=1)
    typical = {"heart_rate": 72.0, "spo2": 97.0, "respiratory_rate": 15.0, "temperature_c": 36.7,
               "systolic_bp": 125.0, "steps_per_min": 0.0}  # fmt: skip
    odd = {**typical, "heart_rate": 150.0, "spo2": 86.0, "respiratory_rate": 30.0}
    assert model.anomaly_score(typical) == -model.score(typical)
    assert 0.0 < model.anomaly_score(typical) < 0.5 < model.anomaly_score(odd) <= 1.0


# --- features and missing values --------------------------------------------------------------


def test_missing_features_are_imputed_with_training_medians() -> None:
    X = vitals(1500, 2)
    model = fit_model(as_rows(X), seed=3)
    med = dict(zip(FEATURES, np.median(X, axis=0), strict=True))
    assert model.medians == tuple(float(med[f]) for f in FEATURES)
    sparse = {"heart_rate": 118.0}  # a watch that only sent heart rate
    filled = {**{f: float(med[f]) for f in FEATURES}, "heart_rate": 118.0}
    assert model.score(sparse) == model.score(filled)
    # None, NaN, bools and strings are all "missing"; unknown keys are ignored.
    noisy: Row = {"heart_rate": 118.0, "spo2": None, "respiratory_rate": math.nan,
                  "temperature_c": True, "diastolic_bp": 80.0}  # fmt: skip
    assert model.score(noisy) == model.score(filled)
    assert model.score({**sparse, "systolic_bp": "high"}) == model.score(filled)  # type: ignore[dict-item]
    assert model.present(sparse) == 1 and model.present({}) == 0
    # Imputation is the same in the batch path.
    M = model.matrix([sparse, filled])
    assert np.isnan(M[0, 1:]).all()
    np.testing.assert_array_equal(model.score_batch(M), [model.score(filled)] * 2)


def test_features_never_seen_in_training_are_dropped_and_sparse_rows_train() -> None:
    X = vitals(1200, 5)
    X[:, FEATURES.index("temperature_c")] = np.nan  # no thermometer in this home
    X[::2, FEATURES.index("systolic_bp")] = np.nan  # BP only every other reading
    model = fit_model(as_rows(X), seed=0)
    assert model.features == (
        "heart_rate",
        "spo2",
        "respiratory_rate",
        "systolic_bp",
        "steps_per_min",
    )
    assert model.medians[3] == float(np.nanmedian(X[:, FEATURES.index("systolic_bp")]))
    # A temperature in a row is ignored rather than crashing the scorer.
    row = {"heart_rate": 70.0, "temperature_c": 39.0}
    assert model.score(row) == model.score({"heart_rate": 70.0})
    # Parity holds on the imputed training matrix too.
    ts = prepare_training(X)
    assert ts.features == model.features
    est = sklearn_forest(ts.X, seed=0)
    assert_parity(est, model, probe_points(ts.X, 1000, 2))


def test_rows_without_any_feature_do_not_train() -> None:
    X = vitals(500, 6)
    empty = np.full((300, len(FEATURES)), np.nan)
    with_empty = fit_model(as_rows(np.vstack([X, empty])), seed=9)
    without = fit_model(as_rows(X), seed=9)
    assert with_empty.n_train == without.n_train == 500
    assert_same_model(with_empty, without)
    with pytest.raises(ValueError, match="no usable training rows"):
        fit_model(as_rows(empty), seed=0)


# --- never learn from flagged readings --------------------------------------------------------


def assert_same_model(a: CompactForest, b: CompactForest) -> None:
    assert a.features == b.features and a.medians == b.medians
    for name in ("split_counts", "threshold", "left", "right", "leaf_code", "leaf_values", "roots"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.depth, a.denominator, a.max_samples, a.n_train) == (
        b.depth,
        b.denominator,
        b.max_samples,
        b.n_train,
    )


def test_flagged_rows_are_excluded_from_training() -> None:
    clean = vitals(800, 7)
    rng = np.random.default_rng(0)
    # Tachycardia with low SpO2, flagged by the monitor as abnormal.
    outliers = clean[rng.integers(0, 800, 200)].copy()
    outliers[:, 0] = rng.normal(170, 2, 200).round()
    outliers[:, 1] = rng.normal(84, 1, 200).round()
    X = np.vstack([clean, outliers])
    order = rng.permutation(len(X))
    X = X[order]
    flags = order >= 800  # True where the row is one of the outliers

    flagged = fit_model(as_rows(X), seed=5, flags=flags)
    on_clean = fit_model(as_rows(X[~flags]), seed=5)
    including = fit_model(as_rows(X), seed=5)

    assert flagged.n_train == 800 and including.n_train == 1000
    assert_same_model(flagged, on_clean)
    assert including.medians != flagged.medians
    # Having learnt the episodes, the polluted model finds them less unusual (0.52 vs 0.58).
    polluted = float(np.mean(-including.score_batch(outliers)))
    honest = float(np.mean(-flagged.score_batch(outliers)))
    assert polluted < honest - 0.03
    # A list of bools works the same as an array.
    assert_same_model(fit_model(as_rows(X), seed=5, flags=[bool(f) for f in flags]), flagged)
    with pytest.raises(ValueError, match="flags"):
        fit_model(as_rows(X), seed=5, flags=flags[:-1])


# --- the compact model itself -----------------------------------------------------------------


def test_model_is_compact_and_picklable() -> None:
    model = fit_model(as_rows(vitals(2000, 3)), seed=3)
    expected = (
        model.threshold.nbytes
        + model.left.nbytes
        + model.right.nbytes
        + model.leaf_code.nbytes
        + model.leaf_values.nbytes
        + model.roots.nbytes
        + model.split_counts.nbytes
        + 8 * len(model.medians)
    )
    assert model.nbytes == expected
    assert model.threshold.dtype == np.float32 and model.left.dtype == np.uint16
    # Splits and leaves of a binary tree: leaves = splits + 1 per tree.
    assert model.n_nodes - model.n_splits == model.n_splits + model.n_trees
    assert model.nbytes < 120_000  # ~1,000 persons must fit in the gateway's RSS budget
    clone = pickle.loads(pickle.dumps(model))
    assert_same_model(clone, model)
    row = {"heart_rate": 99.0, "spo2": 93.0}
    assert clone.score(row) == model.score(row)


def test_rows_to_matrix_shape() -> None:
    assert rows_to_matrix([]).shape == (0, len(FEATURES))
    M = rows_to_matrix([{"spo2": 95}, {"heart_rate": 60.5}])
    assert M.shape == (2, 6) and M[0, 1] == 95.0 and M[1, 0] == 60.5
    assert np.isnan(M[0, 0]) and np.isnan(M[1, 1])


# --- the service ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def service() -> Iterator[AnomalyService]:
    # One worker for the module: starting one (a fresh interpreter importing scikit-learn)
    # takes seconds.
    svc = AnomalyService(min_history=200)
    yield svc
    svc.close()


async def test_service_fits_in_the_worker_process(service: AnomalyService) -> None:
    X = vitals(600, 10)
    rows = as_rows(X)
    assert service.score("grandma", rows[0]) is None  # no model yet
    assert await service.refit("grandma", rows) is True
    model = service.model("grandma")
    assert model is not None
    # The worker's model is the in-process one: same data, same per-person seed.
    assert_same_model(model, fit_model(rows, seed=person_seed("grandma")))
    row = {"heart_rate": 130.0, "spo2": 90.0}
    assert service.score("grandma", row) == model.anomaly_score(row)
    assert service.score("grandma", {"diastolic_bp": 80.0}) is None  # no model feature present
    assert service.score("grandpa", row) is None
    assert "grandma" in service.persons and service.nbytes >= model.nbytes


async def test_min_history_and_flags_in_the_service(service: AnomalyService) -> None:
    rows = as_rows(vitals(260, 11))
    assert await service.refit("p1", rows[:199]) is False
    assert service.model("p1") is None
    # Flagged and empty rows do not count towards min_history.
    flags = [i < 61 for i in range(260)]
    assert await service.refit("p1", rows, flags=flags) is False
    assert await service.refit("p1", [*rows[:199], {}, {"battery": 50.0}]) is False
    assert await service.refit("p1", rows[:200]) is True
    first = service.model("p1")
    assert first is not None and first.n_train == 200
    # A later short history keeps the model that was fit on enough data.
    assert await service.refit("p1", rows[:10]) is False
    assert service.model("p1") is first
    flags = [i >= 230 for i in range(260)]
    assert await service.refit("p1", rows, flags=flags) is True
    model = service.model("p1")
    assert model is not None
    assert_same_model(model, fit_model(rows[:230], seed=person_seed("p1")))


async def test_refit_all_sync_and_async_providers_and_worker_release() -> None:
    svc = AnomalyService(min_history=200, n_estimators=30, max_samples=64)
    try:
        histories = {
            "a": as_rows(vitals(300, 1)),
            "b": as_rows(vitals(50, 2)),
            "c": as_rows(vitals(250, 3)),
        }

        def sync_provider() -> Iterator[tuple[str, Sequence[Row]]]:
            yield from histories.items()

        report = await svc.refit_all(sync_provider)
        assert (report.fitted, report.too_little_history, report.failed) == (2, 1, 0)
        assert set(svc.persons) == {"a", "c"}
        assert svc._pool is None  # the worker (and scikit-learn) is gone between refits
        a = svc.model("a")
        assert a is not None and a.n_trees == 30 and a.max_samples == 64

        async def async_provider() -> AsyncIterator[tuple[str, Sequence[Row]]]:
            for person, rows in histories.items():
                await asyncio.sleep(0)
                yield person, rows
            junk: list[Any] = [{"heart_rate": 70.0}] * 250 + [{"heart_rate": "x"}]
            yield "junk values", junk  # a non-number is just a missing value
            not_rows: list[Any] = [None] * 250
            yield "broken", not_rows  # not rows at all: fails alone

        report = await svc.refit_all(async_provider)
        assert (report.fitted, report.too_little_history, report.failed) == (3, 1, 1)
        assert svc.model("broken") is None
        assert svc.model("a") is not a  # swapped for the new fit
        svc.close()
        assert await svc.refit("a", histories["a"]) is False
        assert svc.score("a", {"heart_rate": 70.0}) is not None  # scoring still works
    finally:
        svc.close()


async def test_a_superseded_refit_does_not_overwrite_a_newer_model(service: AnomalyService) -> None:
    old_rows, new_rows = as_rows(vitals(400, 1)), as_rows(vitals(400, 2))
    older = asyncio.ensure_future(service.refit("p", old_rows))
    await asyncio.sleep(0)
    newer = asyncio.ensure_future(service.refit("p", new_rows))
    assert await older is False and await newer is True
    model = service.model("p")
    assert model is not None
    assert_same_model(model, fit_model(new_rows, seed=person_seed("p")))
    service.drop("p")
    assert service.model("p") is None


def test_scikit_learn_is_never_imported_into_the_gateway_process(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import asyncio, sys
        import numpy as np
        from gateway.monitor.anomaly import AnomalyService

        async def main():
            svc = AnomalyService(min_history=200, n_estimators=10)
            rng = np.random.default_rng(0)
            rows = [{"heart_rate": float(h), "spo2": float(s)}
                    for h, s in zip(rng.normal(70, 5, 300).round(), rng.normal(97, 1, 300).round())]
            assert await svc.refit("p", rows)
            assert 0 < svc.score("p", {"heart_rate": 71.0}) < 1
            svc.close()
            assert "sklearn" not in sys.modules, "scikit-learn leaked into the gateway"
            print("ok")

        if __name__ == "__main__":
            asyncio.run(main())
        """
    )
    path = tmp_path / "gw.py"
    path.write_text(script)
    out = subprocess.run(
        [sys.executable, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=100
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


def test_fit_matrix_is_the_worker_entry_point() -> None:
    X = vitals(300, 4)
    a = fit_matrix(X, seed=1)
    b = fit_model(as_rows(X), seed=1)
    assert_same_model(a, b)
