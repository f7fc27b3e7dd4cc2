"""The typed tool layer every agent acts through.

Each call is: looked up -> allowed in this state? -> arguments validated (extra keys forbidden)
-> rate limited per (tool, person) -> confirmed if the tool needs it -> executed under a timeout,
retrying transient upstream failures only -> audited (PHI redacted) -> counted in metrics.
Errors are typed (all under ToolError) and never carry PHI values: they name the field, not
what was in it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from gateway.base.backoff import Backoff
from gateway.base.clock import Clock, SystemClock
from gateway.base.errors import HealthGWError, NotificationError
from gateway.contract.topics import NotifyKind

log = logging.getLogger(__name__)

Risk = Literal["low", "medium", "high"]
REDACTED = "[REDACTED]"

# (tool name, validated arguments) -> did the user confirm?
ConfirmFn = Callable[[str, Mapping[str, Any]], Awaitable[bool]]
# (question, answer type "free_text" | "yes_no") -> the user's answer; raises ToolNoAnswer.
AskFn = Callable[[str, str], Awaitable[str]]
# A message for the user's open conversation (besides the watch notification).
ReplyFn = Callable[[str], Awaitable[None]]
# Receives one audit record (keys: ts, actor, tool, run_id, args, ok, result, error,
# latency_ms). Store.add_audit fits; an awaitable return is awaited.
AuditSink = Callable[[dict[str, Any]], object]
# A tool implementation: (validated args model, context) -> result (or an awaitable of it).
ToolFunc = Callable[[Any, "ToolContext"], Any]


# --- errors ---------------------------------------------------------------------------------


class ToolError(HealthGWError):
    """Root of every error the tool layer raises on purpose."""


class ToolValidationError(ToolError):
    """The arguments do not fit the tool's model. `fields` names the offending fields."""

    def __init__(self, message: str, *, fields: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.fields = fields


class ToolPermissionError(ToolError):
    """Not allowed in this state, unknown tool, or confirmation missing / declined."""


class ToolRateLimited(ToolError):
    def __init__(self, message: str, *, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ToolUpstreamError(ToolError):
    """What the tool depends on failed. Only `transient` failures are retried."""

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


class ToolTimeout(ToolError):
    """One attempt took longer than the tool's timeout (not retried: it may have acted)."""


class ToolNoAnswer(ToolError):
    """The user did not answer a question in time (or the conversation was closed)."""


# --- values ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Who is calling, for whom, and in which run/step (what code, not the model, knows)."""

    actor: str
    person: str | None = None
    run_id: str | None = None
    step: int | None = None
    notify_kind: NotifyKind = "info"
    prompt_id: str | None = None
    # A location the triggering event carried (an SOS press), preferred by get_location.
    location: tuple[float, float] | None = None
    confirm: ConfirmFn | None = None
    ask: AskFn | None = None
    reply: ReplyFn | None = None
    session_id: str | None = None
    # False only for deterministic safety playbooks: their sends are bounded by the SOS journal,
    # and a limit hit there would silence an ambulance text. Models never build a context.
    rate_limited: bool = True


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    args_model: type[BaseModel]
    func: ToolFunc
    risk: Risk
    phi: bool
    phi_fields: frozenset[str] = frozenset()
    requires_confirmation: bool = False
    rate_limit: tuple[int, float] | None = None  # (calls, per_seconds)
    description: str = ""
    timeout_s: float = 5.0
    max_attempts: int = 3
    phi_result: bool = False  # redact the whole result (e.g. a free-text answer)


@dataclass(frozen=True, slots=True)
class ToolMetrics:
    calls: int = 0
    errors: int = 0
    latency_ms_sum: float = 0.0
    latency_ms_max: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return {
            "calls": self.calls,
            "errors": self.errors,
            "latency_ms_sum": self.latency_ms_sum,
            "latency_ms_max": self.latency_ms_max,
        }


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


@dataclass(slots=True)
class _Counters:
    calls: int = 0
    errors: int = 0
    latency_ms_sum: float = 0.0
    latency_ms_max: float = 0.0


def redact(value: Any, fields: Collection[str]) -> Any:
    """A copy of `value` with every mapping key in `fields` replaced by REDACTED (recursively)."""
    if isinstance(value, Mapping):
        return {str(k): REDACTED if k in fields else redact(v, fields) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, fields) for v in value]
    return value


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return REDACTED


def _raw_args(spec: ToolSpec, params: Any) -> Any:
    """Unvalidated arguments for the audit: PHI fields and keys the model does not know (what
    they hold is unknown) are redacted."""
    if not isinstance(params, Mapping):
        return REDACTED
    known = spec.args_model.model_fields
    return {
        str(k): redact(_jsonable(v), spec.phi_fields)
        if k in known and k not in spec.phi_fields
        else REDACTED
        for k, v in params.items()
    }


@dataclass
class ToolRegistry:
    """Holds the tools and runs every call through the checks above."""

    audit: AuditSink | None = None
    clock: Clock = field(default_factory=SystemClock)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    backoff_s: float = 0.05
    _specs: dict[str, ToolSpec] = field(default_factory=dict, init=False)
    _buckets: dict[tuple[str, str], _Bucket] = field(default_factory=dict, init=False)
    _counters: dict[str, _Counters] = field(default_factory=dict, init=False)

    def register(self, spec: ToolSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"tool {spec.name!r} is registered twice")
        if spec.max_attempts < 1 or spec.timeout_s <= 0:
            raise ValueError(f"tool {spec.name!r}: max_attempts >= 1 and timeout_s > 0")
        self._specs[spec.name] = spec
        self._counters[spec.name] = _Counters()

    def names(self) -> tuple[str, ...]:
        return tuple(self._specs)

    def spec(self, name: str) -> ToolSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise ToolPermissionError(f"unknown tool {name!r}") from None

    def metrics(self) -> dict[str, ToolMetrics]:
        return {
            n: ToolMetrics(c.calls, c.errors, c.latency_ms_sum, c.latency_ms_max)
            for n, c in self._counters.items()
        }

    async def call(
        self,
        name: str,
        params: Mapping[str, Any],
        *,
        ctx: ToolContext,
        allowed: Collection[str] | None = None,
    ) -> Any:
        spec = self._specs.get(name)
        started = time.perf_counter()
        ts = self.clock.now()
        audit_args: Any = REDACTED
        result: Any = None
        error: BaseException | None = None
        try:
            if spec is None:
                raise ToolPermissionError(f"unknown tool {name!r}")
            audit_args = _raw_args(spec, params)
            if allowed is not None and name not in allowed:
                raise ToolPermissionError(f"tool {name!r} is not allowed here")
            args = self._validate(spec, params)
            audit_args = redact(args.model_dump(mode="json"), spec.phi_fields)
            self._take_token(spec, ctx)
            if spec.requires_confirmation:
                await self._confirm(spec, args, ctx)
            result = await self._run(spec, args, ctx)
            return result
        except BaseException as exc:
            error = exc
            raise
        finally:
            latency_ms = (time.perf_counter() - started) * 1000
            if spec is not None:
                self._count(name, latency_ms, failed=error is not None)
                shown = REDACTED if spec.phi_result else redact(_jsonable(result), spec.phi_fields)
            else:
                shown = None
            await self._audit(
                {
                    "ts": ts,
                    "actor": ctx.actor,
                    "tool": name,
                    "run_id": ctx.run_id,
                    "args": audit_args,
                    "ok": error is None,
                    "result": shown if error is None else None,
                    "error": type(error).__name__ if error is not None else None,
                    "latency_ms": latency_ms,
                }
            )

    # --- steps ------------------------------------------------------------------------------

    def _validate(self, spec: ToolSpec, params: Mapping[str, Any]) -> BaseModel:
        if not isinstance(params, Mapping):
            raise ToolValidationError(f"{spec.name}: arguments must be an object")
        known = set(spec.args_model.model_fields)
        known |= {f.alias for f in spec.args_model.model_fields.values() if f.alias}
        extra = tuple(sorted(str(k) for k in params if k not in known))
        if extra:
            raise ToolValidationError(
                f"{spec.name}: unexpected argument(s): {', '.join(extra)}", fields=extra
            )
        try:
            return spec.args_model.model_validate(dict(params))
        except ValidationError as exc:
            # Field path and error code only: pydantic messages may echo the input.
            problems = [
                (".".join(str(p) for p in e["loc"]) or "(arguments)", e["type"])
                for e in exc.errors(include_input=False, include_url=False, include_context=False)
            ]
            detail = "; ".join(f"{loc}: {code}" for loc, code in problems)
            raise ToolValidationError(
                f"{spec.name}: invalid arguments: {detail}",
                fields=tuple(loc for loc, _ in problems),
            ) from None

    def _take_token(self, spec: ToolSpec, ctx: ToolContext) -> None:
        if spec.rate_limit is None or not ctx.rate_limited:
            return
        calls, per_s = spec.rate_limit
        now = self.clock.monotonic()
        key = (spec.name, ctx.person or "*")
        b = self._buckets.get(key)
        if b is None:
            b = self._buckets[key] = _Bucket(tokens=float(calls), at=now)
        rate = calls / per_s
        b.tokens = min(float(calls), b.tokens + (now - b.at) * rate)
        b.at = now
        if b.tokens < 1.0:
            raise ToolRateLimited(
                f"{spec.name}: rate limit of {calls} per {per_s:g}s reached",
                retry_after_s=(1.0 - b.tokens) / rate,
            )
        b.tokens -= 1.0

    async def _confirm(self, spec: ToolSpec, args: BaseModel, ctx: ToolContext) -> None:
        if ctx.confirm is None:
            raise ToolPermissionError(f"{spec.name} needs confirmation and none is possible here")
        if not await ctx.confirm(spec.name, args.model_dump(mode="json")):
            raise ToolPermissionError(f"{spec.name} was not confirmed")

    async def _run(self, spec: ToolSpec, args: BaseModel, ctx: ToolContext) -> Any:
        attempt = 1
        while True:
            try:
                return await self._attempt(spec, args, ctx)
            except ToolUpstreamError as exc:
                if not exc.transient or attempt >= spec.max_attempts:
                    raise
                delay = Backoff(base=self.backoff_s).delay(attempt - 1)
                log.info("tool %s: transient failure, retry %d in %.3fs", spec.name, attempt, delay)
                attempt += 1
                await self.sleep(delay)

    async def _attempt(self, spec: ToolSpec, args: BaseModel, ctx: ToolContext) -> Any:
        try:
            async with asyncio.timeout(spec.timeout_s):
                out = spec.func(args, ctx)
                if inspect.isawaitable(out):
                    out = await out
                return out
        except ToolError:
            raise
        except TimeoutError:
            raise ToolTimeout(f"{spec.name} timed out after {spec.timeout_s:g}s") from None
        except NotificationError as exc:
            raise ToolUpstreamError(
                f"{spec.name}: notification failed", transient=exc.transient
            ) from exc
        except Exception as exc:
            # The exception text may hold PHI: keep only its type (the cause stays chained).
            raise ToolUpstreamError(
                f"{spec.name} failed ({type(exc).__name__})", transient=False
            ) from exc

    def _count(self, name: str, latency_ms: float, *, failed: bool) -> None:
        c = self._counters[name]
        c.calls += 1
        c.errors += int(failed)
        c.latency_ms_sum += latency_ms
        c.latency_ms_max = max(c.latency_ms_max, latency_ms)

    async def _audit(self, record: dict[str, Any]) -> None:
        if self.audit is None:
            return
        try:
            out = self.audit(record)
            if inspect.isawaitable(out):
                await out
        except Exception:
            # An audit failure must never fail the action (least of all an SOS).
            log.exception("audit sink failed for tool %s", record["tool"])
