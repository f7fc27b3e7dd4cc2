"""Manual acknowledgements (gateway/mqtt/acks.py) against a real mosquitto: a QoS 1 message
is acknowledged only once its store has it, so the broker redelivers what a stopped gateway
never made durable; a stuck store cannot hold an SOS at the broker behind a full in-flight
window; messages shed before handling are acknowledged, so they never clog the window."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import aiomqtt

from gateway.base.settings import Settings
from gateway.contract.topics import sos_topic, vitals_topic
from gateway.mqtt.link import MqttLink
from tests.brokers import Broker
from tests.gateway.mqtt.test_link import wait_for

VITALS = vitals_topic("dad", "watch-jon")
SOS = sos_topic("dad", "watch-jon")


class FakeStore:
    """The store's Durability side, with commits the test controls. (The real Store is
    driven end to end by tests/faults/test_crash_loss.py.)"""

    def __init__(self) -> None:
        self.accepted = 0
        self.committed = 0
        self.stuck = False
        self.nudges = 0
        self._cb: Callable[[], None] | None = None

    def add(self) -> None:
        self.accepted += 1

    def durable_ticket(self) -> int:
        return self.accepted

    def is_durable(self, ticket: int) -> bool:
        return self.committed >= ticket

    def commit_soon(self) -> None:
        self.nudges += 1
        if not self.stuck:
            asyncio.get_running_loop().call_soon(self.commit)

    def commit(self) -> None:
        self.committed = self.accepted
        if self._cb is not None:
            self._cb()

    def on_commit(self, callback: Callable[[], None] | None) -> None:
        self._cb = callback


class Recorder:
    def __init__(self, store: FakeStore) -> None:
        self.store = store
        self.seen: list[tuple[str, int]] = []

    async def __call__(self, topic: str, payload: bytes) -> None:
        self.seen.append((topic, json.loads(payload)["seq"]))
        if topic == VITALS:
            self.store.add()


def make_link(broker: Broker, tmp: Path, store: FakeStore, rec: Recorder, **kw: float) -> MqttLink:
    s = Settings(mqtt_url=broker.url, gateway_id="ackhub", data_dir=tmp)
    return MqttLink(s, rec, ["health/+/+/vitals", "health/+/+/sos"], durability=store, **kw)  # type: ignore[arg-type]


async def redelivered(broker: Broker, tmp: Path) -> list[tuple[str, int]]:
    """What the broker sends the same session on reconnecting (within a second)."""
    rec = Recorder(FakeStore())
    link = make_link(broker, tmp, FakeStore(), rec)
    await link.start()
    await wait_for(link.connected.is_set)
    await asyncio.sleep(1.0)
    await link.stop()
    return rec.seen


async def publish(broker: Broker, items: list[tuple[str, int]]) -> None:
    async with aiomqtt.Client("127.0.0.1", broker.port, identifier="acks-device") as c:
        for topic, n in items:
            await c.publish(topic, json.dumps({"seq": n}), qos=1)


async def test_unstored_messages_are_redelivered_stored_ones_are_not(
    broker: Broker, tmp_path: Path
) -> None:
    store = FakeStore()
    store.stuck = True  # nothing commits: no message may be acknowledged
    rec = Recorder(store)
    link = make_link(broker, tmp_path, store, rec, ack_wait_s=60)
    await link.start()
    await wait_for(link.connected.is_set)
    await publish(broker, [(VITALS, i) for i in range(5)])
    await wait_for(lambda: len(rec.seen) == 5)
    assert link.stats()["acks"].get("sent", 0) == 0
    await link.stop()  # as a crash would: nothing was stored, nothing acknowledged

    store2 = FakeStore()  # a store that commits
    rec2 = Recorder(store2)
    link2 = make_link(broker, tmp_path, store2, rec2)
    await link2.start()
    await wait_for(lambda: len(rec2.seen) == 5)  # the broker redelivered every one
    await wait_for(lambda: link2.stats()["acks"].get("sent", 0) == 5)
    assert store2.nudges >= 1  # the queue ran dry: a commit was asked for, not waited for
    await link2.stop()

    assert await redelivered(broker, tmp_path) == []  # stored and acknowledged


async def test_a_stuck_store_cannot_hold_an_sos_behind_unacknowledged_readings(
    broker: Broker, tmp_path: Path
) -> None:
    store = FakeStore()
    store.stuck = True
    rec = Recorder(store)
    link = make_link(broker, tmp_path, store, rec, ack_wait_s=0.5)
    await link.start()
    await wait_for(link.connected.is_set)
    # Readings the store never takes, then an SOS: it comes on its own session at once.
    await publish(broker, [(VITALS, i) for i in range(400)] + [(SOS, 999)])
    await wait_for(lambda: (SOS, 999) in rec.seen, within=20)
    # And the readings are acknowledged anyway once the store is overdue (counted).
    await wait_for(lambda: link.stats()["acks"].get("forced", 0) >= 400, within=10)
    stats = link.stats()
    await link.stop()
    assert stats["acks_bypass"]
    assert len([s for s in rec.seen if s[0] == VITALS]) == 400


def _gated_link(broker: Broker, tmp_path: Path, gid: str) -> tuple[MqttLink, asyncio.Event]:
    """A link (queue bound 10, acks after the fake store commits) whose handler waits for
    the returned event: the gateway busy."""
    store = FakeStore()
    rec = Recorder(store)
    gate = asyncio.Event()

    async def slow(topic: str, payload: bytes) -> None:
        await gate.wait()
        await rec(topic, payload)

    s = Settings(mqtt_url=broker.url, gateway_id=gid, data_dir=tmp_path)
    link = MqttLink(s, slow, ["health/+/+/vitals"], durability=store, inbound_size=10)  # type: ignore[arg-type]
    return link, gate


async def test_a_busy_gateway_acks_nothing_it_has_not_stored(
    broker: Broker, tmp_path: Path
) -> None:
    """Backpressure: the handler stuck, the link stops reading at half its bound; nothing is
    acknowledged (the broker keeps the rest); released, all 60 are stored, then acked."""
    link, gate = _gated_link(broker, tmp_path, "ackhub")
    await link.start()
    await wait_for(link.connected.is_set)
    await publish(broker, [(VITALS, i) for i in range(60)])
    await wait_for(lambda: link.stats()["read_pauses"] >= 1)
    assert link.stats()["acks"].get("sent", 0) == 0
    gate.set()
    await wait_for(lambda: link.stats()["acks"].get("sent", 0) >= 60)
    await link.stop()
    assert link.stats()["acks"].get("discarded", 0) == 0 and not link.shed


async def test_vitals_shed_when_falling_behind_are_acknowledged(
    broker: Broker, tmp_path: Path
) -> None:
    """Shedding (the probe said the gateway falls behind live input): the oldest vitals are
    dropped as they are read, each acknowledged at once and counted under "behind"."""
    link, gate = _gated_link(broker, tmp_path, "ackhub2")
    link.flow.probe.shedding = True  # as decided by BacklogProbe (tested on its own)
    link._inbound.keep = 5
    await link.start()
    await wait_for(link.connected.is_set)
    await publish(broker, [(VITALS, i) for i in range(60)])
    await wait_for(lambda: link.stats()["acks"].get("discarded", 0) >= 54)
    gate.set()
    await wait_for(lambda: link.stats()["acks"].get("sent", 0) >= 6)
    await link.stop()
    assert link.shed["behind"] == link.stats()["acks"]["discarded"]


class _Msg:
    """What AckTracker reads of an inbound message."""

    def __init__(self, mid: int) -> None:
        self.mid, self.qos = mid, 1


class _Paho:
    def __init__(self) -> None:
        self.acked: list[int] = []

    def ack(self, mid: int, qos: int) -> int:
        self.acked.append(mid)
        return 0


async def test_commit_nudges_are_spaced_and_none_is_lost() -> None:
    # At thousands of readings/s the queue runs dry every few messages: one commit per
    # nudge_gap_s, not one per dry spell, and the last nudge still comes (else the acks
    # of a burst's tail would wait for the store's own flush interval).
    from gateway.mqtt.acks import GEN_ATTR, AckTracker

    store = FakeStore()
    acks = AckTracker(store, nudge_gap_s=0.2)
    store.on_commit(acks.release)
    paho = _Paho()
    acks._clients[0] = paho  # a bound connection (bind() wants an aiomqtt client)
    for mid in range(1, 31):
        store.add()
        msg = _Msg(mid)
        setattr(msg, GEN_ATTR, 0)
        acks.done(msg)  # type: ignore[arg-type]
        acks.idle()  # the queue ran dry after every message
    await asyncio.sleep(0)  # the first nudge's commit (FakeStore commits on the loop)
    assert store.nudges == 1
    assert paho.acked == list(range(1, 31))  # everything handled was committed at once
    for mid in range(31, 41):  # inside the gap: no nudge now, one when it ends
        store.add()
        msg = _Msg(mid)
        setattr(msg, GEN_ATTR, 0)
        acks.done(msg)  # type: ignore[arg-type]
        acks.idle()
    await asyncio.sleep(0.05)
    assert store.nudges == 1
    assert acks.pending() == 10
    await wait_for(lambda: acks.pending() == 0, within=2)
    assert store.nudges == 2
    assert paho.acked == list(range(1, 41))


async def test_a_clean_stop_acknowledges_what_was_stored_so_nothing_is_redelivered(
    broker: Broker, tmp_path: Path
) -> None:
    # The last readings' acks wait for a commit when the link stops: stop() has the store
    # commit them and acknowledges them first, so a normal restart is not sent them again.
    store = FakeStore()
    rec = Recorder(store)
    link = make_link(broker, tmp_path, store, rec)
    link._acks._nudge_gap_s = 3600.0  # type: ignore[union-attr]  # no nudge after the first
    await link.start()
    await wait_for(link.connected.is_set)
    await publish(broker, [(VITALS, i) for i in range(5)])
    await wait_for(lambda: len(rec.seen) == 5)
    assert link.stats()["acks_pending"] > 0  # handled, not yet committed
    await link.stop()
    assert link.stats()["acks"].get("sent", 0) == 5

    assert await redelivered(broker, tmp_path) == []
