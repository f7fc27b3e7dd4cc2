"""The isolation forest as flat numpy arrays, scored without scikit-learn.

Why not call scikit-learn per message: a one-row ``score_samples`` costs milliseconds and
importing scikit-learn costs ~100 MB of RSS. So:

* fitting runs in a worker process (``ProcessPoolExecutor``, one worker, spawn context);
  scikit-learn is imported only there, lazily inside :func:`fit_matrix`;
* the fitted trees come back as a :class:`CompactForest`: flat numpy arrays for all trees,
  scored by a vectorised numpy traversal that reproduces ``IsolationForest.score_samples``
  bit for bit (tests/gateway/monitor/test_anomaly.py checks parity on many points, including points
  exactly on split thresholds).

Features and missing values
---------------------------
Rows are mappings keyed by :data:`FEATURES`. Readings are sparse (not every device sends every
vital), so a missing feature (absent, ``None``, NaN, infinite or not a number) is imputed with that
person's training median, stored in the model. A feature never seen in training is dropped from
the model. Training rows with none of the features are dropped (they would all impute to the
median point and teach the forest nothing). Caveat: a feature that is rare in training (say
temperature once a day) is mostly the imputed median there, so the forest treats any other value
of it as somewhat unusual; that is still evidence only.

Exactness notes (how the numpy scorer matches scikit-learn)
-----------------------------------------------------------
* scikit-learn casts X to float32 before traversal and compares ``x32 <= threshold64``. For a
  float32 ``x`` that equals ``x <= floor32(threshold)``, where ``floor32`` is the largest float32
  not above the threshold, so thresholds are stored as float32 rounded *down*: exact, and half
  the bytes.
* per tree, the value of a leaf is ``depth + c(n_node_samples) - 1.0`` (depth counted from 1 at
  the root, as ``Tree.compute_node_depths``), computed with the same float operations as
  scikit-learn; the per-tree values are summed sequentially in tree order (``np.cumsum``, not
  the pairwise ``np.sum``), then ``2 ** -(sum / (n_trees * c(max_samples)))``.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from gateway.contract.vitals import FOREST_VITALS

# The vitals table's forest columns, then the walking rate the monitor derives from steps.
FEATURES: tuple[str, ...] = (*FOREST_VITALS, "steps_per_min")

Row: TypeAlias = Mapping[str, float | None]
F64: TypeAlias = npt.NDArray[np.float64]
F32: TypeAlias = npt.NDArray[np.float32]
BoolArray: TypeAlias = npt.NDArray[np.bool_]
HistoryItems: TypeAlias = (
    Iterable[tuple[str, Sequence[Row]]] | AsyncIterable[tuple[str, Sequence[Row]]]
)
HistoryProvider: TypeAlias = Callable[[], HistoryItems]

_BATCH_CHUNK = 4096  # rows per chunk in score_batch: bounds the (rows x trees) temporaries


def _value(v: object) -> float:
    """A feature value as float; NaN means missing (None, NaN, +-inf, bools, non-numbers)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return math.nan
    f = float(v)
    return f if math.isfinite(f) else math.nan


def rows_to_matrix(rows: Iterable[Row], features: Sequence[str] = FEATURES) -> F64:
    """Rows -> float64 matrix with one column per feature, NaN where missing."""
    data = [[_value(r.get(f)) for f in features] for r in rows]
    if not data:
        return np.empty((0, len(features)), dtype=np.float64)
    return np.asarray(data, dtype=np.float64).reshape(len(data), len(features))


def _flags_mask(flags: Sequence[bool] | BoolArray | None, n: int) -> BoolArray:
    if flags is None:
        return np.zeros(n, dtype=np.bool_)
    mask = np.asarray(flags, dtype=np.bool_).reshape(-1)
    if mask.shape[0] != n:
        raise ValueError(f"flags has {mask.shape[0]} entries for {n} rows")
    return mask


def usable_rows(X: F64, flags: Sequence[bool] | BoolArray | None = None) -> BoolArray:
    """Rows a model may learn from: not flagged, and carrying at least one feature."""
    keep = ~_flags_mask(flags, X.shape[0])
    return np.asarray(keep & ~np.all(np.isnan(X), axis=1), dtype=np.bool_)


