"""Conversations survive a restart, end to end: real mosquitto, the whole gateway, a stop (or a
kill -9 of a `healthgw run` process) in the middle of a conversation, a new gateway on the
same data folder, and the conversation goes on to a booking; or, idle past its timeout while
the gateway was down, it is closed at start."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.api.server import create_app
from gateway.contract.topics import intent_topic
from tests.brokers import Broker, stop_process
from tests.harness import (
    ADMIN,
    TRIAGE_CACHE,
    Watcher,
    device,
    gateway_process_env,
    make_settings,
    publish,
    running,
    spawn_gateway,
    watching,
)
from tests.phi_scan import findings

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("trained_triage")]

BOOKING_TOOLS = [
    "retrieve_past_complaints", "get_input_from_user", "get_available_specialists",
    "get_input_from_user", "confirm_appointment", "save_appointment_history",
    "store_symptoms", "notify_user",
]  # fmt: skip


def replies(w: Watcher, person: str = "dad") -> list[dict[str, Any]]:
    return w.of(f"{person}/reply")


async def next_question(w: Watcher, seen: int, person: str = "dad") -> dict[str, Any]:
    got = await w.wait(
        lambda: [r for r in replies(w, person)[seen:] if r.get("expects_answer")], within=30
    )
    return dict(got[0])


async def to_the_offer(w: Watcher, dev: Any) -> str:
    """Symptoms, then the day: up to the assistant's "Shall I book it?"."""
    n = len(replies(w))
    await publish(
        dev, intent_topic("dad"), {"text": "I've had chest tightness when I climb stairs"}
    )
    q = await next_question(w, n)
    sid = str(q["session_id"])
    n = len(replies(w))
    await publish(dev, intent_topic("dad"), {"text": "Tuesday morning", "session_id": sid})
    offer = await next_question(w, n)
    assert offer["answer_type"] == "yes_no" and offer["session_id"] == sid
    return sid


def one_completed_booking(trajs: list[dict[str, Any]], run: dict[str, Any] | None) -> None:
    assert len(trajs) == 1, "one run for the whole conversation, across the restart"
    assert run is not None and run["status"] == "completed"
    states = run["trajectory"]["interaction_trajectory"]
    assert [s["value"]["tool"] for s in states if s["from"] == "caller"] == BOOKING_TOOLS
    assert states[-1]["value"]["action"] == "<END>"


async def completed(asm: Any, person: str = "dad") -> list[dict[str, Any]]:
    for _ in range(100):
        trajs = [
            t
            for t in asm.gateway.api.trajectories(person=person, category=None, limit=20)
            if t["category"] not in ("hard_sos", "end_sos", "soft_sos")
        ]
        if trajs and all(t["status"] == "completed" for t in trajs):
            return trajs
        await asyncio.sleep(0.1)
    raise AssertionError("the run did not complete")


async def test_a_conversation_goes_on_after_a_gateway_restart(
    tmp_path: Path, broker: Broker
) -> None:
    data = tmp_path / "data"
    async with watching(broker) as w, device(broker) as dev:
        async with running(make_settings(data, broker, None)) as asm:
            sid = await to_the_offer(w, dev)
            assert asm.gateway.stats()["assistant"]["open"] == 1
        n = len(replies(w))
        async with running(make_settings(data, broker, None)) as asm:
            assert asm.conversations is not None and asm.conversations.session_open(sid)
            # A watch has no session ids: its bare "yes" goes to the resumed session.
            await publish(dev, intent_topic("dad"), {"text": "yes please"})
            done = await w.wait(
                lambda: [r for r in replies(w)[n:] if "booked" in r["text"]], within=30
            )
            assert done[0]["session_id"] == sid
            assert not [r for r in replies(w)[n:] if r.get("expects_answer")]  # nothing re-asked
            booked = await w.wait(lambda: w.events("appointment_booked"))
            assert booked[0]["specialization"] == "cardiologist"
            assert asm.memory is not None
            assert [b["specialist_id"] for b in asm.memory.bookings("dad")] == ["CARD-101"]
            trajs = await completed(asm)
            run = asm.gateway.api.trajectory(booked[0]["run_id"])
            one_completed_booking(trajs, run)
            assert asm.gateway.stats()["assistant"]["resumed"] == 1


