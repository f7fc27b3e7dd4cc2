"""Run the whole gateway in-process against a real broker and a Twilio-compatible sink."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiomqtt

from gateway.base.settings import Settings
from healthgw.assembly.hub import Assembly, assemble
from simulators.sms_sink import SmsSink
from tests.brokers import Broker, free_port

ROOT = Path(__file__).resolve().parent.parent
SID = "AC" + "0" * 32
TOKEN = "test-auth-token"
FROM = "+15005550006"
ADMIN = "admin-token-for-tests-0123456789"
TRIAGE_CACHE = Path.home() / ".cache" / "healthgw"
FAMILY = "family-token-for-tests-0123456789"


# A watch's sleep stages saying its wearer is awake. Without them, between 22:00 and 07:00
# household time a reading with no steps is judged asleep (gateway/monitor/context.py), which
# changes the ranges and the confirmation rules: a test about daytime alerts that sends no
# sleep stages passes or fails with the hour it runs at.
AWAKE = {"deep": 0, "light": 0, "rem": 0, "awake": 5}


def make_settings(
    data_dir: Path, broker: Broker, sink: SmsSink | None, **overrides: Any
) -> Settings:
    values: dict[str, Any] = {
        "mqtt_url": broker.url,
        "data_dir": data_dir,
        "household": ROOT / "examples" / "household.yaml",
        "api_token": ADMIN,
        "family_tokens": [FAMILY],
        "api_port": free_port(),
        "escalation_window_s": 1.0,
        "fall_window_s": 1.0,
        "gateway_id": "testhub",
        # The model is opt-in per test (slow); the triage classifier is trained once per
        # machine and cached like on a hub.
        "assistant_model": "off",
        "triage_cache_dir": TRIAGE_CACHE,
        # In-process conversations unless a test opts in to their own process (each child
        # costs a process start; tests/agents/assistant/process/ run the default layout).
        "assistant_process": "inline",
    }
    if sink is not None:
        values |= {
            "twilio_account_sid": SID,
            "twilio_auth_token": TOKEN,
            "twilio_from": FROM,
            "twilio_api_base": sink.url,
        }
    values |= overrides
    return Settings(**values)


def gateway_process_env(
    data: Path,
    broker_url: str,
    *,
    sms_url: str | None = None,
    sms_from: str = FROM,
    household: Path = ROOT / "examples" / "household.yaml",
    gateway_id: str = "testhub",
    api_port: int | None = None,
    **extra: str,
) -> dict[str, str]:
    """The environment of a `healthgw run` process under test: this one's, minus any
    HEALTHGW_* of the developer's, plus the broker, data, household, an admin token, a free
    API port, no assistant, and texts through the local Twilio-compatible endpoint (none:
    they stay in the offline outbox). `extra` adds or overrides HEALTHGW_* keys."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEALTHGW_")}
    env |= {
        "HEALTHGW_MQTT_URL": broker_url,
        "HEALTHGW_DATA_DIR": str(data),
        "HEALTHGW_HOUSEHOLD": str(household),
        "HEALTHGW_API_TOKEN": ADMIN,
        "HEALTHGW_API_PORT": str(api_port if api_port is not None else free_port()),
        "HEALTHGW_GATEWAY_ID": gateway_id,
        "HEALTHGW_ASSISTANT_ENABLED": "false",
        "HEALTHGW_ASSISTANT_MODEL": "off",
    }
    if sms_url is not None:
        env |= {
            "HEALTHGW_TWILIO_ACCOUNT_SID": SID,
            "HEALTHGW_TWILIO_AUTH_TOKEN": TOKEN,
            "HEALTHGW_TWILIO_FROM": sms_from,
            "HEALTHGW_TWILIO_API_BASE": sms_url,
        }
    return env | extra


def spawn_gateway(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """`healthgw run` as its own process, its output appended to `log`."""
    return subprocess.Popen(
        [sys.executable, "-m", "healthgw.cli", "run"],
        env=env,
        cwd=ROOT,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )


@dataclass
class Watcher:
    """Collects everything on health/# and gateway/# (what a family screen would see)."""

    messages: list[tuple[str, Any]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def of(self, suffix: str) -> list[Any]:
        return [p for t, p in self.messages if t.endswith(suffix)]

    def events(self, type_: str | None = None) -> list[dict[str, Any]]:
        return [
            p
            for t, p in self.messages
            if t.endswith("/events") and (type_ is None or p["type"] == type_)
        ]

    async def wait(self, pred: Any, within: float = 10.0) -> Any:
        async def loop() -> Any:
            while True:
                got = pred()
                if got:
                    return got
                self.changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), 0.2)

        return await asyncio.wait_for(loop(), within)


@contextlib.asynccontextmanager
async def watching(broker: Broker) -> AsyncIterator[Watcher]:
    w = Watcher()
    async with aiomqtt.Client("127.0.0.1", broker.port, identifier="test-watcher") as c:
        await c.subscribe("health/#", qos=1)
        await c.subscribe("gateway/#", qos=1)

        async def pump() -> None:
            async for m in c.messages:
                raw = (
                    m.payload
                    if isinstance(m.payload, bytes | bytearray)
                    else str(m.payload).encode()
                )
                try:
                    payload: Any = json.loads(raw)
                except ValueError:
                    payload = raw.decode(errors="replace")
                w.messages.append((m.topic.value, payload))
                w.changed.set()

        task = asyncio.create_task(pump())
        try:
            yield w
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


@contextlib.asynccontextmanager
async def running(settings: Settings) -> AsyncIterator[Assembly]:
    asm = assemble(settings)
    await asm.gateway.start()
    try:
        await asyncio.wait_for(asm.gateway.link.connected.wait(), 10)
        yield asm
    finally:
        await asm.gateway.stop()


@contextlib.asynccontextmanager
async def device(broker: Broker, name: str = "test-device") -> AsyncIterator[aiomqtt.Client]:
    async with aiomqtt.Client("127.0.0.1", broker.port, identifier=name) as c:
        yield c


async def publish(c: aiomqtt.Client, topic: str, payload: dict[str, Any] | bytes | str) -> None:
    body = payload if isinstance(payload, bytes | str) else json.dumps(payload)
    await c.publish(topic, body, qos=1)
