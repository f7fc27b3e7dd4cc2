"""Reminders end to end: API prescription -> confirm -> a dose reminder on the watch -> the
wearer answers on the ack topic -> adherence over the API. Real broker, whole gateway."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from gateway.api.server import create_app
from gateway.contract.topics import ack_topic
from tests.brokers import Broker
from tests.harness import ADMIN, FAMILY, device, make_settings, publish, running, watching

pytestmark = pytest.mark.integration


async def test_prescription_to_adherence(tmp_path: Path, broker: Broker) -> None:
    s = make_settings(tmp_path / "data", broker, None)
    async with watching(broker) as w, running(s) as asm, device(broker) as dev:
        gw = asm.gateway
        app = create_app(gw.api, admin_token=ADMIN, family_tokens=[FAMILY])
        adm = {"Authorization": f"Bearer {ADMIN}"}
        fam = {"Authorization": f"Bearer {FAMILY}"}
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://hub"
        ) as c:
            unclear = (
                await c.post(
                    "/v1/persons/grandma/prescriptions", json={"text": "Aspirin 75mg"}, headers=adm
                )
            ).json()
            assert unclear["id"] is None and "How often" in unclear["questions"][0]
            assert (
                await c.post("/v1/persons/grandma/prescriptions", json={"text": "x"}, headers=fam)
            ).status_code == 403
            refused = (await c.post("/v1/persons/grandma/prescriptions",
                                    json={"text": "Methotrexate 10 mg daily"}, headers=adm)).json()  # fmt: skip
            assert refused["refused"] is True and refused["id"] is None
            assert "weekly" in " ".join(refused["questions"]).lower()
            r = (await c.post("/v1/persons/grandma/prescriptions",
                              json={"text": "Paracetamol 1 g every 4 hours"}, headers=adm)).json()  # fmt: skip
            assert r["needs_confirmation"] and "6000 mg" in r["warnings"][0]
            r = (await c.post("/v1/persons/grandma/prescriptions",
                              json={"text": "Metformin 500 mg twice daily after meals for 30 days"}, headers=adm)).json()  # fmt: skip
            assert r["summary"].startswith("Metformin 500 mg, twice daily at 08:30, 19:30")
            listed = (await c.get("/v1/persons/grandma/prescriptions", headers=fam)).json()
            assert {x["status"] for x in listed} == {"proposed"}
            done = (
                await c.post(f"/v1/persons/grandma/prescriptions/{r['id']}/confirm", headers=adm)
            ).json()
            assert done["status"] == "active" and len(done["schedule"]) == 2
            # The 08:30 job fires (called directly rather than waiting for 08:30).
            assert gw.meds is not None
            dose = await asm.meds.fire(r["id"], "grandma", "metformin")
            note = await w.wait(
                lambda: [n for n in w.of("grandma/notify") if n.get("kind") == "reminder"]
            )
            assert note[0]["prompt_id"] == dose
            await publish(
                dev,
                ack_topic("grandma", "watch-maria"),
                {"ok": True, "prompt_id": dose, "answer": "taken"},
            )
            for _ in range(50):
                adh = (await c.get("/v1/persons/grandma/adherence", headers=fam)).json()
                if adh["medications"].get("metformin", {}).get("taken"):
                    break
                await asyncio.sleep(0.1)
            assert adh["medications"]["metformin"]["taken"] == 1
            assert gw.counters["dose_answers"] == 1
            # The answer did not touch the "are you OK?" prompts.
            assert w.events("prompt_answered") == []
            stopped = await c.delete(f"/v1/persons/grandma/prescriptions/{r['id']}", headers=adm)
            assert stopped.json()["status"] == "stopped"
