"""The console's routes over the stub backend: the page and its files (types, CSP, nothing
else reachable), /v1/whoami, /v1/vitals, and /v1/live driven as ASGI in this event loop (so
an event can be published into the feed between two reads), with its redaction per role,
its bounded queue and its client limit. The real browser runs in tests/console/."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from gateway.api.live_feed import QUEUE_SIZE, LiveFeed
from gateway.api.routes_console import CONSOLE_DIR, CSP, FILES
from gateway.contract.topics import EventType
from gateway.contract.values import Event
from gateway.contract.vitals import BY_NAME
from tests.gateway.api.stub import ADMIN, AUTH, PHONE, make_app


def client(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://hub")


async def test_the_page_and_its_files_are_served_with_a_strict_policy() -> None:
    async with client(make_app()) as c:
        page = await c.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert page.headers["content-security-policy"] == CSP
        assert "'unsafe-inline'" not in CSP and "script-src 'self'" in CSP
        assert page.headers["x-content-type-options"] == "nosniff"
        # No inline script or handler for the policy to have to allow.
        assert not re.search(r"<script(?![^>]*\bsrc=)", page.text)
        assert not re.search(r"\son[a-z]+=", page.text)
        js = await c.get("/console/app.js")
        assert js.headers["content-type"].startswith("text/javascript")
        assert js.headers["content-security-policy"] == CSP
        css = await c.get("/console/style.css")
        assert css.headers["content-type"].startswith("text/css")
        for path in ("/console/index.html", "/console/..%2Froutes_console.py", "/console/x.js"):
            assert (await c.get(path)).status_code == 404, path
        # Only listed files: every script the page loads is one of them.
        for src in re.findall(r'(?:src|href)="(/console/[^"]+)"', page.text):
            assert (await c.get(src)).status_code == 200, src
        schema = (await c.get("/openapi.json")).json()
        assert "/" not in schema["paths"] and "/v1/live" not in schema["paths"]


def test_no_script_writes_markup_from_data() -> None:
    # Names, messages and alert text reach the page as textContent only.
    for name in [f for f in FILES if f.endswith(".js")]:
        text = (CONSOLE_DIR / name).read_text(encoding="utf-8")
        assert "innerHTML" not in text and "insertAdjacentHTML" not in text, name
        assert "eval(" not in text and "new Function" not in text, name
        assert "localStorage" not in text, name  # the token lives for the tab only


async def test_whoami_names_the_role_and_refuses_no_token() -> None:
    async with client(make_app()) as c:
        for role, headers in AUTH.items():
            assert (await c.get("/v1/whoami", headers=headers)).json() == {"role": role}
        assert (await c.get("/v1/whoami")).status_code == 401
        assert (await c.get("/v1/vitals")).status_code == 401


async def test_vitals_come_from_the_one_table() -> None:
    async with client(make_app()) as c:
        rows = (await c.get("/v1/vitals", headers=AUTH["viewer"])).json()
    by_name = {r["name"]: r for r in rows}
    assert by_name["heart_rate"] == {"name": "heart_rate", "label": "heart rate", "unit": "bpm"}
    for name, row in by_name.items():
        assert (row["label"], row["unit"]) == (BY_NAME[name].label, BY_NAME[name].unit)


class Stream:
    """GET /v1/live as an ASGI call in this loop: frames as they are sent."""

    def __init__(self, app: FastAPI, token: str | None) -> None:
        self.app = app
        self.token = token
        self.chunks: asyncio.Queue[bytes] = asyncio.Queue()
        self.status: int | None = None
        self._gone = asyncio.Event()
        self._buffer = ""

    async def _receive(self) -> dict[str, Any]:
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        elif message["type"] == "http.response.body":
            await self.chunks.put(message.get("body", b""))

    async def run(self) -> None:
        headers = [(b"authorization", f"Bearer {self.token}".encode())] if self.token else []
        scope = {"type": "http", "method": "GET", "path": "/v1/live", "raw_path": b"/v1/live",
                 "query_string": b"", "headers": headers, "client": ("127.0.0.1", 5000),
                 "server": ("hub", 80), "scheme": "http", "http_version": "1.1",
                 "root_path": "", "asgi": {"version": "3.0"}}  # fmt: skip
        await self.app(scope, self._receive, self._send)

    async def frame(self) -> tuple[str, Any]:
        """The next `event:` frame (comment pings skipped)."""
        while "\n\n" not in self._buffer:
            self._buffer += (await asyncio.wait_for(self.chunks.get(), 10)).decode()
        block, self._buffer = self._buffer.split("\n\n", 1)
        fields = dict(ln.split(": ", 1) for ln in block.splitlines() if ": " in ln)
        if "event" not in fields:
            return await self.frame()
        return fields["event"], json.loads(fields["data"])

    def close(self) -> None:
        self._gone.set()


@asynccontextmanager
async def streaming(app: FastAPI, token: str | None) -> AsyncIterator[Stream]:
    s = Stream(app, token)
    task = asyncio.create_task(s.run())
    try:
        yield s
    finally:
        s.close()
        await asyncio.wait_for(task, 10)


def sos_event(person: str = "grandma") -> Event:
    return Event(EventType.HARD_SOS, person, 1_795_000_000.0,
                 {"location": {"latitude": 51.5072, "longitude": -0.1276}, "to": PHONE})  # fmt: skip


async def test_live_sends_the_picture_then_events_redacted_for_family_and_viewer() -> None:
    app = make_app()
    feed: LiveFeed = app.state.live
    for token, role in ((ADMIN, "admin"), (AUTH["viewer"]["Authorization"][7:], "viewer")):
        async with streaming(app, token) as s:
            assert await s.frame() == ("hello", {"role": role})
            kind, snap = await s.frame()
            assert kind == "persons" and [p["id"] for p in snap["persons"]] == ["grandma", "dad"]
            latest = snap["persons"][0]["devices"][0]["latest"]
            feed.publish(sos_event())
            kind, ev = await s.frame()
            assert s.status == 200 and kind == "event" and ev["type"] == "hard_sos"
            if role == "admin":
                assert latest["latitude"] == 51.5072 and ev["to"] == PHONE
            else:
                assert latest["latitude"] == "[redacted]" and PHONE not in json.dumps(ev)
                assert ev["location"] == "[redacted]"
    assert feed.clients == 0  # every stream let go of its queue


async def test_live_needs_a_token() -> None:
    async with streaming(make_app(), None) as s:
        chunk = await asyncio.wait_for(s.chunks.get(), 10)
        assert s.status == 401 and b"bearer" in chunk


def test_a_slow_reader_loses_events_not_memory() -> None:
    feed = LiveFeed()
    with feed.client() as c:
        assert c is not None
        for _ in range(QUEUE_SIZE + 5):
            feed.publish(sos_event())
        assert c.queue.qsize() == QUEUE_SIZE and c.lost == 5


@pytest.mark.parametrize("limit", [1, 2])
async def test_too_many_screens_are_refused(limit: int) -> None:
    app = make_app()
    app.state.live.max_clients = limit
    streams = [streaming(app, ADMIN) for _ in range(limit)]
    opened = [await cm.__aenter__() for cm in streams]
    for s in opened:
        assert (await s.frame())[0] == "hello"
    async with client(app) as c:
        r = await c.get("/v1/live", headers={"Authorization": f"Bearer {ADMIN}"})
        assert r.status_code == 503
    for cm in streams:
        await cm.__aexit__(None, None, None)
