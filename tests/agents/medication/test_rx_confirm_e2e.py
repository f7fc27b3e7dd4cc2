"""A prescription confirmed or declined by the person, end to end: real mosquitto, the whole
gateway. The API proposes; the watch gets a `confirm` prompt and answers on its ack topic
(a "no" as `ok: false` declines and never becomes an SOS); the chat answers over MQTT."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from gateway.api.server import create_app
from gateway.contract.topics import ack_topic, intent_topic
from tests.brokers import Broker
from tests.harness import ADMIN, FAMILY, device, make_settings, publish, running, watching

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("trained_triage")]


async def test_watch_and_chat_answers(tmp_path: Path, broker: Broker) -> None:
    s = make_settings(tmp_path / "data", broker, None)
    async with watching(broker) as w, running(s) as asm, device(broker) as dev:
        gw = asm.gateway
        app = create_app(gw.api, admin_token=ADMIN, family_tokens=[FAMILY])
        adm = {"Authorization": f"Bearer {ADMIN}"}
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://hub"
        ) as c:

            async def propose(text: str) -> str:
                r = await c.post(
                    "/v1/persons/grandma/prescriptions", json={"text": text}, headers=adm
                )
                rx: str = r.json()["id"]
                return rx

            async def status(rx: str) -> str:
                listed = (await c.get("/v1/persons/grandma/prescriptions", headers=adm)).json()
                return str(next(p["status"] for p in listed if p["id"] == rx))

            async def until(rx: str, want: str) -> str:
                for _ in range(100):
                    if (got := await status(rx)) == want:
                        return got
                    await asyncio.sleep(0.05)
                return await status(rx)

            # 1. The watch says no with only `ok: false`.
            rx1 = await propose("Bisoprolol 5 mg OD")
            prompt = await w.wait(
                lambda: [n for n in w.of("grandma/notify") if n.get("kind") == "confirm"]
            )
            assert prompt[0]["prompt_id"] == f"rx-{rx1}" and "Bisoprolol" in prompt[0]["text"]
            await publish(
                dev, ack_topic("grandma", "watch-maria"), {"ok": False, "prompt_id": f"rx-{rx1}"}
            )
            assert await until(rx1, "stopped") == "stopped"
            # 2. The watch says yes.
            rx2 = await propose("Metformin 500 mg twice daily after meals for 30 days")
            await w.wait(lambda: [n for n in w.of("grandma/notify")
                                  if n.get("prompt_id") == f"rx-{rx2}"])  # fmt: skip
            await publish(dev, ack_topic("grandma", "watch-maria"),
                          {"ok": True, "prompt_id": f"rx-{rx2}", "answer": "yes"})  # fmt: skip
            assert await until(rx2, "active") == "active"
            # 3. The chat: a bare "yes" over MQTT (a watch's chat has no session id).
            rx3 = await propose("Amlodipine 5 mg once daily")
            await w.wait(lambda: [r for r in w.of("grandma/reply")
                                  if r.get("session_id") == f"rx-{rx3}"])  # fmt: skip
            await publish(dev, intent_topic("grandma"), {"text": "yes"})
            assert await until(rx3, "active") == "active"
            done = await w.wait(lambda: [r for r in w.of("grandma/reply")
                                         if r.get("session_id") == f"rx-{rx3}"
                                         and not r["expects_answer"]])  # fmt: skip
            assert "set up" in done[0]["text"]
            # 4. No answer: nothing scheduled; the family's admin confirms through the API.
            rx4 = await propose("Atorvastatin 20 mg at night")
            assert await status(rx4) == "proposed"
            ok = await c.post(f"/v1/persons/grandma/prescriptions/{rx4}/confirm", headers=adm)
            assert ok.json()["status"] == "active"
        # None of it touched the "are you OK?" prompts or raised an SOS.
        await asyncio.sleep(0.3)
        assert w.events("hard_sos") == [] and w.events("prompt_answered") == []
        assert w.events("sos_escalated") == []
        assert gw.counters["dose_answers"] == 2
