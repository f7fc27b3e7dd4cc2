"""Per-person isolation forests: an anomaly score as *evidence*, never a decision.

Each person gets an isolation forest (Liu, Ting & Zhou 2008) fit on that person's own clean
history and refit on a schedule. The score says "this combination of vitals is unusual *for
this person*"; the monitor combines it with the clinical ranges and decides (the river way:
keep the score separate from the decision).

Why not call scikit-learn per message: a one-row ``score_samples`` costs milliseconds and
importing scikit-learn costs ~100 MB of RSS. So:

* fitting runs in a worker process (``ProcessPoolExecutor``, one worker, spawn context);
  scikit-learn is imported only there, lazily inside :func:`fit_matrix`;
* the fitted trees come back as a :class:`CompactForest`: flat numpy arrays for all trees,
  scored by a vectorised numpy traversal that reproduces ``IsolationForest.score_samples``
  bit for bit (tests/monitor/test_anomaly.py checks parity on many points, including points
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

import asyncio
import concurrent.futures
import functools
import logging
import math
import multiprocessing
import zlib
from collections.abc import AsyncIterable, Callable, Iterable, Mapping, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

FEATURES: tuple[str, ...] = (
    "heart_rate",
    "spo2",
    "respiratory_rate",
    "temperature_c",
    "systolic_bp",
    "steps_per_min",
)

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
    leaf_code: npt.NDArray[np.uint16]  # per leaf: index into leaf_values
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
    max_samples = int(est.max_samples_)
    return CompactForest(
        features=tuple(features),
        medians=tuple(float(m) for m in np.asarray(medians, dtype=np.float64)),
        split_counts=np.bincount(feat_g[split_g], minlength=k).astype(np.intp),
        threshold=_floor_f32(thr_g[split_g]),
        left=new_id[left_g[split_g]].astype(id_dtype),
        right=new_id[right_g[split_g]].astype(id_dtype),
        leaf_code=codes.reshape(-1).astype(np.uint16),
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


@dataclass(frozen=True, slots=True)
class RefitReport:
    """What a scheduled refit did (counts only: no person ids in logs)."""

    fitted: int
    too_little_history: int
    failed: int


class AnomalyService:
    """One :class:`CompactForest` per person; fitting happens in one worker process.

    Use from one event loop. Models are replaced by a single dict assignment, so scoring
    always sees either the old or the new model; a refit that finishes after a newer refit
    (or a ``drop``) for the same person is discarded.

    Memory: a model is ~60-70 KB with the defaults (100 trees, 256 samples) on watch-rounded
    vitals; see ``CompactForest.nbytes``. The worker (which imports scikit-learn) lives from the
    first refit until ``refit_all`` finishes, ``release_worker()`` or ``close()``.
    """

    def __init__(
        self,
        *,
        min_history: int = 200,
        n_estimators: int = 100,
        max_samples: int = 256,
        mp_context: str = "spawn",
    ) -> None:
        self.min_history = min_history
        self.n_estimators = n_estimators
        self.max_samples = max_samples
        self._mp_context = mp_context
        self._models: dict[str, CompactForest] = {}
        self._generation: dict[str, int] = {}
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._closed = False

    # --- scoring (hot path) --------------------------------------------------------------
    def score(self, person: str, row: Row) -> float | None:
        """The paper's anomaly score s(x, n) in (0, 1]: higher = more unusual for this person
        (``CompactForest.anomaly_score``, i.e. minus scikit-learn's ``score_samples``).

        None when the person has no model yet, or when the row carries none of the model's
        features (an all-imputed row would score as perfectly typical: that is no evidence).
        """
        model = self._models.get(person)
        if model is None or model.present(row) == 0:
            return None
        return model.anomaly_score(row)

    def model(self, person: str) -> CompactForest | None:
        return self._models.get(person)

    def drop(self, person: str) -> None:
        """Forget a person's model (and discard any refit still running for them)."""
        self._generation[person] = self._generation.get(person, 0) + 1
        self._models.pop(person, None)

    @property
    def persons(self) -> tuple[str, ...]:
        return tuple(self._models)

    @property
    def nbytes(self) -> int:
        return sum(m.nbytes for m in self._models.values())

    # --- fitting -------------------------------------------------------------------------
    def _executor(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._pool is None:
            # spawn: the worker starts from a fresh interpreter, so nothing of the gateway's
            # state (sockets, threads, the event loop) is inherited by a fork.
            self._pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context(self._mp_context)
            )
        return self._pool

    async def refit(
        self,
        person: str,
        rows: Sequence[Row],
        *,
        flags: Sequence[bool] | BoolArray | None = None,
    ) -> bool:
        """Refit one person's model in the worker; True when a new model was installed.

        ``rows`` should already be clean; rows with ``flags[i]`` true are dropped anyway. With
        fewer than ``min_history`` usable rows nothing is fit and an existing model is kept.
        """
        return await self._refit(person, rows, flags) == "fitted"

    async def _refit(
        self, person: str, rows: Sequence[Row], flags: Sequence[bool] | BoolArray | None
    ) -> str:
        if self._closed:
            return "closed"
        X = rows_to_matrix(rows)
        keep = usable_rows(X, flags)
        if int(keep.sum()) < self.min_history:
            return "short"
        X = X[keep]  # only usable rows cross the process boundary
        gen = self._generation.get(person, 0) + 1
        self._generation[person] = gen
        job = functools.partial(
            fit_matrix,
            X,
            seed=person_seed(person),
            n_estimators=self.n_estimators,
            max_samples=self.max_samples,
        )
        loop = asyncio.get_running_loop()
        try:
            model = await loop.run_in_executor(self._executor(), job)
        except BrokenProcessPool:
            # The worker died (e.g. killed for memory): a fresh one starts on the next refit.
            log.error("anomaly worker died during a refit; it will be restarted")
            self._pool = None
            return "failed"
        except (asyncio.CancelledError, concurrent.futures.CancelledError):
            if self._closed or self._pool is None:
                return "closed"  # close()/release_worker() cancelled the queued job
            raise
        if self._closed or self._generation.get(person) != gen:
            return "superseded"
        self._models[person] = model
        return "fitted"

    async def refit_all(self, history_provider: HistoryProvider) -> RefitReport:
        """Scheduled refit. ``history_provider()`` returns an iterable or async iterable of
        (person, clean rows) pairs. One person's failure does not stop the others. The
        worker is shut down at the end, so scikit-learn's memory is held only while
        refitting."""
        counts = {"fitted": 0, "short": 0, "failed": 0}

        async def one(person: str, rows: Sequence[Row]) -> None:
            try:
                status = await self._refit(person, rows, None)
            except Exception as exc:  # one bad history must not stop everyone's refit
                log.error("anomaly refit failed (%s)", type(exc).__name__)
                status = "failed"
            if status in counts:
                counts[status] += 1

        try:
            items = history_provider()
            if isinstance(items, AsyncIterable):
                async for person, rows in items:
                    await one(person, rows)
            else:
                for person, rows in items:
                    await one(person, rows)
        finally:
            self.release_worker()
        report = RefitReport(
            fitted=counts["fitted"], too_little_history=counts["short"], failed=counts["failed"]
        )
        log.info(
            "anomaly refit: %d fitted, %d short of history, %d failed",
            report.fitted,
            report.too_little_history,
            report.failed,
        )
        return report

    def release_worker(self) -> None:
        """Stop the worker process; it is started again by the next refit."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Stop fitting for good; scoring with the current models keeps working."""
        self._closed = True
        self.release_worker()
