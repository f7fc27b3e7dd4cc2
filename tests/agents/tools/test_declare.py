"""@tool and register_all (agents/tools/declare.py): specs declared on the methods, registered
in written order, a method under two names, off-loop tools on a worker thread."""

from __future__ import annotations

import threading

import pytest
from pydantic import BaseModel

from agents.tools.declare import register_all, tool
from agents.tools.registry import ToolContext, ToolRegistry


class Args(BaseModel):
    user_id: str


class Tools:
    @tool("first", Args, risk="low", phi=False, description="written first")
    async def first(self, args: Args, ctx: ToolContext) -> int:
        return threading.get_ident()

    @tool("heavy", Args, risk="medium", phi=True, off_loop=True, rate_limit=(2, 60.0))
    @tool("heavy_alias", Args, risk="medium", phi=True, off_loop=True)
    def heavy(self, args: Args, ctx: ToolContext) -> int:
        return threading.get_ident()

    def not_a_tool(self) -> None:
        raise AssertionError("never registered")


async def test_declared_methods_register_in_written_order_with_their_specs() -> None:
    reg = ToolRegistry(audit=lambda _r: None)
    register_all(reg, Tools())
    assert reg.names() == ("first", "heavy", "heavy_alias")
    assert reg.spec("first").description == "written first"
    assert reg.spec("heavy").rate_limit == (2, 60.0)
    assert reg.spec("heavy_alias").rate_limit is None
    assert reg.spec("heavy").phi and reg.spec("heavy").risk == "medium"


async def test_off_loop_tools_run_on_a_worker_thread() -> None:
    reg = ToolRegistry(audit=lambda _r: None)
    register_all(reg, Tools())
    ctx = ToolContext(actor="planner", person="alice", run_id="r1")
    loop_thread = threading.get_ident()
    assert await reg.call("first", {"user_id": "alice"}, ctx=ctx) == loop_thread
    assert await reg.call("heavy", {"user_id": "alice"}, ctx=ctx) != loop_thread


def test_an_unknown_option_is_refused_where_it_is_written() -> None:
    with pytest.raises(TypeError, match="retries"):
        tool("x", Args, risk="low", phi=False, retries=3)
