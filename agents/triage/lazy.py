"""The triage classifier, loaded (or trained, the first time) on a worker thread so the
gateway starts at once; conversations await it, nothing else does.

scikit-learn and the model cost the gateway ~110 MB of RSS, so they are imported only when
a conversation first needs them. At start, `prepare()` only makes sure the cached model
exists, training it in a child process when it does not (python -m agents.triage.lazy)."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agents.triage.classifier import Triage, TriageResult

log = logging.getLogger(__name__)


def _load(cache_dir: Path | None) -> Triage:
    from agents.triage.classifier import Triage

    return Triage.load(cache_dir)


class LazyTriage:
    def __init__(self, cache_dir: Path | None) -> None:
        self._cache_dir = cache_dir
        self._triage: Triage | None = None
        self._loading: asyncio.Task[Triage] | None = None
        self._memo: dict[tuple[str, tuple[tuple[str, float], ...]], TriageResult] = {}

    async def ensure(self) -> Triage:
        if self._triage is not None:
            return self._triage
        if self._loading is None:
            self._loading = asyncio.create_task(asyncio.to_thread(_load, self._cache_dir))
        self._triage = await asyncio.shield(self._loading)
        return self._triage

    async def prepare(self) -> None:
        """Train and cache the model in a child process if the cache lacks it, so the first
        conversation loads it in ~1 s instead of training for ~10 s, and the gateway never
        holds scikit-learn before a conversation needs it."""
        if self._triage is not None or self._loading is not None:
            return
        args = [] if self._cache_dir is None else [str(self._cache_dir)]
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "agents.triage.lazy", *args
        )
        try:
            rc = await proc.wait()
        except asyncio.CancelledError:  # the gateway is stopping: leave no child behind
            proc.kill()
            await proc.wait()
            raise
        if rc != 0:
            log.warning("triage model preparation failed; the first conversation will retry")

    def load_now(self) -> Triage:
        """Blocking load (CLI tools and tests)."""
        if self._triage is None:
            self._triage = _load(self._cache_dir)
        return self._triage

    @property
    def loaded(self) -> bool:
        return self._triage is not None

    def _t(self) -> Triage:
        return self._triage if self._triage is not None else self.load_now()

    def classify(self, text: str, prior: Mapping[str, float] | None = None) -> TriageResult:
        # The policy re-derives its state from the whole trajectory at every step, so the same
        # complaint is classified many times: a small memo keeps that free.
        key = (text, tuple(sorted(prior.items())) if prior else ())
        got = self._memo.get(key)
        if got is None:
            got = self._t().classify(text, prior)
            if len(self._memo) >= 4096:
                self._memo.clear()
            self._memo[key] = got
        return got

    def follow_up(self, text: str, asked: Sequence[str]) -> str | None:
        return self._t().follow_up(text, asked)

    def specialty(self, text: str) -> str:
        return self._t().classify(text).specialty


if __name__ == "__main__":  # the child process `prepare()` starts
    _load(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
