"""The local model's test double: LocalModel's interface, answering from a script. Tests
only (agents/llm/engine.py is the real engine)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from agents.llm.engine import Generation
from agents.llm.output import M, OutputError, parse_output
from agents.llm.stats import _Stats


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    static: str
    dynamic: str
    output: type[BaseModel]
    max_tokens: int
    timeout_s: float


Scripted = Mapping[str, Any] | str | Generation


class ScriptedModel:
    """Same interface as LocalModel, answering from a script (for unit tests).

    Each call takes the next item: a dict is the model's JSON output (validated against the
    call's output contract when `validate` is on, like the real engine: a mismatch gives
    error "schema"; unchecked with `model_construct` when off), a str is an error code ("timeout", "truncated", ...), a Generation is
    returned as is. An empty script answers `default`. Every call is kept in `calls`."""

    def __init__(
        self,
        script: Iterable[Scripted] = (),
        *,
        available: bool = True,
        default: Scripted = "unavailable",
        validate: bool = True,
        total_ms: float = 1.0,
    ) -> None:
        self._script: deque[Scripted] = deque(script)
        self._available = available
        self._default = default
        self._validate = validate
        self._total_ms = total_ms
        self.calls: list[ScriptedCall] = []
        self.started = False
        self.stopped = False
        self._stats = _Stats()

    def push(self, *items: Scripted) -> None:
        self._script.extend(items)

    @property
    def available(self) -> bool:
        return self._available and not self.stopped

    async def start(self) -> None:
        self.started = True

    async def stop(self) -> None:
        self.stopped = True

    async def generate(
        self,
        static: str,
        dynamic: str,
        output: type[M],
        *,
        max_tokens: int = 96,
        timeout_s: float = 3.0,
    ) -> Generation[M]:
        self.calls.append(ScriptedCall(static, dynamic, output, max_tokens, timeout_s))
        g: Generation[Any]
        if not self.available:
            g = self._gen(None, "unavailable")
        else:
            item = self._script.popleft() if self._script else self._default
            if isinstance(item, Generation):
                g = item
            elif isinstance(item, str):
                g = self._gen(None, item)
            elif not self._validate:
                g = self._gen(output.model_construct(**item), None)
            else:
                try:
                    g = self._gen(parse_output(output, dict(item)), None)
                except OutputError:
                    g = self._gen(None, "schema")
        self._stats.record(g)
        await asyncio.sleep(0)
        return g

    def _gen(self, data: BaseModel | None, error: str | None) -> Generation[Any]:
        return Generation(data, error, None if error else self._total_ms, self._total_ms, 0, 0)

    def stats(self) -> dict[str, Any]:
        out = self._stats.summary()
        out.update({"available": self.available, "state": "scripted", "pid": None})
        return out
