"""End to end: real mosquitto on a free port, the whole gateway in-process, the real twilio SDK
talking HTTP to a local Twilio-compatible sink."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.api.server import create_app
from gateway.contract.topics import ack_topic, sos_topic, vitals_topic
from simulators.sms_sink import SmsSink
from tests.brokers import Broker
from tests.harness import ADMIN, FAMILY, device, make_settings, publish, running, watching

pytestmark = pytest.mark.integration

AMB_WEST = "+447700900902"  # nearest to the household's home
ANA, TOM = "+447700900201", "+447700900202"


@pytest.fixture
def sink() -> Iterator[SmsSink]:
    with SmsSink() as s:
        yield s


def reading(**vitals: Any) -> dict[str, Any]:
    return {"ts": time.time(), **vitals}


def to_numbers(sink: SmsSink) -> list[str]:
    return sorted(m.to for m in sink.messages)


async def test_hypoxia_raises_soft_sos_that_says_why_and_ack_cancels_escalation(
    tmp_path: Path, broker: Broker, sink: SmsSink
) -> None:
    s = make_settings(tmp_path / "data", broker, sink)
    async with watching(broker) as w, running(s), device(broker) as dev:
        topic = vitals_topic("dad", "watch-jon")
        for i, (spo2, hr) in enumerate([(86, 104), (85, 106), (86, 108)]):
            await publish(dev, topic, reading(seq=i, spo2=spo2, heart_rate=hr, steps=0))
        soft = await w.wait(lambda: w.events("soft_sos"))
        ev = soft[0]
        # SpO2 85-86 is a NEWS2 red parameter: the wearer is asked, and without an answer
        # the contacts are texted (tests/data/clinical_scenarios.yaml has the whole table).
        assert ev["person"] == "dad" and ev["response"]["on_no_answer"] == "contacts"
        assert "oxygen saturation" in ev["why"] and "86" in ev["why"]
        assert ev["abnormal"]["spo2"]["class"] == "critical_low"
        # The watch is told which vital, with its value, and asked whether the wearer is OK.
        notes = await w.wait(lambda: len(w.of("dad/notify")) >= 2 and w.of("dad/notify"))
        kinds = {n["kind"] for n in notes}
        assert {"soft_sos", "prompt"} <= kinds
        soft_text = next(n["text"] for n in notes if n["kind"] == "soft_sos")
        assert "86" in soft_text
        prompt = next(n for n in notes if n["kind"] == "prompt")
        await publish(
            dev, ack_topic("dad", "watch-jon"), {"ok": True, "prompt_id": prompt["prompt_id"]}
        )
        await w.wait(lambda: w.events("prompt_answered"))
        await asyncio.sleep(s.escalation_window_s + 0.5)
        assert w.events("hard_sos") == []
        assert sink.messages == []


async def test_unanswered_high_soft_sos_escalates_to_hard_sos(
    tmp_path: Path, broker: Broker, sink: SmsSink
) -> None:
    s = make_settings(tmp_path / "data", broker, sink)
    async with watching(broker) as w, running(s), device(broker) as dev:
        topic = vitals_topic("dad", "watch-jon")
        # SpO2 below 85 is in the intervention range: unanswered, it is a hard SOS.
        for i, spo2 in enumerate([82, 81, 82]):
            await publish(dev, topic, reading(seq=i, spo2=spo2, heart_rate=100 + i, steps=0))
        await w.wait(lambda: w.events("sos_escalated"))
        hard = await w.wait(lambda: w.events("hard_sos"))
        assert hard[0]["trigger"] == "soft_sos_unanswered"
        # The family hears at once (intervention range), then the SOS texts the ambulance and
        # the family again.
        texts = await asyncio.to_thread(sink.wait_for, 3, 10)
        assert sorted(m.to for m in texts) == sorted([AMB_WEST, ANA, ANA])
        assert any("vital signs need attention" in m.body for m in texts if m.to == ANA)


async def test_hard_sos_texts_ambulance_and_every_contact_once_then_end(
    tmp_path: Path, broker: Broker, sink: SmsSink
) -> None:
    s = make_settings(tmp_path / "data", broker, sink)
    async with watching(broker) as w, running(s) as asm, device(broker) as dev:
        press = {
            "action": "start",
            "ts": time.time(),
            "location": {"latitude": 51.5, "longitude": -0.13},
        }
        await publish(dev, sos_topic("grandma", "watch-maria"), press)
        texts = await asyncio.to_thread(sink.wait_for, 3, 10)
        assert sorted(m.to for m in texts) == sorted([AMB_WEST, ANA, TOM])
        amb = next(m for m in texts if m.to == AMB_WEST)
        assert "Maria Lopez" in amb.body and "grandma" in amb.body and "51.5" in amb.body
        assert all(m.from_ == "+15005550006" for m in texts)
        await w.wait(lambda: w.events("hard_sos"))

        # A second press while the SOS is open texts nobody again.
        await publish(dev, sos_topic("grandma", "watch-maria"), {**press, "ts": time.time()})
        await asyncio.sleep(1.0)
        assert len(sink.messages) == 3

        await publish(
            dev, sos_topic("grandma", "watch-maria"), {"action": "end", "ts": time.time()}
        )
        texts = await asyncio.to_thread(sink.wait_for, 6, 10)
        later = texts[3:]
        assert sorted(m.to for m in later) == sorted([AMB_WEST, ANA, TOM])
        assert "no longer" in next(m for m in later if m.to == AMB_WEST).body.lower()
        await w.wait(lambda: w.events("sos_end"))
        # Both runs are stored in the brief's trajectory format. The sos_end event goes out
        # from a step; the run's last step (and its trajectory) is written after it.

        def finished() -> list[dict[str, Any]]:
            asm.gateway.store.flush()
            runs = asm.gateway.store.trajectories(person="grandma")
            return runs if all(r["status"] != "running" for r in runs) else []

        runs = await w.wait(finished)
        assert {r["category"] for r in runs} >= {"hard_sos", "end_sos"}
        assert {r["status"] for r in runs} == {"completed"}
        full = asm.gateway.store.trajectory(runs[0]["run_id"])
        assert full is not None
        states = full["trajectory"]["interaction_trajectory"]
        assert states[0]["from"] == "system" and states[-1]["value"]["action"] == "<END>"


async def test_bad_payloads_are_rejected_with_reasons_and_the_loop_lives(
    tmp_path: Path, broker: Broker, sink: SmsSink
) -> None:
    s = make_settings(tmp_path / "data", broker, sink)
    topic = vitals_topic("dad", "watch-jon")
    bad: list[tuple[str, bytes, str]] = [
        (topic, b"x" * 20_000, "oversized"),
        (topic, b'{"ts": 1790000000, "heart_rate": "fast"}', "schema"),
        (topic, b'{"ts": 1790000000, "heart_rate": NaN}', "non_finite"),
        (topic, b"\xff\xfe\xfa", "not_utf8"),
        (topic, b"{nope", "not_json"),
        (
            vitals_topic("dad", "intruder"),
            b'{"ts": 1790000000, "heart_rate": 70}',
            "unknown_device",
        ),
    ]
    async with watching(broker) as w, running(s) as asm, device(broker) as dev:
        for t, payload, _ in bad:
            await publish(dev, t, payload)
        await publish(dev, topic, reading(seq=1, heart_rate=71, spo2=98))
        rejected = await w.wait(
            lambda: len(w.of("testhub/rejected")) >= len(bad) and w.of("testhub/rejected")
        )
        assert [r["reason"] for r in rejected] == [b[2] for b in bad]
        assert all(r["detail"] for r in rejected)
        await w.wait(lambda: asm.gateway.counters["readings"] == 1)
        assert asm.gateway.rejects["schema"] == 1
        assert asm.gateway.deadletters.flush()  # written by its own thread, off the loop
        dead = list((tmp_path / "data" / "deadletter").glob("*.jsonl"))
        assert dead and len(dead[0].read_text().splitlines()) == len(bad)


async def test_open_sos_survives_restart_without_losing_or_repeating_texts(
    tmp_path: Path, broker: Broker, sink: SmsSink
) -> None:
    s = make_settings(tmp_path / "data", broker, sink)
    sink.fail_next(1000, status=503)  # the provider is down: texts stay pending
    async with running(s), device(broker) as dev:
        await publish(
            dev, sos_topic("grandma", "watch-maria"), {"action": "start", "ts": time.time()}
        )
        await asyncio.sleep(1.5)
    assert sink.messages == []
    sink.clear()  # provider back
    async with watching(broker) as w, running(s), device(broker) as dev:
        texts = await asyncio.to_thread(sink.wait_for, 3, 15)
        assert sorted(m.to for m in texts) == sorted([AMB_WEST, ANA, TOM])
        # The SOS is still open after the restart: ending it texts the same ambulance.
        await publish(
            dev, sos_topic("grandma", "watch-maria"), {"action": "end", "ts": time.time()}
        )
        texts = await asyncio.to_thread(sink.wait_for, 6, 15)
        await w.wait(lambda: w.events("sos_end"))
    assert sorted(m.to for m in texts) == sorted([AMB_WEST, ANA, TOM] * 2)


async def test_fall_without_movement_escalates(
    tmp_path: Path, broker: Broker, sink: SmsSink
) -> None:
    s = make_settings(tmp_path / "data", broker, sink)
    async with watching(broker) as w, running(s), device(broker) as dev:
        await publish(
            dev,
            vitals_topic("grandma", "watch-maria"),
            reading(seq=1, heart_rate=80, fall_detected=True, steps=0),
        )
        await w.wait(lambda: w.events("fall_detected"))
        hard = await w.wait(lambda: w.events("hard_sos"))
        assert hard[0]["trigger"] == "fall_no_movement"


async def test_fall_then_walking_cancels(tmp_path: Path, broker: Broker, sink: SmsSink) -> None:
    s = make_settings(tmp_path / "data", broker, sink)
    async with watching(broker) as w, running(s), device(broker) as dev:
        t = vitals_topic("grandma", "watch-maria")
        await publish(dev, t, reading(seq=1, heart_rate=80, fall_detected=True, steps=0))
        await w.wait(lambda: w.events("fall_detected"))
        await publish(dev, t, reading(seq=2, heart_rate=84, steps=30))
        await asyncio.sleep(s.fall_window_s + 0.7)
        assert w.events("hard_sos") == []


async def test_api_assess_persons_events_and_roles(
    tmp_path: Path, broker: Broker, sink: SmsSink
) -> None:
    s = make_settings(tmp_path / "data", broker, sink)
    async with running(s) as asm, device(broker) as dev:
        gw = asm.gateway
        await publish(dev, vitals_topic("dad", "watch-jon"), reading(seq=1, heart_rate=72, spo2=98))
        app = create_app(gw.api, admin_token=ADMIN, family_tokens=[FAMILY])
        transport = httpx.ASGITransport(app=app)
        fam = {"Authorization": f"Bearer {FAMILY}"}
        adm = {"Authorization": f"Bearer {ADMIN}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://hub") as c:
            assert (await c.get("/healthz")).status_code == 200
            assert (await c.get("/v1/persons")).status_code == 401
            r = await c.post(
                "/v1/assess",
                headers=fam,
                json={"heart_rate": 135, "spo2": 91, "respiratory_rate": 26},
            )
            assert r.status_code == 200
            body = r.json()
            assert (
                body["news2"]["parameters"]["heart_rate"] == 3 and body["news2"]["level"] == "high"
            )
            bad = await c.post("/v1/assess", headers=fam, json={"heart_rate": "fast"})
            assert bad.status_code == 422
            for _ in range(50):
                people = (await c.get("/v1/persons", headers=fam)).json()
                dad = next(p for p in people if p["id"] == "dad")
                if dad["vitals"]:
                    break
                await asyncio.sleep(0.1)
            assert dad["vitals"]["heart_rate"]["value"] == 72
            assert (await c.post("/v1/sos/dad/start", headers=fam)).status_code == 403
            r = await c.post("/v1/sos/dad/start", headers=adm)
            assert r.json()["started"] is True
            texts = await asyncio.to_thread(sink.wait_for, 2, 10)
            assert sorted(m.to for m in texts) == sorted([AMB_WEST, ANA])
            gw.store.flush()
            ev = (
                await c.get("/v1/events", headers=fam, params={"person": "dad", "type": "hard_sos"})
            ).json()
            assert ev and ev[0]["type"] == "hard_sos"
            tr = (await c.get("/v1/trajectories", headers=fam, params={"person": "dad"})).json()
            assert (
                tr
                and (await c.get(f"/v1/trajectories/{tr[0]['run_id']}", headers=fam)).status_code
                == 200
            )