@dataclass(frozen=True, slots=True, eq=False)
class TrainingSet:
    """The exact matrix handed to scikit-learn, and how rows map onto it."""

    X: F64  # imputed, columns = features
    features: tuple[str, ...]
    medians: F64


def prepare_training(
    X: F64,
    *,
    flags: Sequence[bool] | BoolArray | None = None,
    features: Sequence[str] = FEATURES,
) -> TrainingSet:
    """Drop flagged and empty rows, drop features never seen, impute the rest with medians."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != len(features):
        raise ValueError("X must have one column per feature")
    X = X[usable_rows(X, flags)]
    if X.shape[0] == 0:
        raise ValueError("no usable training rows")
    seen = ~np.all(np.isnan(X), axis=0)
    X = X[:, seen]
    medians = np.nanmedian(X, axis=0).astype(np.float64)
    X = np.where(np.isnan(X), medians, X)
    kept = tuple(f for f, s in zip(features, seen, strict=True) if s)
    return TrainingSet(X=X, features=kept, medians=medians)


def average_path_length(n: npt.ArrayLike) -> F64:
    """c(n): average path length of an unsuccessful BST search among n points.

    Same float operations as scikit-learn's private ``_average_path_length`` so the scores
    agree to the last bit.
    """
    arr = np.asarray(n)
    shape = arr.shape
    arr = arr.reshape((1, -1))
    out = np.zeros(arr.shape)
    mask_1 = arr <= 1
    mask_2 = arr == 2
    rest = ~np.logical_or(mask_1, mask_2)
    out[mask_1] = 0.0
    out[mask_2] = 1.0
    out[rest] = (
        2.0 * (np.log(arr[rest] - 1.0) + np.euler_gamma) - 2.0 * (arr[rest] - 1.0) / arr[rest]
    )
    return out.reshape(shape)


def _floor_f32(t: F64) -> F32:
    """Largest float32 <= t, elementwise (x32 <= t  <=>  x32 <= floor32(t) for float32 x)."""
    t32 = t.astype(np.float32)
    above = t32.astype(np.float64) > t
    t32[above] = np.nextafter(t32[above], np.float32(-np.inf))
    return t32


@dataclass(frozen=True, slots=True, eq=False)
class CompactForest:
    """All trees of one isolation forest in flat arrays, scored without scikit-learn.

    Layout (global node ids over all trees): split nodes first, grouped by feature
    (``split_counts[j]`` splits on ``features[j]``), then leaves. A split stores its float32
    threshold and its two children; a leaf stores only a code into ``leaf_values``. Scoring a
    row compares it against every split at once (one repeat + one compare + one where),
    giving each split's next node, then walks all trees together ``depth`` times with one
    gather per level. Leaves point at themselves, so trees of different depth need no
    special casing.
    """

    features: tuple[str, ...]  # the model's columns, a subset of FEATURES in that order
    medians: tuple[float, ...]  # imputation value per model feature
    split_counts: npt.NDArray[np.intp]  # splits per feature, in `features` order
    threshold: F32  # per split: floor32 of scikit-learn's float64 threshold
    left: npt.NDArray[np.unsignedinteger[Any]]  # per split: global id of the <= child
    right: npt.NDArray[np.unsignedinteger[Any]]  # per split: global id of the > child
    leaf_code: npt.NDArray[np.unsignedinteger[Any]]  # per leaf: index into leaf_values
    leaf_values: F64  # distinct (depth + c(n_node_samples) - 1.0) values
    roots: npt.NDArray[np.int32]  # global id of each tree's root
    depth: int  # levels to walk (deepest leaf, root = 0)
    denominator: float  # n_trees * c(max_samples)
    max_samples: int
    n_train: int
    seed: int

    def __post_init__(self) -> None:
        # Shared by every score() call; nobody may change a model in place.
        for arr in (
            self.split_counts,
            self.threshold,
            self.left,
            self.right,
            self.leaf_code,
            self.leaf_values,
            self.roots,
        ):
            arr.flags.writeable = False

    @property
    def n_trees(self) -> int:
        return int(self.roots.shape[0])

    @property
    def n_splits(self) -> int:
        return int(self.threshold.shape[0])

    @property
    def n_nodes(self) -> int:
        return self.n_splits + int(self.leaf_code.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes held by the model's arrays (what 1,000 persons multiply)."""
        return int(
            8 * len(self.medians)
            + self.split_counts.nbytes
            + self.threshold.nbytes
            + self.left.nbytes
            + self.right.nbytes
            + self.leaf_code.nbytes
            + self.leaf_values.nbytes
            + self.roots.nbytes
        )

    # --- input ---------------------------------------------------------------------------
    def present(self, row: Row) -> int:
        """How many of the model's features this row carries (0: the score is no evidence)."""
        return sum(1 for f in self.features if not math.isnan(_value(row.get(f))))

    def matrix(self, rows: Iterable[Row]) -> F64:
        """Rows -> matrix in this model's column order (NaN where missing)."""
        return rows_to_matrix(rows, self.features)

    # --- scoring -------------------------------------------------------------------------
    def _finish(self, depths: F64) -> F64:
        if self.denominator == 0.0:
            # One training sample: scikit-learn defines the ratio as 1.
            return np.full(depths.shape, 0.5)
        return np.asarray(np.power(2.0, -np.divide(depths, self.denominator)), dtype=np.float64)

    def score(self, row: Row) -> float:
        """scikit-learn's ``score_samples`` for one row: lower = more anomalous (-1..-0)."""
        vals = [_value(row.get(f)) for f in self.features]
        # Impute in float64, then cast to float32 as scikit-learn does.
        x = np.array(
            [m if math.isnan(v) else v for v, m in zip(vals, self.medians, strict=True)],
            dtype=np.float32,
        )
        n_splits = self.n_splits
        go_right = np.repeat(x, self.split_counts) > self.threshold
        child = np.concatenate(
            (np.where(go_right, self.right, self.left), np.arange(n_splits, self.n_nodes))
        )
        node: npt.NDArray[np.intp] = self.roots.astype(np.intp)
        for _ in range(self.depth):
            node = child[node]
        values = self.leaf_values[self.leaf_code[node - n_splits]]
        # Sequential sum in tree order, like scikit-learn's `depths += ...` per tree.
        total = np.cumsum(values)[-1:]
        return -float(self._finish(total)[0])

    def anomaly_score(self, row: Row) -> float:
        """The paper's s(x, n) in [0, 1]: higher = more anomalous (= -score)."""
        return -self.score(row)

    def score_batch(self, X: npt.ArrayLike) -> F64:
        """``score_samples`` for a matrix whose columns are ``self.features`` (NaN = missing)."""
        arr = np.asarray(X, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != len(self.features):
            raise ValueError("X must have one column per model feature")
        out = np.empty(arr.shape[0], dtype=np.float64)
        for start in range(0, arr.shape[0], _BATCH_CHUNK):
            out[start : start + _BATCH_CHUNK] = self._score_chunk(arr[start : start + _BATCH_CHUNK])
        return out

    def _score_chunk(self, X: F64) -> F64:
        n = X.shape[0]
        x32 = np.where(np.isnan(X), np.asarray(self.medians, dtype=np.float64), X).astype(
            np.float32
        )
        n_splits = self.n_splits
        split_feature = np.repeat(np.arange(len(self.features)), self.split_counts)
        rows = np.arange(n, dtype=np.intp)[:, None]
        node = np.broadcast_to(self.roots.astype(np.intp), (n, self.n_trees)).copy()
        for _ in range(self.depth):
            is_split = node < n_splits
            s = np.where(is_split, node, 0)
            go_right = x32[rows, split_feature[s]] > self.threshold[s]
            nxt = np.where(go_right, self.right[s], self.left[s]).astype(np.intp)
            node = np.where(is_split, nxt, node)
        values = self.leaf_values[self.leaf_code[node - n_splits]]
        depths = np.ascontiguousarray(np.cumsum(values, axis=1)[:, -1])
        return -self._finish(depths)


def _tree_depths(left: npt.NDArray[np.intp], right: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
    """Node depth counted from 1 at the root (as ``Tree.compute_node_depths``)."""
    depth = np.zeros(left.shape[0], dtype=np.int64)
    depth[0] = 1
    stack = [0]
    while stack:
        i = stack.pop()
        if left[i] != -1:
            depth[left[i]] = depth[right[i]] = depth[i] + 1
            stack.extend((int(left[i]), int(right[i])))
    return depth
