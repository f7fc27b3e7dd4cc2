"""The assistant's own process when its gateway is killed (`kill -9` of `healthgw run`): the
child notices its pipe closing and exits by itself, and a new gateway's child resumes the
conversation from healthgw.db to a booking."""

from __future__ import annotations

import asyncio
import json
import signal
import time
import urllib.request
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.api.server import create_app
from tests.agents.assistant.test_conversation_restart_e2e import to_the_offer
from tests.brokers import Broker, stop_process
from tests.harness import (
    ADMIN,
    TRIAGE_CACHE,
    device,
    gateway_process_env,
    make_settings,
    running,
    spawn_gateway,
    watching,
)

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("trained_triage")]


def _stats(port: int) -> dict[str, Any]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/stats", headers={"Authorization": f"Bearer {ADMIN}"}
    )
    with urllib.request.urlopen(req, timeout=5) as r:
        out: dict[str, Any] = json.loads(r.read())
        return out


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan may wait for a reaper that never comes)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    state = next((ln.split()[1] for ln in status.splitlines() if ln.startswith("State:")), "")
    return state not in ("Z", "X")


def _exits(pid: int, within_s: float) -> bool:
    end = time.monotonic() + within_s
    while _running(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.1)
    return True


async def test_gateway_kill_9_the_child_exits_and_a_new_child_resumes(
    tmp_path: Path, broker: Broker
) -> None:
    data = tmp_path / "data"
    env = gateway_process_env(
        data,
        broker.url,
        HEALTHGW_ASSISTANT_ENABLED="true",
        HEALTHGW_ASSISTANT_PROCESS="own",
        HEALTHGW_TRIAGE_CACHE_DIR=str(TRIAGE_CACHE),
    )
    port = int(env["HEALTHGW_API_PORT"])
    proc = spawn_gateway(env, tmp_path / "gateway.log")
    try:
        async with watching(broker) as w, device(broker) as dev:
            await w.wait(lambda: any(t == "gateway/testhub/status" and p == "online"
                                     for t, p in w.messages), within=30)  # fmt: skip
            sid = await to_the_offer(w, dev)
            child = (await asyncio.to_thread(_stats, port))["assistant"]["process"]["pid"]
            assert isinstance(child, int) and child != proc.pid and _running(child)
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
    finally:
        stop_process(proc)
    assert await asyncio.to_thread(_exits, child, 15.0), "the child outlived its gateway"
    # A new gateway (and child) on the same folder: the answer finds the resumed session.
    s = make_settings(data, broker, None, assistant_process="own")
    async with running(s) as asm:
        app = create_app(asm.gateway.api, admin_token=ADMIN)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://hub"
        ) as c:
            r = await c.post(
                "/v1/persons/dad/chat",
                json={"text": "yes", "session_id": sid, "wait_s": 60},
                headers={"Authorization": f"Bearer {ADMIN}"},
            )
        body = r.json()
        assert r.status_code == 200 and body["session_id"] == sid
        assert body["done"] and "booked" in body["replies"][-1]["text"]
        assert asm.memory is not None
        assert [b["specialist_id"] for b in asm.memory.bookings("dad")] == ["CARD-101"]
        assert asm.gateway.stats()["assistant"]["resumed"] == 1


def test_a_gateway_on_another_clock_keeps_its_conversations_in_process(
    tmp_path: Path, broker: Broker
) -> None:
    from agents.assistant.conversations import Conversations
    from gateway.base.clock import ManualClock
    from healthgw.assembly.hub import assemble

    s = make_settings(tmp_path / "data", broker, None, assistant_process="own")
    # Built, not started: the child would run on the system clock, so it is not used.
    assert isinstance(assemble(s, clock=ManualClock(1_800_000_000.0)).conversations, Conversations)
    assert not isinstance(assemble(s).conversations, Conversations)
