from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from agents.tools.registry import (
    REDACTED,
    ToolContext,
    ToolError,
    ToolPermissionError,
    ToolRateLimited,
    ToolRegistry,
    ToolSpec,
    ToolTimeout,
    ToolUpstreamError,
    ToolValidationError,
)
from gateway.base.clock import ManualClock
from gateway.base.errors import HealthGWError, NotificationError

SECRET = "Chest pain since Tuesday"


class EchoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user_id: str = Field(pattern=r"^[a-z]+$")
    note: str
    count: int = 1


class Harness:
    def __init__(self) -> None:
        self.clock = ManualClock()
        self.audit: list[dict[str, Any]] = []
        self.sleeps: list[float] = []
        self.runs = 0
        self.failures: list[BaseException] = []

        async def sleep(s: float) -> None:
            self.sleeps.append(s)

        self.reg = ToolRegistry(audit=self.audit.append, clock=self.clock, sleep=sleep)

    def echo(self, args: EchoArgs, ctx: ToolContext) -> dict[str, Any]:
        self.runs += 1
        if self.failures:
            raise self.failures.pop(0)
        return {"user_id": args.user_id, "note": args.note, "count": args.count}

    def add(self, name: str = "echo", **kw: Any) -> None:
        spec: dict[str, Any] = {
            "name": name,
            "args_model": EchoArgs,
            "func": self.echo,
            "risk": "medium",
            "phi": True,
            "phi_fields": frozenset({"note"}),
        }
        self.reg.register(ToolSpec(**(spec | kw)))


CTX = ToolContext(actor="planner", person="alice", run_id="run-1")


@pytest.fixture
def h() -> Harness:
    h = Harness()
    h.add()
    return h


async def test_valid_call_returns_result(h: Harness) -> None:
    out = await h.reg.call("echo", {"user_id": "alice", "note": SECRET}, ctx=CTX)
    assert out == {"user_id": "alice", "note": SECRET, "count": 1}
    assert h.reg.names() == ("echo",)
    assert h.reg.spec("echo").risk == "medium"


@pytest.mark.parametrize(
    ("params", "field", "code"),
    [
        ({"user_id": "alice"}, "note", "missing"),
        ({"user_id": "Alice Smith", "note": SECRET}, "user_id", "string_pattern_mismatch"),
        ({"user_id": "alice", "note": SECRET, "count": "many times"}, "count", "int_parsing"),
        ({"user_id": "alice", "note": 42}, "note", "string_type"),
    ],
)
async def test_validation_names_field_never_value(
    h: Harness, params: dict[str, Any], field: str, code: str
) -> None:
    with pytest.raises(ToolValidationError) as exc:
        await h.reg.call("echo", params, ctx=CTX)
    assert exc.value.fields == (field,)
    assert f"{field}: {code}" in str(exc.value)
    for value in params.values():
        if value != "alice":
            assert str(value) not in str(exc.value)
    assert h.runs == 0  # validated before executing


async def test_extra_keys_are_forbidden(h: Harness) -> None:
    with pytest.raises(ToolValidationError) as exc:
        await h.reg.call("echo", {"user_id": "alice", "note": "x", "diagnosis": SECRET}, ctx=CTX)
    assert exc.value.fields == ("diagnosis",)
    assert SECRET not in str(exc.value)
    assert h.runs == 0


async def test_errors_share_one_root() -> None:
    for cls in (ToolValidationError, ToolPermissionError, ToolRateLimited, ToolTimeout):
        assert issubclass(cls, ToolError)
    assert issubclass(ToolUpstreamError, ToolError)
    assert issubclass(ToolError, HealthGWError)


async def test_allowed_is_enforced(h: Harness) -> None:
    with pytest.raises(ToolPermissionError):
        await h.reg.call("echo", {"user_id": "alice", "note": "x"}, ctx=CTX, allowed={"other"})
    assert h.runs == 0
    out = await h.reg.call("echo", {"user_id": "alice", "note": "x"}, ctx=CTX, allowed={"echo"})
    assert out["note"] == "x"


