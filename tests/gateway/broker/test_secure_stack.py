"""The real gateway on the production broker config: accounts made with `healthgw devices`,
the gateway connecting over TLS (mqtts, verified against the script's CA) with its own
account, a watch with its own. Readings flow, an SOS is handled, Home Assistant discovery
is published, and the watch still cannot see anybody else's data."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import aiomqtt
import pytest

from gateway.contract.topics import events_topic, notify_topic, sos_topic, vitals_topic
from healthgw.cli import main
from simulators.sms_sink import SmsSink
from tests.brokers import ROOT, running_secure_broker
from tests.harness import make_settings, running


async def until(pred: Callable[[], bool], within: float = 10.0) -> None:
    for _ in range(int(within / 0.1)):
        if pred():
            return
        await asyncio.sleep(0.1)


async def test_gateway_over_tls_on_the_production_broker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    certs = tmp_path / "certs"
    script = ROOT / "scripts" / "make-broker-certs.sh"
    await asyncio.to_thread(
        subprocess.run, [str(script), "localhost", str(certs)], check=True, capture_output=True
    )
    auth = tmp_path / "broker" / "auth"
    monkeypatch.setenv("HEALTHGW_MQTT_USERNAME", "gateway")
    monkeypatch.setenv("HEALTHGW_MQTT_PASSWORD", "gateway-secret-7Qx9pLm2")
    assert main(["devices", "init", "--auth-dir", str(auth)]) == 0
    for person, dev in (("grandma", "watch-maria"), ("dad", "watch-jon")):
        rc = await asyncio.to_thread(
            main, ["devices", "add", person, dev, "--auth-dir", str(auth), "--json"]
        )
        assert rc == 0
    accounts = json.loads((auth / "accounts.json").read_text())
    assert "gateway-secret-7Qx9pLm2" not in json.dumps(accounts)  # hashes only

    # The passwords were printed once; set known ones for the watches instead.
    def set_pw(person: str, dev: str, pw: str) -> None:
        import io
        import sys

        monkeypatch.setattr(sys, "stdin", io.StringIO(pw + "\n"))
        args = ["devices", "add", person, dev, "--rotate", "--password-stdin"]
        assert main([*args, "--auth-dir", str(auth)]) == 0

    set_pw("grandma", "watch-maria", "maria-secret")
    set_pw("dad", "watch-jon", "jon-secret")

    with SmsSink() as sink, running_secure_broker(tmp_path / "broker", certs_dir=certs) as b:
        assert b.tls_port is not None

        class _Url:  # make_settings wants a broker; the gateway goes over TLS
            url = f"mqtts://localhost:{b.tls_port}"

        settings = make_settings(
            tmp_path / "data",
            _Url,  # type: ignore[arg-type]
            sink,
            mqtt_username="gateway",
            mqtt_password="gateway-secret-7Qx9pLm2",
            mqtt_ca_file=certs / "ca.crt",
        )
        async with (
            running(settings) as asm,
            aiomqtt.Client(
                "127.0.0.1", b.port, username="dad.watch-jon", password="jon-secret"
            ) as jon,
            aiomqtt.Client(
                "127.0.0.1",
                b.port,
                username="grandma.watch-maria",
                password="maria-secret",
            ) as maria,
        ):
            gw = asm.gateway
            await jon.subscribe("#", qos=1)
            await maria.subscribe(events_topic("grandma"), qos=1)
            got_jon: list[str] = []
            got_maria: list[str] = []

            async def pump(c: aiomqtt.Client, into: list[str]) -> None:
                async for m in c.messages:
                    into.append(m.topic.value)

            tasks = [
                asyncio.create_task(pump(jon, got_jon)),
                asyncio.create_task(pump(maria, got_maria)),
            ]
            await maria.publish(
                vitals_topic("grandma", "watch-maria"),
                json.dumps({"ts": time.time(), "seq": 1, "heart_rate": 71}),
                qos=1,
            )
            await maria.publish(
                sos_topic("grandma", "watch-maria"),
                json.dumps({"action": "start", "ts": time.time()}),
                qos=1,
            )
            await asyncio.to_thread(sink.wait_for, 3, 20)  # ambulance + 2 contacts
            await until(lambda: events_topic("grandma") in got_maria)
            # Jon's own reading reaches the gateway; he sees his own notify, nobody else's.
            await jon.publish(
                vitals_topic("dad", "watch-jon"),
                json.dumps({"ts": time.time(), "seq": 1, "heart_rate": 66}),
                qos=1,
            )
            await gw.link.publish(notify_topic("dad"), {"text": "hello", "kind": "info"})
            await until(lambda: notify_topic("dad") in got_jon)
            await asyncio.sleep(0.3)
            for t in tasks:
                t.cancel()
            assert gw.counters["readings"] == 2
            assert gw.link.connects >= 1
            assert events_topic("grandma") in got_maria  # the wearer sees her own events
            assert notify_topic("dad") in got_jon
            assert not [t for t in got_jon if "grandma" in t or t.startswith("homeassistant/")]
