"""The assistant in its own process (HEALTHGW_ASSISTANT_PROCESS=own), end to end: real
mosquitto, the whole gateway, a real spawned child. A conversation goes to a booking through
the child; the child killed mid-conversation is restarted, the user is told, and the
conversation resumes; an SOS is texted with the child stopped."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.assistant.process.proxy import DOWN, RESTARTING, AssistantProcess
from gateway.contract.topics import intent_topic, sos_topic
from simulators.sms_sink import SmsSink
from tests.brokers import Broker
from tests.harness import Watcher, device, make_settings, publish, running, watching

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("trained_triage")]

AMB_WEST = "+447700900902"
ANA, TOM = "+447700900201", "+447700900202"


@pytest.fixture
def sink() -> Iterator[SmsSink]:
    with SmsSink() as s:
        yield s


def replies(w: Watcher, person: str = "dad") -> list[dict[str, Any]]:
    return w.of(f"{person}/reply")


async def next_question(w: Watcher, seen: int, person: str = "dad") -> dict[str, Any]:
    got = await w.wait(
        lambda: [r for r in replies(w, person)[seen:] if r.get("expects_answer")], within=30
    )
    out: dict[str, Any] = got[0]
    return out


def proxy(asm: Any) -> AssistantProcess:
    assert isinstance(asm.conversations, AssistantProcess)
    return asm.conversations


async def test_booking_through_the_child_process(tmp_path: Path, broker: Broker) -> None:
    s = make_settings(tmp_path / "data", broker, None, assistant_process="own")
    async with watching(broker) as w, running(s) as asm, device(broker) as dev:
        p = proxy(asm)
        assert p.pid is not None and p.pid != os.getpid()
        assert os.getpriority(os.PRIO_PROCESS, p.pid) >= s.assistant_process_nice
        await publish(dev, intent_topic("dad"), {"text": "I've had chest tightness on stairs"})
        q = await next_question(w, 0)
        sid = q["session_id"]
        assert p.session_open(sid)
        n = len(replies(w))
        await publish(dev, intent_topic("dad"), {"text": "Tuesday morning", "session_id": sid})
        offer = await next_question(w, n)
        assert offer["answer_type"] == "yes_no" and "Dr. Priya Nair" in offer["text"]
        n = len(replies(w))
        await publish(dev, intent_topic("dad"), {"text": "yes please"})
        done = await w.wait(lambda: [r for r in replies(w)[n:] if "booked" in r["text"]], within=30)
        assert done[0]["session_id"] == sid
        # The booking event is emitted by the gateway process, without symptoms.
        booked = await w.wait(lambda: w.events("appointment_booked"))
        assert booked[0]["specialization"] == "cardiologist"
        assert "chest" not in json.dumps(booked[0])
        await w.wait(lambda: not p.session_open(sid))
        # The child wrote the memory and the trajectory to healthgw.db; the gateway reads them.
        assert asm.memory is not None
        assert asm.memory.bookings("dad")[0]["specialist_id"] == "CARD-101"
        traj = await w.wait(lambda: asm.gateway.api.trajectory(booked[0]["run_id"]))
        assert traj["person"] == "dad"
        # Every tool call the child made is in the gateway's audit log, redacted.
        asm.gateway.store.flush()
        audit = asm.gateway.store.audit(limit=100)
        assert any(a["tool"] == "confirm_appointment" and a["ok"] for a in audit)
        assert "chest" not in json.dumps([a for a in audit if a["tool"] != "notify_user"])
        stats = asm.gateway.stats()["assistant"]
        assert stats["sessions"] == 1 and stats["process"]["deaths"] == 0
        assert stats["tools"]["confirm_appointment"]["calls"] == 1


async def test_child_killed_mid_conversation_restarts_and_resumes(
    tmp_path: Path, broker: Broker
) -> None:
    s = make_settings(tmp_path / "data", broker, None, assistant_process="own")
    async with watching(broker) as w, running(s) as asm, device(broker) as dev:
        p = proxy(asm)
        await publish(dev, intent_topic("dad"), {"text": "I've had chest tightness on stairs"})
        q = await next_question(w, 0)
        sid = q["session_id"]
        first = p.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        # The person in the conversation is told, and the death is counted.
        told = await w.wait(lambda: [r for r in replies(w) if r["text"] == RESTARTING])
        assert told[0]["session_id"] == sid and told[0]["expects_answer"] is False
        await w.wait(lambda: p.up and p.pid not in (None, first), within=30)
        stats = asm.gateway.stats()["assistant"]["process"]
        assert stats["deaths"] == 1 and stats["spawns"] == 2
        # The new child resumed the conversation from healthgw.db: the answer goes on to it.
        assert p.session_open(sid)
        n = len(replies(w))
        await publish(dev, intent_topic("dad"), {"text": "Tuesday morning", "session_id": sid})
        offer = await next_question(w, n)
        assert offer["session_id"] == sid and "Dr. Priya Nair" in offer["text"]
        n = len(replies(w))
        await publish(dev, intent_topic("dad"), {"text": "yes"})
        await w.wait(lambda: [r for r in replies(w)[n:] if "booked" in r["text"]], within=30)
        assert asm.memory is not None and len(asm.memory.bookings("dad")) == 1


async def test_message_while_the_child_is_down_is_answered(tmp_path: Path, broker: Broker) -> None:
    s = make_settings(tmp_path / "data", broker, None, assistant_process="own")
    async with watching(broker) as w, running(s) as asm, device(broker) as dev:
        p = proxy(asm)
        await p.stop()  # stopped for good: no restart
        assert not p.up
        await publish(dev, intent_topic("grandma"), {"text": "my knees hurt"})
        got = await w.wait(lambda: [r for r in replies(w, "grandma") if r["text"] == DOWN])
        assert got[0]["expects_answer"] is False
        assert asm.gateway.stats()["assistant"]["process"]["down_replies"] == 1


async def test_sos_is_texted_with_the_child_stopped(
    tmp_path: Path, broker: Broker, sink: SmsSink
) -> None:
    s = make_settings(tmp_path / "data", broker, sink, assistant_process="own")
    async with watching(broker) as w, running(s) as asm, device(broker) as dev:
        p = proxy(asm)
        pid = p.pid
        assert pid is not None
        await p.stop()
        # The child is gone (not merely idle): the SOS path never needed it.
        await asyncio.to_thread(_gone, pid)
        press = {
            "action": "start",
            "ts": time.time(),
            "location": {"latitude": 51.5, "longitude": -0.13},
        }
        await publish(dev, sos_topic("grandma", "watch-maria"), press)
        texts = await asyncio.to_thread(sink.wait_for, 3, 10)
        assert sorted(m.to for m in texts) == sorted([AMB_WEST, ANA, TOM])
        await w.wait(lambda: w.events("hard_sos"))


def _gone(pid: int, within_s: float = 10.0) -> None:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError("the assistant process is still running")
