"""Tools declared where they are written: `@tool(...)` on a method puts its ToolSpec (all
but the function) on it, and `register_all` registers every declared method of an object,
in the order the methods are written (the order the planner and the API list them in)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Collection
from typing import Any, TypeVar

from pydantic import BaseModel

from agents.tools.registry import Risk, ToolContext, ToolFunc, ToolRegistry, ToolSpec

F = TypeVar("F", bound=Callable[..., Any])
_ATTR = "__healthgw_tools__"
_SPEC_FIELDS = tuple(f.name for f in dataclasses.fields(ToolSpec) if f.name != "func")


def tool(
    name: str,
    args_model: type[BaseModel],
    *,
    risk: Risk,
    phi: bool,
    off_loop: bool = False,
    **options: Any,
) -> Callable[[F], F]:
    """Declare the method a tool. `options` are the other ToolSpec fields (rate_limit,
    timeout_s, ...). `off_loop`: the tool does real work (a similarity search, a calendar
    scan, an fsync), so it runs on a worker thread and the event loop, with any SOS press it
    is handling, never waits for it. Stack two decorators to register one method under two
    names (the first written is registered first)."""
    unknown = set(options) - set(_SPEC_FIELDS)
    if unknown:
        raise TypeError(f"@tool({name!r}): unknown options {sorted(unknown)}")
    decl = {"name": name, "args_model": args_model, "risk": risk, "phi": phi, **options}

    def mark(fn: F) -> F:
        setattr(fn, _ATTR, ((decl, off_loop), *getattr(fn, _ATTR, ())))
        return fn

    return mark


def register_all(reg: ToolRegistry, obj: object, *, only: Collection[str] | None = None) -> None:
    """Register every @tool method of `obj` (or those named in `only`), bound to it."""
    for attr, member in vars(type(obj)).items():
        for decl, off_loop in getattr(member, _ATTR, ()):
            if only is not None and decl["name"] not in only:
                continue
            bound = getattr(obj, attr)
            reg.register(ToolSpec(func=_off_loop(bound) if off_loop else bound, **decl))


def _off_loop(fn: Callable[[Any, ToolContext], Any]) -> ToolFunc:
    async def run(args: Any, ctx: ToolContext) -> Any:
        return await asyncio.to_thread(fn, args, ctx)

    return run


def declared_args(cls: type) -> dict[str, type[BaseModel]]:
    """Tool name -> argument model of every @tool method of `cls`, without building it: the
    contract a caller fills parameters from (the same models the registry validates with)."""
    out: dict[str, type[BaseModel]] = {}
    for member in vars(cls).values():
        for decl, _ in getattr(member, _ATTR, ()):
            out[str(decl["name"])] = decl["args_model"]
    return out
