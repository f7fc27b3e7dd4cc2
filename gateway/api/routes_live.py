"""The console's live feed and the vitals table it labels values with.

GET /v1/live is Server-Sent Events over a plain GET, so the browser reads it with fetch()
and sends its token as a header (EventSource cannot, and a token in the URL is logged).
It carries the household's picture (`persons`, sent again whenever it changes), every event
as it happens (`event`), `lost` when a slow reader's queue overflowed, and comment pings.
Family and viewer tokens get the same redaction as the REST reads. It is left out of the
OpenAPI document: a response that never ends cannot be fuzzed request by request
(tests/gateway/api/test_live.py covers it)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from gateway.api import redact
from gateway.api.deps import Backend, BackendDep, ReaderDep
from gateway.api.live_feed import Client, LiveFeed
from gateway.api.responses import READ
from gateway.api.tokens import Role
from gateway.contract.vitals import VITALS

router = APIRouter(tags=["console"])

CHECK_S = 1.0  # how often a stream looks for changed vitals (readings are not events)
PING_S = 15.0  # a comment line keeps proxies and the browser from timing out an idle stream
MAX_STREAM_S = 600.0  # then the client reconnects: its token is checked again


class WhoAmIOut(BaseModel):
    role: Role


class VitalOut(BaseModel):
    name: str
    label: str
    unit: str


@router.get("/v1/vitals", responses=READ)
def vitals(_: ReaderDep) -> list[VitalOut]:
    """The numeric vitals with the words and unit the gateway's alerts use."""
    return [
        VitalOut(name=v.name, label=v.label, unit=v.unit)
        for v in VITALS
        if v.numeric and v.unit is not None
    ]


@router.get("/v1/whoami", responses=READ)
def whoami(role: ReaderDep) -> WhoAmIOut:
    """The role of the token sent: the console shows only what that role may do."""
    return WhoAmIOut(role=role)


def snapshot(backend: Backend, role: Role) -> dict[str, Any]:
    """Everyone's card: the person views and the devices (battery), redacted per role."""
    persons = [backend.person_view(p.id) for p in backend.household.persons]
    devices = backend.device_views()
    if role != "admin":
        persons, devices = redact.records(persons), redact.records(devices)
    return {"persons": persons, "devices": devices}


def _frame(kind: str, data: Any) -> bytes:
    body = data if isinstance(data, str) else json.dumps(data, default=str)
    return f"event: {kind}\ndata: {body}\n\n".encode()


async def _stream(
    request: Request, backend: Backend, role: Role, client: Client
) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    end = loop.time() + MAX_STREAM_S
    yield b"retry: 2000\n" + _frame("hello", {"role": role})
    last = ""
    quiet = 0.0
    while loop.time() < end:
        snap = json.dumps(snapshot(backend, role), default=str, sort_keys=True)
        if snap != last:
            last = snap
            yield _frame("persons", snap)
        sent = False
        while not client.queue.empty():
            payload = client.queue.get_nowait()
            yield _frame("event", payload if role == "admin" else redact.events([payload])[0])
            sent = True
        if client.lost:
            yield _frame("lost", {"count": client.lost})
            client.lost = 0
        client.woken.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(client.woken.wait(), CHECK_S)
        quiet = 0.0 if sent else quiet + CHECK_S
        if quiet >= PING_S:
            quiet = 0.0
            yield b": ping\n\n"
        if await request.is_disconnected():
            return


@router.get("/v1/live", include_in_schema=False)
async def live(request: Request, backend: BackendDep, role: ReaderDep) -> StreamingResponse:
    feed: LiveFeed = request.app.state.live
    if feed.clients >= feed.max_clients:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "too many live screens open")

    async def body() -> AsyncIterator[bytes]:
        with feed.client() as client:
            if client is None:  # filled up since the check above
                yield _frame("busy", {})
                return
            async for chunk in _stream(request, backend, role, client):
                yield chunk

    return StreamingResponse(
        body(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
