"""The link's two broker sessions, and what they share.

An SOS must never wait at the broker behind telemetry. A broker delivers one session's
messages in order, and the gateway acknowledges readings only once stored
(gateway/mqtt/acks.py): under a flood of vitals, a single session's backlog builds up at the
broker, and an SOS published into it waits behind every reading before it, whatever the
gateway's own priority queue does. So the link keeps two persistent sessions:

- control (`healthgw-<gateway id>`): SOS, acks, device status, intents; it also carries the
  gateway's publishes and its retained online/offline status with the last will;
- telemetry (`healthgw-<gateway id>-vitals`): vitals only.

Both feed the same priority queue. Each subscribes in batches and checks every SUBACK: a
broker refusing a subscription (NATS caps subscriptions per session) is an error that tears
the connection down and is retried, never a silently deaf gateway."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Sequence
from typing import Any, cast

import aiomqtt

from gateway.base.errors import HealthGWError
from gateway.base.settings import Settings
from gateway.contract.topics import QOS, STATUS_OFFLINE
from gateway.mqtt.inbound_queue import Forwarder, PriorityMessageQueue

CONTROL, TELEMETRY = "control", "telemetry"
SUBSCRIBE_BATCH = 64  # topics per SUBSCRIBE packet (a shard subscribes 5 per person)


class SubscriptionRefused(HealthGWError, aiomqtt.MqttError):
    """The broker refused some of our subscriptions (their count is in the message)."""


def tls_params(s: Settings) -> aiomqtt.TLSParameters | None:
    """TLS for mqtts:// URLs, verified against HEALTHGW_MQTT_CA_FILE or the system's CAs."""
    if not s.mqtt_tls:
        return None
    return aiomqtt.TLSParameters(ca_certs=str(s.mqtt_ca_file) if s.mqtt_ca_file else None)


def split_subscriptions(subs: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Vitals to the telemetry session, everything else to the control session."""
    tele = tuple(t for t in subs if t.endswith("/vitals"))
    return {CONTROL: tuple(t for t in subs if t not in tele), TELEMETRY: tele}


def make_client(
    s: Settings,
    role: str,
    inbound: PriorityMessageQueue,
    gen: int,
    status_topic: str,
    probe: tuple[str, Callable[[aiomqtt.Message], None]] | None = None,
    after_put: Callable[[], None] | None = None,
) -> tuple[aiomqtt.Client, Forwarder]:
    forwarder = Forwarder(inbound, gen, probe, after_put)

    def queue_type(maxsize: int = 0) -> asyncio.Queue[aiomqtt.Message]:
        # Every connection feeds the same queue: what arrived is handled after a reconnect.
        return forwarder

    suffix = "" if role == CONTROL else "-vitals"
    client = aiomqtt.Client(
        s.mqtt_host,
        s.mqtt_port,
        identifier=f"healthgw-{s.gateway_id}{suffix}",
        # Persistent session: the broker keeps our QoS 1 messages while we restart.
        clean_session=False,
        username=s.mqtt_username,
        password=s.mqtt_password.get_secret_value() if s.mqtt_password else None,
        will=(
            aiomqtt.Will(status_topic, STATUS_OFFLINE, qos=QOS, retain=True)
            if role == CONTROL
            else None
        ),
        queue_type=cast("type[asyncio.Queue[aiomqtt.Message]]", queue_type),
        keepalive=30,
        timeout=10,
        tls_params=tls_params(s),
    )
    return client, forwarder


async def subscribe_all(client: aiomqtt.Client, topics: Sequence[str]) -> None:
    """Subscribe in batches; raise SubscriptionRefused if any SUBACK code is a failure."""
    refused = 0
    for i in range(0, len(topics), SUBSCRIBE_BATCH):
        batch = [(t, QOS) for t in topics[i : i + SUBSCRIBE_BATCH]]
        granted: Any = await client.subscribe(batch)
        for code in granted or ():
            value = getattr(code, "value", code)
            if getattr(code, "is_failure", False) or (isinstance(value, int) and value >= 0x80):
                refused += 1
    if refused:
        raise SubscriptionRefused(f"the broker refused {refused} of {len(topics)} subscriptions")


def pump(client: aiomqtt.Client | None, forwarder: Forwarder | None, most: int) -> None:
    """Read up to `most` messages the socket already holds into the priority queue, on the
    event loop's thread. aiomqtt reads one packet per loop turn, slower than dispatch: a
    backlog would otherwise stay in the socket, in arrival order, and never be shed."""
    if client is None or forwarder is None:
        return
    paho = client._client  # same thread as aiomqtt's own reader callback
    for _ in range(most):
        before = forwarder.count
        with contextlib.suppress(Exception):  # BrokenPipe etc.: aiomqtt's reader reports it
            if paho.loop_read() != 0:
                return
        if forwarder.count == before:
            return


def encode(payload: dict[str, Any] | str | bytes) -> bytes:
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, str):
        return payload.encode()
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[[], None]) -> None:
    """From another thread; a closed loop (shutdown) has nothing left to do."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(fn)
