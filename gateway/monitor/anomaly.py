"""Per-person isolation forests: an anomaly score as *evidence*, never a decision.

Each person gets an isolation forest (Liu, Ting & Zhou 2008) fit on that person's own clean
history and refit on a schedule. The score says "this combination of vitals is unusual *for
this person*"; the monitor combines it with the clinical ranges and decides (the river way:
keep the score separate from the decision).

The service (this module) keeps one model per person, scores readings, and refits in one
worker process; the forest itself is gateway/monitor/forest.py, fitting forest_fit.py.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import functools
import logging
import multiprocessing
from collections.abc import AsyncIterable, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from gateway.monitor.forest import (
    BoolArray,
    CompactForest,
    HistoryProvider,
    Row,
    rows_to_matrix,
    usable_rows,
)
from gateway.monitor.forest_fit import fit_matrix, person_seed

log = logging.getLogger("gateway.monitor.anomaly")


@dataclass(frozen=True, slots=True)
class RefitReport:
    """What a scheduled refit did (counts only: no person ids in logs)."""

    fitted: int
    too_little_history: int
    failed: int


def trim_heap() -> None:
    """Hand back to the OS the heap pages a refit freed (histories, pickled forests): glibc
    keeps them otherwise, ~2-3 MB of RSS at 1,000 persons (bench/memory.py). Nothing where
    there is no malloc_trim (musl, macOS)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


class AnomalyService:
    """One :class:`CompactForest` per person; fitting happens in one worker process.

    Use from one event loop. Models are replaced by a single dict assignment, so scoring
    always sees either the old or the new model; a refit that finishes after a newer refit
    (or a ``drop``) for the same person is discarded.

    Memory: a model is ~50-60 KB with the defaults (100 trees, 256 samples) on watch-rounded
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
        await asyncio.to_thread(trim_heap)  # off the loop: it may take a few ms
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
