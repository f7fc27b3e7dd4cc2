"""Chat with the assistant: REST (send, then collect replies up to the next question) and a
WebSocket (every reply as it is said). The same conversations as health/{person}/intent."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from fastapi import APIRouter, HTTPException, WebSocket, WebSocketDisconnect, status
from pydantic import BaseModel, ConfigDict, Field

from gateway.api import redact, ws_auth
from gateway.api.deps import AdminDep, Backend, BackendDep, PersonId, ReaderDep
from gateway.api.responses import ACT, BODY, PERSON, READ, UNAVAILABLE

router = APIRouter(tags=["assistant"])


class ChatIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=2000)
    session_id: str | None = Field(default=None, max_length=64)
    wait_s: float = Field(default=15.0, ge=0, le=120, description="how long to wait for replies")


class ChatOut(BaseModel):
    session_id: str
    replies: list[dict[str, Any]]
    expects_answer: bool
    done: bool


def _known(backend: Backend, person: str) -> None:
    if backend.household.person(person) is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such person")


@router.post("/v1/persons/{person}/chat", responses=ACT | BODY | PERSON | UNAVAILABLE)
async def chat(person: PersonId, body: ChatIn, backend: BackendDep, _: AdminDep) -> ChatOut:
    """Say something to the assistant as `person`. Returns what it said back, up to its next
    question (expects_answer) or the end of the conversation (done), or after wait_s."""
    _known(backend, person)
    got: list[dict[str, Any]] = []
    changed = asyncio.Event()

    def on_reply(payload: dict[str, Any]) -> None:
        got.append(payload)
        changed.set()

    off = backend.chat_listen(person, on_reply)
    if off is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "the assistant is not running")
    try:
        sid = await backend.chat_say(person, body.text, body.session_id)
        if sid is None:
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "the assistant is busy")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + body.wait_s
        while True:
            mine = [p for p in got if p.get("session_id") == sid]
            asking = bool(mine) and bool(mine[-1].get("expects_answer"))
            done = not backend.chat_open(sid)
            left = deadline - loop.time()
            if asking or done or left <= 0:
                return ChatOut(session_id=sid, replies=mine, expects_answer=asking, done=done)
            changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), min(left, 0.2))
    finally:
        off()


@router.websocket("/v1/persons/{person}/chat/ws")
async def chat_ws(websocket: WebSocket, person: str) -> None:
    """Send {"text", "session_id"?}; receive every reply payload for the person. Admin only.
    Auth (see gateway.api.ws_auth): subprotocols ["bearer", "bearer.<token>"], or a first
    message {"type": "auth", "token"}, or `Authorization: Bearer`; a token in the URL is
    refused (HTTP 403)."""
    backend: Backend = websocket.app.state.backend
    known = backend.household.person(person) is not None
    if not await ws_auth.admit(websocket, websocket.app.state.tokens, person_known=known):
        return
    out: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=256)

    def on_reply(payload: dict[str, Any]) -> None:
        with contextlib.suppress(asyncio.QueueFull):  # a stalled client loses old replies
            out.put_nowait(payload)

    off = backend.chat_listen(person, on_reply)
    if off is None:
        await websocket.close(code=1013)
        return
    max_frame: int = websocket.app.state.max_body_bytes

    async def pump() -> None:
        while True:
            await websocket.send_json(await out.get())

    sender = asyncio.create_task(pump())
    try:
        while True:
            raw = await websocket.receive_text()
            if len(raw) > max_frame:  # parse nothing bigger than an HTTP body may be
                await websocket.close(code=1009)
                break
            try:
                msg = ChatIn.model_validate(json.loads(raw))
            except (ValueError, TypeError):
                await websocket.send_json({"error": 'send {"text": ..., "session_id"?: ...}'})
                continue
            sid = await backend.chat_say(person, msg.text, msg.session_id)
            await websocket.send_json({"accepted": sid is not None, "session_id": sid})
    except WebSocketDisconnect:
        pass
    finally:
        off()
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await sender


@router.get("/v1/persons/{person}/appointments", responses=READ | PERSON | UNAVAILABLE)
def appointments(person: PersonId, backend: BackendDep, role: ReaderDep) -> dict[str, Any]:
    """Bookings and appointment history (family screens may read this; the history's
    symptom text is for the admin only)."""
    _known(backend, person)
    mem = backend.memory(person)
    if mem is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "the assistant is not running")
    # The household names each specialist: a person reads "Dr Patel, cardiologist", not an id.
    names = {sp.id: sp for sp in backend.household.specialists}

    def named(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for r in rows:
            sp = names.get(str(r.get("specialist_id")))
            out.append(
                {
                    **r,
                    "specialist_name": sp.name if sp else None,
                    "specialization": sp.specialization if sp else None,
                }
            )
        return out

    out = {
        "bookings": named(mem["bookings"]),
        "appointment_history": named(mem["appointment_history"]),
    }
    return out if role == "admin" else redact.memory(out)


@router.get(
    "/v1/persons/{person}/memory", operation_id="getMemory", responses=READ | PERSON | UNAVAILABLE
)
def memory(person: PersonId, backend: BackendDep, role: ReaderDep) -> dict[str, Any]:
    """Everything the assistant remembers about a person. Admin sees it all; family and
    viewer tokens see bookings and dates with the symptom text redacted."""
    _known(backend, person)
    mem = backend.memory(person)
    if mem is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "the assistant is not running")
    return mem if role == "admin" else redact.memory(mem)
