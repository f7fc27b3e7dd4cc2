"""The local model's latency and outcome counters over a sliding window (LocalModel.stats)."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agents.llm.engine import Generation


def _pct(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return round(s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))], 1)


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None


class _Stats:
    def __init__(self, window: int = 1000) -> None:
        self.calls = 0
        self.ok = 0
        self.errors: dict[str, int] = {}
        self.total_ms: deque[float] = deque(maxlen=window)
        self.first_token_ms: deque[float] = deque(maxlen=window)
        self.prompt_tokens = 0
        self.cached_tokens = 0
        self.completion_tokens = 0

    def record(self, g: Generation[Any]) -> None:
        self.calls += 1
        if g.error is None:
            self.ok += 1
        else:
            self.errors[g.error] = self.errors.get(g.error, 0) + 1
        self.total_ms.append(g.total_ms)
        if g.first_token_ms is not None:
            self.first_token_ms.append(g.first_token_ms)
        self.prompt_tokens += g.prompt_tokens
        self.cached_tokens += g.cached_tokens
        self.completion_tokens += g.completion_tokens

    def summary(self) -> dict[str, Any]:
        total, first = list(self.total_ms), list(self.first_token_ms)
        return {
            "calls": self.calls,
            "ok": self.ok,
            "errors": dict(self.errors),
            "timeouts": self.errors.get("timeout", 0),
            "mean_total_ms": _mean(total),
            "p95_total_ms": _pct(total, 0.95),
            "mean_first_token_ms": _mean(first),
            "p95_first_token_ms": _pct(first, 0.95),
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "completion_tokens": self.completion_tokens,
        }