async def test_a_kill_9_mid_conversation_then_a_new_gateway_books(
    tmp_path: Path, broker: Broker
) -> None:
    data = tmp_path / "data"
    log = tmp_path / "gateway.log"
    env = gateway_process_env(
        data,
        broker.url,
        HEALTHGW_ASSISTANT_ENABLED="true",
        HEALTHGW_TRIAGE_CACHE_DIR=str(TRIAGE_CACHE),
    )
    proc = spawn_gateway(env, log)
    try:
        async with watching(broker) as w, device(broker) as dev:
            await w.wait(lambda: any(t == "gateway/testhub/status" and p == "online"
                                     for t, p in w.messages), within=30)  # fmt: skip
            sid = await to_the_offer(w, dev)
            proc.send_signal(signal.SIGKILL)  # no stop hooks: only what was written counts
            proc.wait(10)
    finally:
        stop_process(proc)
    # A new gateway on the same folder; the user answers over the REST chat, by session id.
    async with running(make_settings(data, broker, None)) as asm:
        app = create_app(asm.gateway.api, admin_token=ADMIN)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://hub"
        ) as c:
            r = await c.post(
                "/v1/persons/dad/chat",
                # Generous: the new gateway loads its triage model before the run goes on.
                json={"text": "yes", "session_id": sid, "wait_s": 120},
                headers={"Authorization": f"Bearer {ADMIN}"},
            )
        body = r.json()
        assert r.status_code == 200 and body["session_id"] == sid
        # Never asked again: the saved offer's "yes" is the answer.
        assert not body["expects_answer"], body
        assert asm.memory is not None
        if not body["done"]:  # still working when the wait ended (a loaded machine)
            for _ in range(600):
                if asm.memory.bookings("dad"):
                    break
                await asyncio.sleep(0.1)
        else:
            assert "booked" in body["replies"][-1]["text"], body
        assert [b["specialist_id"] for b in asm.memory.bookings("dad")] == ["CARD-101"], body
        trajs = await completed(asm)
        one_completed_booking(trajs, asm.gateway.api.trajectory(trajs[0]["run_id"]))
    # The killed process's log (INFO, the default): no PHI.
    text = log.read_text(errors="replace")
    assert "connected to broker" in text  # the scan saw real logs
    hits = [f for line in text.splitlines() for f in findings(line)]
    assert not hits, hits[:10]
    assert "chest" not in text


async def test_idle_past_the_timeout_while_down_is_closed_at_start(
    tmp_path: Path, broker: Broker
) -> None:
    data = tmp_path / "data"
    async with watching(broker) as w, device(broker) as dev:
        async with running(make_settings(data, broker, None)) as asm:
            await publish(dev, intent_topic("grandma"), {"text": "My eyes are red and itchy"})
            q = await next_question(w, 0, "grandma")
            asked = time.monotonic()
        # Down for longer than the (new) idle timeout, counted from when the question went out.
        timeout_s = 2.0
        await asyncio.sleep(max(0.0, timeout_s + 0.5 - (time.monotonic() - asked)))
        settings = make_settings(data, broker, None, assistant_idle_timeout_s=timeout_s)
        async with running(settings) as asm:
            bye = await w.wait(
                lambda: [r for r in replies(w, "grandma") if "did not hear back" in r["text"]],
                within=30,
            )
            assert bye[0]["session_id"] == q["session_id"]
            assert asm.conversations is not None
            await w.wait(lambda: not asm.conversations.session_open(q["session_id"]))
            assert asm.memory is not None
            assert "eyes" in asm.memory.complaints("grandma")[0]["symptoms"]
            assert asm.memory.bookings("grandma") == []
            stats = asm.gateway.stats()["assistant"]
            assert stats["expired_while_down"] == 1 and stats["timeouts"] == 1
            # Not resumed: the next message is a new conversation.
            n = len(replies(w, "grandma"))
            await publish(dev, intent_topic("grandma"), {"text": "Still itchy eyes"})
            again = await next_question(w, n, "grandma")
            assert again["session_id"] != q["session_id"]
            # The expired run was closed by the usual no-answer path, in the same trajectory.
            runs = asm.gateway.api.trajectories(person="grandma", category=None, limit=10)
            closed = [t for t in runs if t["status"] == "completed"]
            assert len(closed) == 1
            run = asm.gateway.api.trajectory(closed[0]["run_id"])
            assert run is not None
            states = run["trajectory"]["interaction_trajectory"]
            calls = [s["value"]["tool"] for s in states if s["from"] == "caller"]
            assert calls[-2:] == ["store_symptoms", "notify_user"]
            errors = [s["value"].get("error", {}).get("type") for s in states
                      if s["from"] == "observation"]  # fmt: skip
            assert errors.count("ToolNoAnswer") == 1
