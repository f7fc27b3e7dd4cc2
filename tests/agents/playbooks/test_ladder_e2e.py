"""SOS escalation until acknowledged, against the real twilio SDK and a local
Twilio-compatible endpoint: it climbs, stops on an SMS "OK" (signed like Twilio signs it),
stops when the SOS ends, and resumes after a restart without texting anyone twice."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from twilio.request_validator import RequestValidator

from gateway.api.server import create_app
from gateway.contract.topics import ack_topic, sos_topic
from simulators.sms_sink import SmsSink
from tests.brokers import Broker
from tests.harness import ADMIN, FAMILY, TOKEN, device, make_settings, publish, running, watching

pytestmark = pytest.mark.integration

AMB_WEST = "+447700900902"
ANA, TOM = "+447700900201", "+447700900202"


@pytest.fixture
def sink() -> Iterator[SmsSink]:
    with SmsSink() as s:
        yield s


def press() -> dict[str, object]:
    return {
        "action": "start",
        "ts": time.time(),
        "location": {"latitude": 51.5, "longitude": -0.13},
    }


async def test_ladder_climbs_then_reports_unacknowledged(
    tmp_path: Path, broker: Broker, sink: SmsSink
) -> None:
    s = make_settings(tmp_path / "data", broker, sink, sos_ack_window_s=0.6)
    async with watching(broker) as w, running(s), device(broker) as dev:
        await publish(dev, sos_topic("grandma", "watch-maria"), press())
        texts = await asyncio.to_thread(sink.wait_for, 8, 20)
        first, ladder = texts[:3], texts[3:]
        assert sorted(m.to for m in first) == sorted([AMB_WEST, ANA, TOM])
        # Contacts one by one in the file's order, then everyone, then the ambulance again.
        assert [m.to for m in ladder[:2]] == [ANA, TOM]
        assert sorted(m.to for m in ladder[2:4]) == sorted([ANA, TOM])
        assert ladder[4].to == AMB_WEST and "REPEAT" in ladder[4].body
        assert all("Reply OK" in m.body for m in ladder[:4])
        levels = await w.wait(
            lambda: len(w.events("sos_unacknowledged")) >= 5 and w.events("sos_unacknowledged")
        )
        assert [e["level"] for e in levels] == [
            "contact 1",
            "contact 2",
            "all contacts",
            "ambulance",
            "exhausted",
        ]
        await asyncio.sleep(1.5)
        assert len(sink.messages) == 8  # then it stops


async def test_an_sms_ok_stops_the_ladder(tmp_path: Path, broker: Broker, sink: SmsSink) -> None:
    s = make_settings(
        tmp_path / "data", broker, sink, sos_ack_window_s=0.8, public_url="http://hub"
    )
    async with watching(broker) as w, running(s) as asm, device(broker) as dev:
        await publish(dev, sos_topic("grandma", "watch-maria"), press())
        texts = await asyncio.to_thread(sink.wait_for, 4, 20)  # the first ladder text (to Ana)
        # Every text asked Twilio for delivery reports.
        assert {m.status_callback for m in texts} == {"http://hub/v1/sms/status"}
        app = create_app(
            asm.gateway.api, admin_token=ADMIN, family_tokens=[FAMILY], twilio_auth_token=TOKEN
        )
        url = "http://hub/v1/sms/inbound"
        params = {
            "MessageSid": "SM" + "a" * 32,
            "From": ANA,
            "To": "+15005550006",
            "Body": "OK on my way",
        }
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://hub"
        ) as c:
            forged = await c.post(url, content=urlencode(params),
                                  headers={"Content-Type": "application/x-www-form-urlencoded", "X-Twilio-Signature": "bad"})  # fmt: skip
            assert forged.status_code == 403
            sig = RequestValidator(TOKEN).compute_signature(url, params)
            r = await c.post(url, content=urlencode(params),
                             headers={"Content-Type": "application/x-www-form-urlencoded", "X-Twilio-Signature": sig})  # fmt: skip
            assert r.status_code == 200 and "know you are helping" in r.text
            # Twilio reports the ambulance text delivered (signed like Twilio signs it).
            amb = next(m for m in texts if m.to == AMB_WEST)
            surl = "http://hub/v1/sms/status"
            report = {"MessageSid": amb.sid, "MessageStatus": "delivered", "To": AMB_WEST}
            signed = RequestValidator(TOKEN).compute_signature(surl, report)
            form = {
                "Content-Type": "application/x-www-form-urlencoded",
                "X-Twilio-Signature": signed,
            }
            d = await c.post(surl, content=urlencode(report), headers=form)
            assert d.json() == {"recorded": True}
            fam = {"Authorization": f"Bearer {FAMILY}"}
            status = (await c.get("/v1/sos/grandma/ladder", headers=fam)).json()
            assert status["state"] == "acked" and status["acked_by"] == "sms:Ana Lopez"
            by_to = {t["to"]: t for t in status["texts"] if t["purpose"].endswith("direct")}
            assert by_to["…" + AMB_WEST[-4:]]["delivery"] == "delivered"
            assert len(status["texts"]) >= 4  # the first three and the ladder's, per recipient
        acked = await w.wait(lambda: w.events("sos_acknowledged"))
        assert acked[0]["by"] == "sms:Ana Lopez"
        n = len(sink.messages)
        await asyncio.sleep(2.0)
        assert len(sink.messages) == n  # nobody else is texted


async def test_family_api_and_mqtt_acks(tmp_path: Path, broker: Broker, sink: SmsSink) -> None:
    s = make_settings(tmp_path / "data", broker, sink, sos_ack_window_s=30)
    async with running(s) as asm, device(broker) as dev:
        await publish(dev, sos_topic("dad", "watch-jon"), press())
        await asyncio.to_thread(sink.wait_for, 2, 20)
        app = create_app(asm.gateway.api, admin_token=ADMIN, family_tokens=[FAMILY])
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://hub"
        ) as c:
            fam = {"Authorization": f"Bearer {FAMILY}"}
            for _ in range(50):
                if (await c.get("/v1/sos/dad/ladder", headers=fam)).json():
                    break
                await asyncio.sleep(0.1)
            r = (await c.post("/v1/sos/dad/ack", json={"by": "ana-phone"}, headers=fam)).json()
            assert r["acknowledged"] is True
            assert (await c.post("/v1/sos/dad/ack", headers=fam)).json()["acknowledged"] is False
        # The grandma SOS is acknowledged over MQTT (prompt_id "sos" on the ack topic).
        await publish(dev, sos_topic("grandma", "watch-maria"), press())
        await asyncio.to_thread(sink.wait_for, 5, 20)
        ladder = asm.gateway.ladder
        assert ladder is not None
        for _ in range(50):
            if (ladder.status("grandma") or {}).get("state") == "waiting":
                break
            await asyncio.sleep(0.1)
        await publish(dev, ack_topic("grandma", "watch-maria"), {"ok": True, "prompt_id": "sos"})
        for _ in range(50):
            if (ladder.status("grandma") or {}).get("state") == "acked":
                break
            await asyncio.sleep(0.1)
        assert ladder.status("grandma")["acked_by"] == "mqtt:watch-maria"  # type: ignore[index]


async def test_ending_the_sos_stops_the_ladder(
    tmp_path: Path, broker: Broker, sink: SmsSink
) -> None:
    s = make_settings(tmp_path / "data", broker, sink, sos_ack_window_s=1.0)
    async with running(s) as asm, device(broker) as dev:
        await publish(dev, sos_topic("dad", "watch-jon"), press())
        await asyncio.to_thread(sink.wait_for, 2, 20)
        await publish(dev, sos_topic("dad", "watch-jon"), {"action": "end", "ts": time.time()})
        await asyncio.to_thread(sink.wait_for, 4, 20)  # the all-clear texts
        await asyncio.sleep(1.8)
        assert len(sink.messages) == 4
        assert asm.gateway.ladder.status("dad")["state"] == "ended"  # type: ignore[union-attr,index]


async def test_the_ladder_resumes_after_a_restart(
    tmp_path: Path, broker: Broker, sink: SmsSink
) -> None:
    s = make_settings(tmp_path / "data", broker, sink, sos_ack_window_s=1.5)
    async with running(s), device(broker) as dev:
        await publish(dev, sos_topic("dad", "watch-jon"), press())
        await asyncio.to_thread(sink.wait_for, 2, 20)
        await asyncio.sleep(0.3)
    # The hub was down past the window; on start the ladder picks up where it was.
    await asyncio.sleep(1.5)
    async with running(s):
        texts = await asyncio.to_thread(sink.wait_for, 3, 20)
        assert texts[2].to == ANA and "URGENT" in texts[2].body
        await asyncio.sleep(0.5)
        assert [m.to for m in sink.messages].count(AMB_WEST) == 1  # the first texts were not resent
