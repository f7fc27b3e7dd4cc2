"""The console's Simulator routes through the real app: absent (404) unless enabled, admin
only (family and viewer 403), and driving a real simulated watch on a real mosquitto: its
readings, SOS press and end and its answer to a prompt are on the wire as a watch sends them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import aiomqtt
import httpx
import pytest
from fastapi import FastAPI

from gateway.base.settings import Settings
from gateway.contract.topics import SosPayload, VitalsPayload, notify_topic
from healthgw.assembly.hub import api_routers, assemble
from healthgw.sim_routes import simulator_router
from healthgw.sim_watches import SimulatedWatches
from tests.brokers import Broker, running_broker
from tests.gateway.api.stub import AUTH, StubBackend, make_app
from tests.harness import make_settings, publish, running, watching

ROUTES = [
    ("GET", "/v1/simulator", None),
    ("POST", "/v1/simulator/dad/start", {"scenario": "normal"}),
    ("POST", "/v1/simulator/dad/stop", None),
    ("POST", "/v1/simulator/dad/sos/start", None),
    ("POST", "/v1/simulator/dad/sos/end", None),
    ("POST", "/v1/simulator/dad/answer", {"ok": True}),
]


def app_with(sim: SimulatedWatches | None) -> FastAPI:
    backend = StubBackend()
    return make_app(backend, extra_routers=[simulator_router(sim)] if sim else [])


def client(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://hub")


def settings_for(broker_url: str, **kw: str) -> Settings:
    return Settings(mqtt_url=broker_url, gateway_id="simtest", simulator_enabled=True, **kw)  # type: ignore[arg-type]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with running_broker(tmp_path / "broker") as b:
        yield b


async def test_with_the_simulator_off_the_routes_do_not_exist() -> None:
    async with client(app_with(None)) as c:
        for method, path, body in ROUTES:
            r = await c.request(method, path, json=body, headers=AUTH["admin"])
            assert r.status_code == 404, (method, path)
        doc = (await c.get("/openapi.json")).json()
        assert not [p for p in doc["paths"] if "simulator" in p]


@pytest.mark.parametrize("role", ["family", "viewer"])
async def test_family_and_viewer_tokens_are_refused(role: str) -> None:
    sim = SimulatedWatches(settings_for("mqtt://127.0.0.1:1"), StubBackend().household)
    async with client(app_with(sim)) as c:
        for method, path, body in ROUTES:
            r = await c.request(method, path, json=body, headers=AUTH[role])
            assert r.status_code == 403, (method, path, r.text)
            assert r.json()["detail"] == "this action needs the admin token"
        r = await c.get("/v1/simulator")
        assert r.status_code == 401
    assert sim.status()["running"] == {}


async def test_a_broker_with_accounts_is_refused_with_what_is_missing() -> None:
    settings = settings_for("mqtt://127.0.0.1:1", mqtt_username="gateway")
    sim = SimulatedWatches(settings, StubBackend().household)
    async with client(app_with(sim)) as c:
        r = await c.post("/v1/simulator/dad/start", json={"scenario": "normal"},
                         headers=AUTH["admin"])  # fmt: skip
    assert r.status_code == 409
    assert "HEALTHGW_SIM_MQTT_USERNAME" in r.json()["detail"]


@pytest.mark.integration
async def test_admin_drives_a_simulated_watch_on_a_real_broker(broker: Broker) -> None:
    household = StubBackend().household
    sim = SimulatedWatches(settings_for(broker.url), household)
    admin = AUTH["admin"]
    async with watching(broker) as wire, client(app_with(sim)) as c:
        # Refused before anything runs: a bad scenario, an unknown person, SOS with no watch.
        bad = await c.post("/v1/simulator/dad/start", json={"scenario": "x"}, headers=admin)
        assert bad.status_code == 422
        nobody = await c.post("/v1/simulator/nobody/start", json={"scenario": "normal"},
                              headers=admin)  # fmt: skip
        assert nobody.status_code == 404
        assert (await c.post("/v1/simulator/nobody/stop", headers=admin)).status_code == 404
        assert (await c.post("/v1/simulator/nobody/sos/start", headers=admin)).status_code == 404
        early = await c.post("/v1/simulator/dad/sos/start", headers=admin)
        assert early.status_code == 409 and "start a scenario" in early.json()["detail"]

        r = await c.post("/v1/simulator/dad/start", json={"scenario": "hypoxia"}, headers=admin)
        assert r.status_code == 200, r.text
        reading = await wire.wait(lambda: wire.of("/dad/watch-jon/vitals"))
        VitalsPayload.model_validate(reading[0])  # on the contract
        assert wire.of("/dad/watch-jon/status")[-1] == "online"
        status = (await c.get("/v1/simulator", headers=admin)).json()
        assert "hypoxia" in status["scenarios"]
        assert status["running"]["dad"]["scenario"] == "hypoxia"
        assert status["running"]["dad"]["device"] == "watch-jon"
        # A second start switches the scenario: still one watch for the person.
        again = await c.post("/v1/simulator/dad/start", json={"scenario": "normal"},
                             headers=admin)  # fmt: skip
        assert again.status_code == 200
        assert list(sim.status()["running"]) == ["dad"]  # type: ignore[call-overload]

        assert (await c.post("/v1/simulator/dad/sos/start", headers=admin)).status_code == 200
        pressed = await wire.wait(lambda: wire.of("/dad/watch-jon/sos"))
        assert SosPayload.model_validate(pressed[0]).action == "start"
        assert (await c.post("/v1/simulator/dad/sos/end", headers=admin)).status_code == 200
        await wire.wait(lambda: len(wire.of("/dad/watch-jon/sos")) == 2)
        assert wire.of("/dad/watch-jon/sos")[1]["action"] == "end"

        # The gateway asks "are you OK?" on the notify topic; the watch answers that prompt.
        async with broker_client(broker) as gw:
            await publish(gw, notify_topic("dad"),
                          {"text": "Are you OK?", "kind": "prompt", "prompt_id": "p-123"})  # fmt: skip
        await wire.wait(lambda: sim.status()["running"]["dad"]["prompt"])  # type: ignore[index]
        r = await c.post("/v1/simulator/dad/answer", json={"ok": False}, headers=admin)
        assert r.json()["prompt_id"] == "p-123"
        ack = await wire.wait(lambda: wire.of("/dad/watch-jon/ack"))
        assert ack[0]["ok"] is False and ack[0]["prompt_id"] == "p-123"

        stopped = await c.post("/v1/simulator/dad/stop", headers=admin)
        assert stopped.json()["stopped"] is True
        await wire.wait(lambda: wire.of("/dad/watch-jon/status")[-1] == "offline")
        assert sim.status()["running"] == {}
        again_stopped = await c.post("/v1/simulator/dad/stop", headers=admin)
        assert again_stopped.json()["stopped"] is False


@pytest.mark.integration
async def test_stopping_the_part_stops_every_watch(broker: Broker) -> None:
    sim = SimulatedWatches(settings_for(broker.url), StubBackend().household)
    async with watching(broker) as wire:
        await sim.start()
        await sim.start_person("dad", "normal")
        await sim.start_person("grandma", "fever")
        await wire.wait(lambda: wire.of("/grandma/watch-maria/vitals"))
        await sim.stop()
        await wire.wait(lambda: wire.of("/grandma/watch-maria/status")[-1] == "offline")
        await wire.wait(lambda: wire.of("/dad/watch-jon/status")[-1] == "offline")
    assert sim.status()["running"] == {}


def broker_client(broker: Broker) -> aiomqtt.Client:
    return aiomqtt.Client("127.0.0.1", broker.port, identifier="test-gateway-side")


@pytest.mark.integration
async def test_the_gateway_runs_the_simulator_as_a_part_only_when_enabled(
    broker: Broker, tmp_path: Path
) -> None:
    off = assemble(make_settings(tmp_path / "off", broker, None))
    assert off.simulator is None and api_routers(off) == []
    async with watching(broker) as wire:
        async with running(
            make_settings(tmp_path / "on", broker, None, simulator_enabled=True)
        ) as asm:
            sim = asm.simulator
            assert sim is not None and len(api_routers(asm)) == 1
            await sim.start_person("dad", "normal")
            await wire.wait(lambda: wire.of("/dad/watch-jon/vitals"))
        # The gateway's stop stopped the watch too: a clean goodbye, nothing left running.
        await wire.wait(lambda: wire.of("/dad/watch-jon/status")[-1] == "offline")
        assert sim.status()["running"] == {}
