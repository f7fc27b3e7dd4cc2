"""The assistant end to end: real mosquitto, the whole gateway, intents in and replies out on
MQTT, the REST chat and the WebSocket chat over a real uvicorn server."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from gateway.api.server import create_app
from gateway.contract.topics import intent_topic
from healthgw.assembly.hub import serve_api
from tests.brokers import Broker
from tests.harness import ADMIN, FAMILY, Watcher, device, make_settings, publish, running, watching

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("trained_triage")]


def replies(w: Watcher, person: str = "dad") -> list[dict[str, Any]]:
    return w.of(f"{person}/reply")


async def next_question(w: Watcher, seen: int, person: str = "dad") -> dict[str, Any]:
    got = await w.wait(
        lambda: [r for r in replies(w, person)[seen:] if r.get("expects_answer")], within=30
    )
    return got[0]


async def test_symptoms_to_booking_over_mqtt(tmp_path: Path, broker: Broker) -> None:
    s = make_settings(tmp_path / "data", broker, None)
    async with watching(broker) as w, running(s) as asm, device(broker) as dev:
        gw = asm.gateway
        await publish(
            dev, intent_topic("dad"), {"text": "I've had chest tightness when I climb stairs"}
        )
        q = await next_question(w, 0)
        sid = q["session_id"]
        assert q["answer_type"] == "free_text" and "time" in q["text"].lower()
        n = len(replies(w))
        await publish(dev, intent_topic("dad"), {"text": "Tuesday morning", "session_id": sid})
        offer = await next_question(w, n)
        assert offer["answer_type"] == "yes_no" and "Dr. Priya Nair" in offer["text"]
        n = len(replies(w))
        # A watch has no session ids: a bare answer goes to the open session.
        await publish(dev, intent_topic("dad"), {"text": "yes please"})
        done = await w.wait(lambda: [r for r in replies(w)[n:] if "booked" in r["text"]], within=30)
        assert done[0]["session_id"] == sid and done[0]["expects_answer"] is False
        booked = await w.wait(lambda: w.events("appointment_booked"))
        assert booked[0]["specialization"] == "cardiologist"
        assert "chest" not in json.dumps(booked[0])  # no symptoms on the family's event feed
        # Everything is remembered and the agent log is there, in the brief's format.
        assert asm.memory.bookings("dad")[0]["specialist_id"] == "CARD-101"
        assert "chest" in asm.memory.complaints("dad")[0]["symptoms"]
        run_id = booked[0]["run_id"]
        for _ in range(50):
            traj = gw.api.trajectory(run_id)
            if traj and traj["status"] == "completed":
                break
            await asyncio.sleep(0.1)
        assert traj is not None
        states = traj["trajectory"]["interaction_trajectory"]
        tools = [st["value"]["tool"] for st in states if st["from"] == "caller"]
        assert tools == [
            "retrieve_past_complaints", "get_input_from_user", "get_available_specialists",
            "get_input_from_user", "confirm_appointment", "save_appointment_history",
            "store_symptoms", "notify_user",
        ]  # fmt: skip
        assert states[-1]["value"]["action"] == "<END>"
        # Every tool call is audited, with the answers and symptoms redacted.
        gw.store.flush()
        audit = gw.store.audit(limit=100)
        assert any(a["tool"] == "confirm_appointment" and a["ok"] for a in audit)
        assert "chest" not in json.dumps([a for a in audit if a["tool"] != "notify_user"])


async def test_decline_and_idle_timeout(tmp_path: Path, broker: Broker) -> None:
    s = make_settings(tmp_path / "data", broker, None, assistant_idle_timeout_s=1.0)
    async with watching(broker) as w, running(s) as asm, device(broker) as dev:
        await publish(dev, intent_topic("grandma"), {"text": "My eyes are red and itchy"})
        q = await next_question(w, 0, "grandma")
        # Nobody answers: the session closes cleanly, the symptoms are kept, the user is told.
        bye = await w.wait(
            lambda: [r for r in replies(w, "grandma") if "did not hear back" in r["text"]],
            within=15,
        )
        assert bye[0]["session_id"] == q["session_id"]
        await w.wait(lambda: not asm.conversations.session_open(q["session_id"]))
        assert "eyes" in asm.memory.complaints("grandma")[0]["symptoms"]
        assert asm.memory.bookings("grandma") == []
        assert asm.gateway.stats()["assistant"]["timeouts"] == 1


async def test_rest_chat_and_roles(tmp_path: Path, broker: Broker) -> None:
    s = make_settings(tmp_path / "data", broker, None)
    async with running(s) as asm:
        app = create_app(asm.gateway.api, admin_token=ADMIN, family_tokens=[FAMILY])
        adm = {"Authorization": f"Bearer {ADMIN}"}
        fam = {"Authorization": f"Bearer {FAMILY}"}
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://hub"
        ) as c:
            body = {"text": "I want to lose weight and eat better"}
            assert (await c.post("/v1/persons/dad/chat", json=body, headers=fam)).status_code == 403
            assert (
                await c.post("/v1/persons/nobody/chat", json=body, headers=adm)
            ).status_code == 404
            assert (
                await c.post("/v1/persons/dad/chat", json={"text": ""}, headers=adm)
            ).status_code == 422
            r = (await c.post("/v1/persons/dad/chat", json=body, headers=adm)).json()
            assert r["expects_answer"] and not r["done"]
            sid = r["session_id"]
            r = (
                await c.post(
                    "/v1/persons/dad/chat", json={"text": "monday", "session_id": sid}, headers=adm
                )
            ).json()
            assert "dietician" in r["replies"][-1]["text"].lower() and r["expects_answer"]
            r = (
                await c.post(
                    "/v1/persons/dad/chat", json={"text": "no", "session_id": sid}, headers=adm
                )
            ).json()
            assert r["done"] and not r["expects_answer"]
            assert "noted your symptoms" in r["replies"][-1]["text"]
            trajs = (await c.get("/v1/trajectories", headers=fam, params={"person": "dad"})).json()
            assert any(t.get("category") == "dietician" for t in trajs)
            # Declined: nothing booked, the complaint remembered (its text for the admin only:
            # it is PHI; the family see that there was one, and when).
            appts = (await c.get("/v1/persons/dad/appointments", headers=fam)).json()
            assert appts == {"bookings": [], "appointment_history": []}
            fam_mem = (await c.get("/v1/persons/dad/memory", headers=fam)).json()
            assert fam_mem["complaints"][0]["symptoms"] == "[redacted]"
            assert "weight" not in json.dumps(fam_mem)
            mem = (await c.get("/v1/persons/dad/memory", headers=adm)).json()
            assert "weight" in mem["complaints"][0]["symptoms"]


async def test_a_carer_chats_on_the_persons_behalf_and_the_booking_is_theirs(
    tmp_path: Path, broker: Broker
) -> None:
    # The console's admin writing for Jon ("my husband...", "he..."): triaged as his complaint
    # and booked for him, as when he writes himself.
    s = make_settings(tmp_path / "data", broker, None)
    async with running(s) as asm:
        app = create_app(asm.gateway.api, admin_token=ADMIN)
        adm = {"Authorization": f"Bearer {ADMIN}"}
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://hub"
        ) as c:

            async def say(text: str, sid: str | None = None) -> dict[str, Any]:
                body = {"text": text, "session_id": sid, "wait_s": 60}
                r = await c.post("/v1/persons/dad/chat", json=body, headers=adm)
                assert r.status_code == 200, r.text
                out: dict[str, Any] = r.json()
                return out

            r = await say(
                "My husband gets a tight chest when he climbs the stairs, it started last month"
            )
            sid = r["session_id"]
            while r["expects_answer"] and "book" not in r["replies"][-1]["text"].lower():
                r = await say("Tuesday morning", sid)
            assert "Dr. Priya Nair" in r["replies"][-1]["text"], r
            r = await say("yes", sid)
            assert r["done"] and "booked" in r["replies"][-1]["text"], r
        assert asm.memory is not None
        assert [b["specialist_id"] for b in asm.memory.bookings("dad")] == ["CARD-101"]
        assert "chest" in asm.memory.complaints("dad")[0]["symptoms"]


async def test_websocket_chat(tmp_path: Path, broker: Broker) -> None:
    s = make_settings(tmp_path / "data", broker, None)
    async with running(s) as asm:
        api = asyncio.create_task(serve_api(asm.gateway))
        try:
            url = f"ws://127.0.0.1:{s.api_port}/v1/persons/dad/chat/ws"
            for _ in range(100):  # until uvicorn listens
                try:
                    async with websockets.connect(url, subprotocols=["bearer", "bearer.wrong"]):
                        pass
                except OSError:
                    await asyncio.sleep(0.1)
                    continue
                except websockets.InvalidStatus as e:
                    # A wrong token is refused in the handshake, before any chat.
                    assert e.response.status_code == 403
                    break
            else:
                raise AssertionError("the API did not come up")
            # The token rides in a subprotocol; only the name "bearer" comes back.
            async with websockets.connect(url, subprotocols=["bearer", f"bearer.{ADMIN}"]) as ws:
                assert ws.subprotocol == "bearer"
                await ws.send(json.dumps({"text": "I have a rash on my arms that itches"}))
                ack = json.loads(await ws.recv())
                assert ack["accepted"] is True
                q = json.loads(await asyncio.wait_for(ws.recv(), 30))
                assert q["expects_answer"] and q["session_id"] == ack["session_id"]
                await ws.send("not json")
                assert "error" in json.loads(await ws.recv())
        finally:
            api.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await api
