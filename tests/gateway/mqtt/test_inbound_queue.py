"""The inbound queue's bounds per class (security review, MEDIUM): device status and intents
were never shed, so one device account could fill memory with 1 MiB payloads. Now only an SOS
and an ack are exempt; status and intents each have a small bound and shed their oldest; an
SOS identical to the last one still waiting from the same device is queued once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiomqtt
import pytest

from gateway.contract.topics import intent_topic, sos_topic, status_topic
from gateway.mqtt.inbound_queue import PriorityMessageQueue
from gateway.mqtt.link import MqttLink
from tests.brokers import Broker
from tests.gateway.mqtt.test_link import ACK, SOS, Handled, msg, settings, started, wait_for

STATUS = status_topic("dad", "watch-jon")
INTENT = intent_topic("dad")
OTHER_SOS = sos_topic("dad", "pendant-jon")


def press(topic: str, action: str, ts: float, mid: int = 0) -> aiomqtt.Message:
    body = json.dumps({"action": action, "ts": ts}).encode()
    return aiomqtt.Message(topic, body, 1, False, mid, None)


def drain(q: PriorityMessageQueue) -> list[tuple[str, bytes]]:
    out = []
    while not q.empty():
        m = q.get_nowait()
        out.append((m.topic.value, bytes(m.payload)))
    return out


def test_status_and_intents_shed_their_own_oldest_and_never_an_sos_or_ack() -> None:
    drops: list[str] = []
    q = PriorityMessageQueue(1000, class_bound=3, on_drop=drops.append)
    for i in range(6):
        q.put_nowait(msg(STATUS, i))
        q.put_nowait(msg(INTENT, 100 + i))
        q.put_nowait(msg(SOS, 200 + i))
        q.put_nowait(msg(ACK, 300 + i))
    assert q.qsize() == 3 + 3 + 6 + 6
    assert sorted(drops) == ["shed_intent"] * 3 + ["shed_status"] * 3
    seqs = [(t, json.loads(p)["seq"]) for t, p in drain(q)]
    assert seqs == [
        *[(SOS, 200 + i) for i in range(6)],
        *[(ACK, 300 + i) for i in range(6)],
        *[(STATUS, i) for i in (3, 4, 5)],  # the newest status of each device wins
        *[(INTENT, 100 + i) for i in (3, 4, 5)],
    ]


def test_class_bounds_default_to_a_tenth_of_the_queue_at_least_100() -> None:
    assert PriorityMessageQueue(10_000).class_bound == 1000
    assert PriorityMessageQueue(50).class_bound == 100
    assert PriorityMessageQueue(0).class_bound == 100  # even an unbounded queue caps them


def test_an_identical_sos_waiting_from_the_same_device_is_queued_once() -> None:
    q = PriorityMessageQueue(10)
    q.put_nowait(press(SOS, "start", 1.0, 1))
    q.put_nowait(press(SOS, "start", 1.0, 2))  # a redelivery or a replay: the same bytes
    q.put_nowait(press(OTHER_SOS, "start", 1.0, 3))  # another device: its own press
    q.put_nowait(press(SOS, "start", 2.0, 4))  # a new press (new ts): kept
    assert q.coalesced_sos == 1 and q.qsize() == 3
    assert [t for t, _ in drain(q)] == [SOS, OTHER_SOS, SOS]
    q.put_nowait(press(SOS, "start", 2.0, 5))  # nothing waiting any more: queued
    assert q.qsize() == 1 and q.coalesced_sos == 1


def test_start_end_start_is_never_coalesced() -> None:
    """Only the last waiting SOS of a device is compared: coalescing the second start into the
    first would leave start, end: the person's SOS closed while they pressed it again."""
    q = PriorityMessageQueue(10)
    for action in ("start", "end", "start"):
        q.put_nowait(press(SOS, action, 1.0))
    assert q.coalesced_sos == 0
    assert [json.loads(p)["action"] for _, p in drain(q)] == ["start", "end", "start"]


@pytest.mark.integration
async def test_a_status_flood_is_bounded_and_the_sos_still_goes_first(
    tmp_path: Path, broker: Broker
) -> None:
    n, pad = 250, "x" * 10_000
    handled = Handled()
    link = MqttLink(settings(broker, tmp_path, "flood"), handled, [STATUS, SOS], inbound_size=50)
    await started(link)
    try:
        async with aiomqtt.Client("127.0.0.1", broker.port, identifier="stolen") as dev:
            handled.stall = True
            await dev.publish(STATUS, json.dumps({"seq": 0}), qos=1)
            await asyncio.wait_for(handled.stalled.wait(), 10)
            for i in range(1, n + 1):
                await dev.publish(STATUS, json.dumps({"seq": i, "pad": pad}), qos=1)
            for _ in range(3):  # the same press, delivered three times
                await dev.publish(SOS, json.dumps({"seq": 1000}), qos=1)
        await wait_for(lambda: link.inbound_depth() + link.shed["shed_status"] == n + 1)
        assert link.inbound_depth() == 100 + 1  # the class bound, and one SOS
        stats = link.stats()
        assert stats["shed"] == {"shed_status": n - 100} and stats["coalesced_sos"] == 2
        handled.release.set()
        await wait_for(lambda: len(handled.items) == 1 + 1 + 100)
        assert handled.items[:2] == [(STATUS, 0), (SOS, 1000)]
        assert [s for _, s in handled.items[2:]] == list(range(n - 99, n + 1))
    finally:
        await link.stop()