async def test_unknown_tool_is_a_permission_error(h: Harness) -> None:
    with pytest.raises(ToolPermissionError):
        await h.reg.call("delete_everything", {}, ctx=CTX)
    with pytest.raises(ToolPermissionError):
        h.reg.spec("delete_everything")
    assert h.audit[-1]["tool"] == "delete_everything"
    assert h.audit[-1]["error"] == "ToolPermissionError"


async def test_rate_limit_per_tool_and_person() -> None:
    h = Harness()
    h.add(rate_limit=(2, 60.0))
    args = {"user_id": "alice", "note": "x"}
    await h.reg.call("echo", args, ctx=CTX)
    await h.reg.call("echo", args, ctx=CTX)
    with pytest.raises(ToolRateLimited) as exc:
        await h.reg.call("echo", args, ctx=CTX)
    assert exc.value.retry_after_s == pytest.approx(30.0)
    # Another person has their own bucket.
    await h.reg.call("echo", args, ctx=ToolContext(actor="planner", person="bob"))
    # Half the window refills one token (2 per 60 s).
    h.clock.advance(30)
    await h.reg.call("echo", args, ctx=CTX)
    with pytest.raises(ToolRateLimited):
        await h.reg.call("echo", args, ctx=CTX)
    assert h.runs == 4


async def test_safety_playbook_context_is_exempt_from_rate_limit() -> None:
    h = Harness()
    h.add(rate_limit=(1, 60.0))
    args = {"user_id": "alice", "note": "x"}
    playbook = ToolContext(actor="sos_playbook", person="alice", rate_limited=False)
    for _ in range(5):
        await h.reg.call("echo", args, ctx=playbook)
    await h.reg.call("echo", args, ctx=CTX)
    with pytest.raises(ToolRateLimited):
        await h.reg.call("echo", args, ctx=CTX)


async def test_transient_upstream_errors_are_retried_with_backoff(h: Harness) -> None:
    h.failures = [
        ToolUpstreamError("busy", transient=True),
        NotificationError("503", transient=True),
    ]
    out = await h.reg.call("echo", {"user_id": "alice", "note": "x"}, ctx=CTX)
    assert out["note"] == "x"
    assert h.runs == 3
    assert h.sleeps == [0.05, 0.1]


async def test_transient_errors_give_up_after_max_attempts(h: Harness) -> None:
    h.failures = [ToolUpstreamError("busy", transient=True) for _ in range(5)]
    with pytest.raises(ToolUpstreamError) as exc:
        await h.reg.call("echo", {"user_id": "alice", "note": "x"}, ctx=CTX)
    assert exc.value.transient
    assert h.runs == 3


@pytest.mark.parametrize(
    "failure",
    [
        ToolUpstreamError("gone", transient=False),
        NotificationError("bad number", transient=False),
        ToolValidationError("no recipients"),
    ],
)
async def test_permanent_errors_are_not_retried(h: Harness, failure: Exception) -> None:
    h.failures = [failure]
    with pytest.raises(ToolError):
        await h.reg.call("echo", {"user_id": "alice", "note": "x"}, ctx=CTX)
    assert h.runs == 1
    assert h.sleeps == []


async def test_unexpected_exception_becomes_upstream_error_without_phi(h: Harness) -> None:
    h.failures = [RuntimeError(f"db row for {SECRET}")]
    with pytest.raises(ToolUpstreamError) as exc:
        await h.reg.call("echo", {"user_id": "alice", "note": "x"}, ctx=CTX)
    assert not exc.value.transient
    assert SECRET not in str(exc.value)
    assert "RuntimeError" in str(exc.value)
    assert h.runs == 1


async def test_timeout_is_typed_and_not_retried() -> None:
    h = Harness()
    calls = 0

    async def hang(args: EchoArgs, ctx: ToolContext) -> None:
        nonlocal calls
        calls += 1
        await asyncio.Event().wait()

    h.add(func=hang, timeout_s=0.01)
    with pytest.raises(ToolTimeout):
        await h.reg.call("echo", {"user_id": "alice", "note": "x"}, ctx=CTX)
    assert calls == 1
    assert h.audit[-1]["error"] == "ToolTimeout"


