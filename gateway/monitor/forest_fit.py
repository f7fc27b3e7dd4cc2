"""Fitting a person's isolation forest: scikit-learn's IsolationForest, imported only here
and only in the fitting worker process (it costs ~100 MB of RSS), turned into a CompactForest
(gateway/monitor/forest.py)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from gateway.monitor.forest import (
    F64,
    BoolArray,
    CompactForest,
    Row,
    _floor_f32,
    _tree_depths,
    average_path_length,
    prepare_training,
    rows_to_matrix,
)


def compact_from_sklearn(
    est: Any, features: Sequence[str], medians: npt.ArrayLike, *, n_train: int = 0
) -> CompactForest:
    """Flatten a fitted ``sklearn.ensemble.IsolationForest`` into a :class:`CompactForest`.

    ``features``/``medians`` describe the columns the estimator was fit on.
    """
    k = int(est.n_features_in_)
    if k != len(features):
        raise ValueError("features do not match the estimator")
    # scikit-learn only subsets columns per tree when max_features < n_features.
    subsample = int(est._max_features) != k
    lefts, rights, feats, thrs, values, bases = [], [], [], [], [], []
    base = 0
    max_depth = 1
    for tree_est, tree_features in zip(est.estimators_, est.estimators_features_, strict=True):
        tree = tree_est.tree_
        left = np.asarray(tree.children_left, dtype=np.intp)
        right = np.asarray(tree.children_right, dtype=np.intp)
        leaf = left == -1
        f = np.asarray(tree.feature, dtype=np.intp)
        if subsample:
            f = np.where(leaf, -1, np.asarray(tree_features, dtype=np.intp)[np.maximum(f, 0)])
        depth1 = _tree_depths(left, right)
        max_depth = max(max_depth, int(depth1.max()))
        # Same float operations as scikit-learn's per-tree term.
        values.append(depth1 + average_path_length(np.asarray(tree.n_node_samples)) - 1.0)
        lefts.append(np.where(leaf, -1, left + base))
        rights.append(np.where(leaf, -1, right + base))
        feats.append(np.where(leaf, -1, f))
        thrs.append(np.asarray(tree.threshold, dtype=np.float64))
        bases.append(base)
        base += left.shape[0]

    left_g, right_g = np.concatenate(lefts), np.concatenate(rights)
    feat_g, thr_g, value_g = np.concatenate(feats), np.concatenate(thrs), np.concatenate(values)
    split_g = np.flatnonzero(feat_g >= 0)
    split_g = split_g[np.argsort(feat_g[split_g], kind="stable")]
    leaf_g = np.flatnonzero(feat_g < 0)
    n_splits, n_nodes = split_g.shape[0], base
    new_id = np.empty(n_nodes, dtype=np.int64)
    new_id[split_g] = np.arange(n_splits)
    new_id[leaf_g] = n_splits + np.arange(leaf_g.shape[0])
    id_dtype = np.uint16 if n_nodes <= 2**16 else np.uint32
    leaf_values, codes = np.unique(value_g[leaf_g], return_inverse=True)
    if leaf_values.shape[0] > 2**16:
        raise ValueError("too many distinct leaf values")
    # Watch-rounded vitals give ~100-200 distinct values: one byte a leaf, ~6 MB less per
    # 1,000 persons.
    code_dtype = np.uint8 if leaf_values.shape[0] <= 2**8 else np.uint16
    max_samples = int(est.max_samples_)
    return CompactForest(
        features=tuple(features),
        medians=tuple(float(m) for m in np.asarray(medians, dtype=np.float64)),
        split_counts=np.bincount(feat_g[split_g], minlength=k).astype(np.intp),
        threshold=_floor_f32(thr_g[split_g]),
        left=new_id[left_g[split_g]].astype(id_dtype),
        right=new_id[right_g[split_g]].astype(id_dtype),
        leaf_code=codes.reshape(-1).astype(code_dtype),
        leaf_values=leaf_values.astype(np.float64),
        roots=new_id[np.asarray(bases, dtype=np.intp)].astype(np.int32),
        depth=max_depth - 1,
        denominator=float(len(est.estimators_) * average_path_length([max_samples])[0]),
        max_samples=max_samples,
        n_train=n_train,
        seed=int(est.random_state),
    )


def sklearn_forest(X: F64, *, seed: int, n_estimators: int = 100, max_samples: int = 256) -> Any:
    """The scikit-learn estimator :func:`fit_matrix` uses (exposed for parity tests)."""
    from sklearn.ensemble import IsolationForest  # lazy: never imported in the gateway

    return IsolationForest(
        n_estimators=n_estimators,
        max_samples=min(max_samples, X.shape[0]),
        contamination="auto",
        max_features=1.0,
        bootstrap=False,
        random_state=seed,
        n_jobs=1,
    ).fit(X)


def fit_matrix(
    X: F64,
    *,
    seed: int,
    n_estimators: int = 100,
    max_samples: int = 256,
    flags: Sequence[bool] | BoolArray | None = None,
) -> CompactForest:
    """Fit on a FEATURES-column matrix (NaN = missing). Runs in the worker process."""
    ts = prepare_training(X, flags=flags)
    est = sklearn_forest(ts.X, seed=seed, n_estimators=n_estimators, max_samples=max_samples)
    return compact_from_sklearn(est, ts.features, ts.medians, n_train=ts.X.shape[0])


def fit_model(
    rows: Sequence[Row],
    *,
    seed: int,
    n_estimators: int = 100,
    max_samples: int = 256,
    flags: Sequence[bool] | BoolArray | None = None,
) -> CompactForest:
    """Fit one person's forest on clean rows; rows with ``flags[i]`` true are dropped first.

    Imports scikit-learn, so the gateway calls it through :class:`AnomalyService`, which runs
    the equivalent :func:`fit_matrix` in a worker process.
    """
    return fit_matrix(
        rows_to_matrix(rows),
        seed=seed,
        n_estimators=n_estimators,
        max_samples=max_samples,
        flags=flags,
    )


def person_seed(person: str) -> int:
    """A stable seed per person, so refits on the same history give the same model."""
    return zlib.crc32(person.encode("utf-8")) & 0x7FFFFFFF
