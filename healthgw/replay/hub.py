"""The assembled gateway on a virtual clock, fed by the caller instead of MQTT.

`VirtualHub` builds exactly what `healthgw run` builds (healthgw.assembly.hub.assemble: the
monitor, the escalation watcher, the SOS and soft-SOS playbooks, the audited tools, the
durable text queue) and runs it offline: messages go in through `Gateway.on_message` (edge
validation included), time is a hand-moved clock, and `advance_to` ticks the monitor and the
escalation watcher on the way, as their loops would. Only the broker link's publish is
recorded instead of sent, and texts go to the offline outbox (never to a real provider).
The replay command and the clinical scenario runner both drive it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from pathlib import Path
from typing import Any

from gateway.base.clock import ManualClock
from gateway.base.settings import Settings
from gateway.contract.topics import ack_topic, vitals_topic
from gateway.contract.values import Event
from gateway.runtime.gateway import Gateway
from healthgw.assembly.hub import Assembly, assemble

# The gateway's own loops tick every second. On the virtual clock the hub ticks at every
# input, at each countdown's due time (a prompt's deadline, an alert's confirmation or snooze,
# a single reading's silence), and otherwise every IDLE_TICK_S: only a device going stale is
# found by polling, at most that much later.
IDLE_TICK_S = 30.0
_DUE_SLACK_S = 0.001


def offline_settings(household: Path, data_dir: Path, **overrides: Any) -> Settings:
    """The user's settings (HEALTHGW_* thresholds and windows), but nothing leaves this
    process: no broker, no Twilio, no InfluxDB, no Home Assistant, no assistant."""
    fixed: dict[str, Any] = {
        "data_dir": data_dir,
        "household": household,
        # Nothing serves the API in a replay; a fresh random token still satisfies the
        # settings' length rule without a constant anyone could reuse.
        "api_token": secrets.token_urlsafe(32),
        "assistant_enabled": False,
        "assistant_model": "off",
        "ha_discovery_prefix": "",
        "gateway_id": "replay",
        "influx_url": None,
        "twilio_account_sid": None,
        "twilio_auth_token": None,  # nosec B105 # blanked so a replay can never text
        "twilio_from": None,
        "print_texts": False,
        "simulator_enabled": False,
        "shard": None,
        "shard_persons": [],
    }
    return Settings(**{**fixed, **overrides})


class VirtualHub:
    def __init__(self, settings: Settings, start: float, *, tick_s: float | None = None) -> None:
        self.settings = settings
        self.clock = ManualClock(start)
        self.t0 = start
        self.asm: Assembly | None = None
        # (clock time, event) and (clock time, topic, payload), in order.
        self.events: list[tuple[float, Event]] = []
        self.published: list[tuple[float, str, Any]] = []
        self._fixed_tick = tick_s
        self._next_tick = start

    @property
    def gateway(self) -> Gateway:
        assert self.asm is not None, "the hub is not running"
        return self.asm.gateway

    def now(self) -> float:
        return self.clock.now()

    async def start(self) -> None:
        self.asm = assemble(self.settings, clock=self.clock)
        gw = self.asm.gateway

        async def record(topic: str, payload: Any, *, qos: int = 1, retain: bool = False) -> None:
            if isinstance(payload, str | bytes):
                with contextlib.suppress(ValueError):
                    payload = json.loads(payload)
            self.published.append((self.clock.now(), topic, payload))

        gw.link.publish = record  # type: ignore[method-assign]
        gw.add_event_hook(lambda e: self.events.append((self.clock.now(), e)))
        await gw.start(offline=True)

    async def stop(self) -> list[dict[str, Any]]:
        """Stop the gateway; returns every text the queue took (rows, oldest first)."""
        assert self.asm is not None
        await self.settle()
        texts: list[dict[str, Any]] = self.asm.gateway.texts.messages()
        await self.asm.gateway.stop()
        self.asm = None
        return texts

    async def settle(self) -> None:
        """Let every subscriber, SOS task and playbook finish what the last input started."""
        assert self.asm is not None
        gw = self.asm.gateway
        for _ in range(50):
            await gw.bus.join()
            pending = [t for t in (*gw.router.tasks, *self.asm.runner._emits) if not t.done()]
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
            await asyncio.sleep(0)
            if not pending and not any(gw.bus.depths().values()):
                return

    def _next(self) -> float:
        now = self.clock.now()
        if self._fixed_tick:
            return now + self._fixed_tick
        gw = self.gateway
        due = [d + _DUE_SLACK_S for d in (gw.escalation.next_due(), gw.monitor.next_due())
               if d is not None]  # fmt: skip
        return max(now + _DUE_SLACK_S, min([now + IDLE_TICK_S, *due]))

    async def advance_to(self, t: float) -> None:
        """Move the clock to `t`, ticking the monitor and the escalation watcher on the way:
        at every countdown's due time, and at least every IDLE_TICK_S."""
        gw = self.gateway
        self._next_tick = min(self._next_tick, self._next())
        while self._next_tick <= t:
            self.clock.advance(max(0.0, self._next_tick - self.clock.now()))
            await gw.tick()
            await self.settle()
            self._next_tick = self._next()
        if t > self.clock.now():
            self.clock.advance(t - self.clock.now())

    async def walk_to(self, t: float, step: float) -> None:
        """Move the clock to `t` in fixed steps, ticking after each and at `t` itself (the
        clinical scenarios' stepping: every prompt deadline is seen within `step`)."""
        gw = self.gateway
        while self.clock.now() + step < t:
            self.clock.advance(step)
            await gw.tick()
            await self.settle()
        if t > self.clock.now():
            self.clock.advance(t - self.clock.now())
        await gw.tick()
        await self.settle()

    async def message(self, topic: str, body: bytes) -> None:
        await self.gateway.on_message(topic, body)
        await self.settle()

    async def reading(self, person: str, device: str, body: bytes) -> None:
        await self.message(vitals_topic(person, device), body)

    async def ack(self, person: str, device: str, ok: bool, prompt_id: str | None = None) -> None:
        body: dict[str, Any] = {"ok": ok}
        if prompt_id is not None:
            body["prompt_id"] = prompt_id
        await self.message(ack_topic(person, device), json.dumps(body).encode())
