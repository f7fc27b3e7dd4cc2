"""The triage classifier, loaded (or trained, the first time) on a worker thread so the
gateway starts at once; conversations await it, nothing else does."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path

from agents.triage.classifier import Triage, TriageResult


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
            self._loading = asyncio.create_task(asyncio.to_thread(Triage.load, self._cache_dir))
        self._triage = await asyncio.shield(self._loading)
        return self._triage

    def load_now(self) -> Triage:
        """Blocking load (CLI tools and tests)."""
        if self._triage is None:
            self._triage = Triage.load(self._cache_dir)
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