async def test_audit_record_per_call_with_phi_redacted(h: Harness) -> None:
    await h.reg.call("echo", {"user_id": "alice", "note": SECRET, "count": 2}, ctx=CTX)
    with pytest.raises(ToolValidationError):
        await h.reg.call("echo", {"user_id": "alice", "note": SECRET, "count": "x"}, ctx=CTX)
    h.failures = [ToolUpstreamError("gone", transient=False)]
    with pytest.raises(ToolUpstreamError):
        await h.reg.call("echo", {"user_id": "alice", "note": SECRET}, ctx=CTX)

    assert len(h.audit) == 3
    ok, invalid, failed = h.audit
    assert set(ok) == {
        "ts", "actor", "tool", "run_id", "args", "ok", "result", "error", "latency_ms"
    }  # fmt: skip
    assert ok["ts"] == h.clock.now()
    assert (ok["actor"], ok["tool"], ok["run_id"], ok["ok"], ok["error"]) == (
        "planner", "echo", "run-1", True, None
    )  # fmt: skip
    assert ok["args"] == {"user_id": "alice", "note": REDACTED, "count": 2}
    assert ok["result"] == {"user_id": "alice", "note": REDACTED, "count": 2}
    assert invalid["ok"] is False
    assert invalid["error"] == "ToolValidationError"
    assert invalid["args"]["note"] == REDACTED
    assert failed["error"] == "ToolUpstreamError"
    assert failed["result"] is None
    assert SECRET not in repr(h.audit)


async def test_whole_result_redacted_when_flagged() -> None:
    h = Harness()
    h.add(phi_result=True)
    await h.reg.call("echo", {"user_id": "alice", "note": "x"}, ctx=CTX)
    assert h.audit[-1]["result"] == REDACTED


async def test_audit_sink_failure_never_fails_the_call() -> None:
    def broken(record: Mapping[str, Any]) -> None:
        raise OSError("disk full")

    h = Harness()
    h.reg.audit = broken
    h.add()
    out = await h.reg.call("echo", {"user_id": "alice", "note": "x"}, ctx=CTX)
    assert out["note"] == "x"


async def test_confirmation_required() -> None:
    h = Harness()
    h.add(requires_confirmation=True)
    args = {"user_id": "alice", "note": "x"}
    with pytest.raises(ToolPermissionError):
        await h.reg.call("echo", args, ctx=CTX)  # no way to ask
    asked: list[tuple[str, Mapping[str, Any]]] = []

    async def no(tool: str, a: Mapping[str, Any]) -> bool:
        asked.append((tool, a))
        return False

    async def yes(tool: str, a: Mapping[str, Any]) -> bool:
        return True

    with pytest.raises(ToolPermissionError):
        await h.reg.call("echo", args, ctx=ToolContext(actor="planner", confirm=no))
    assert asked == [("echo", {"user_id": "alice", "note": "x", "count": 1})]
    assert h.runs == 0
    out = await h.reg.call("echo", args, ctx=ToolContext(actor="planner", confirm=yes))
    assert out["note"] == "x"
    assert h.runs == 1


async def test_metrics_per_tool(h: Harness) -> None:
    h.add("other")
    await h.reg.call("echo", {"user_id": "alice", "note": "x"}, ctx=CTX)
    await h.reg.call("echo", {"user_id": "alice", "note": "x"}, ctx=CTX)
    with pytest.raises(ToolValidationError):
        await h.reg.call("echo", {}, ctx=CTX)
    m = h.reg.metrics()
    assert (m["echo"].calls, m["echo"].errors) == (3, 1)
    assert (m["other"].calls, m["other"].errors) == (0, 0)
    assert m["echo"].latency_ms_sum >= m["echo"].latency_ms_max >= 0
    assert m["echo"].as_dict()["calls"] == 3


def test_duplicate_registration_rejected(h: Harness) -> None:
    with pytest.raises(ValueError, match="twice"):
        h.add()
