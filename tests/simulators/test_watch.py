"""A simulated watch against a real private mosquitto: topics, payloads, status and last will."""

from __future__ import annotations

import argparse
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from gateway.contract.topics import (
    STATUS_OFFLINE,
    STATUS_ONLINE,
    AckPayload,
    SosPayload,
    VitalsPayload,
    ack_topic,
    notify_topic,
    sos_topic,
    status_topic,
    vitals_topic,
)
from simulators import cli
from simulators.vitals import VitalsModel
from simulators.watch import Watch
from tests.brokers import Broker

START = 1_790_000_000.0
HOME = (51.5072, -0.1276)


class Spy:
    """A plain MQTT client that records everything under `topic` (retained included)."""

    def __init__(self, broker: Broker, topic: str = "health/#") -> None:
        self.messages: list[tuple[str, bytes, bool]] = []
        self._cond = threading.Condition()
        subscribed = threading.Event()
        self.client = mqtt.Client(
            callback_api_version=CallbackAPIVersion.VERSION2, client_id=f"spy-{uuid.uuid4().hex}"
        )
        self.client.on_connect = lambda c, *_: c.subscribe(topic, 1)
        self.client.on_subscribe = lambda *_: subscribed.set()
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", broker.port)
        self.client.loop_start()
        assert subscribed.wait(5)

    def _on_message(self, client: Any, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        with self._cond:
            self.messages.append((msg.topic, msg.payload, bool(msg.retain)))
            self._cond.notify_all()

    def on(self, topic: str) -> list[bytes]:
        with self._cond:
            return [p for t, p, _ in self.messages if t == topic]

    def wait_for(self, pred: Callable[[Spy], bool], timeout: float = 10.0) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: pred(self), timeout), "timed out waiting"

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
def spy(broker: Broker) -> Iterator[Spy]:
    s = Spy(broker)
    yield s
    s.close()


def make_watch(broker: Broker, scenario: str = "normal", **kw: Any) -> Watch:
    model = VitalsModel("grandma", seed=1, start_ts=START, scenario=scenario, home=HOME)
    return Watch("grandma", "watch-maria", model, "127.0.0.1", broker.port, **kw)


def test_readings_arrive_on_the_contract_topic_and_validate(broker: Broker, spy: Spy) -> None:
    w = make_watch(broker)
    w.connect()
    sent = [w.publish_reading(START + i * 5) for i in range(5)]
    assert w.flush()
    topic = vitals_topic("grandma", "watch-maria")
    spy.wait_for(lambda s: len(s.on(topic)) == 5)
    got = [VitalsPayload.model_validate_json(p) for p in spy.on(topic)]
    assert [g.seq for g in got] == [0, 1, 2, 3, 4]
    assert [g.heart_rate for g in got] == [s["heart_rate"] for s in sent if s]
    assert got[0].ts == START
    w.disconnect()


def test_online_is_retained_and_clean_disconnect_says_offline(broker: Broker) -> None:
    w = make_watch(broker)
    w.connect()
    status = status_topic("grandma", "watch-maria")
    late = Spy(broker)  # subscribes after the announcement: sees it only if retained
    late.wait_for(lambda s: s.on(status) == [STATUS_ONLINE.encode()])
    assert late.messages[0][2] is True
    w.disconnect(clean=True)
    late.wait_for(lambda s: s.on(status)[-1] == STATUS_OFFLINE.encode())
    late.close()
    later = Spy(broker)
    later.wait_for(lambda s: s.on(status) == [STATUS_OFFLINE.encode()])
    later.close()


def test_last_will_fires_after_an_unclean_drop(broker: Broker, spy: Spy) -> None:
    w = make_watch(broker)
    w.connect()
    status = status_topic("grandma", "watch-maria")
    spy.wait_for(lambda s: s.on(status) == [STATUS_ONLINE.encode()])
    w.disconnect(clean=False)  # TCP dropped without DISCONNECT, as a crash would
    spy.wait_for(lambda s: s.on(status) == [STATUS_ONLINE.encode(), STATUS_OFFLINE.encode()])


def test_flat_battery_sends_last_reading_then_the_will(broker: Broker, spy: Spy) -> None:
    w = make_watch(broker, scenario="battery_dying")
    w.connect()
    ts = START
    while w.publish_reading(ts) is not None:
        ts += 30
    assert w.publish_reading(ts) is None
    assert not w.connected
    status = status_topic("grandma", "watch-maria")
    spy.wait_for(lambda s: s.on(status)[-1:] == [STATUS_OFFLINE.encode()])
    last = json.loads(spy.on(vitals_topic("grandma", "watch-maria"))[-1])
    assert last["battery"] == 0


def test_sos_press_and_end(broker: Broker, spy: Spy) -> None:
    w = make_watch(broker, clock=lambda: START + 60)
    w.connect()
    w.press_sos()
    w.end_sos()
    w.press_sos(location={"latitude": 1.5, "longitude": 2.5})
    topic = sos_topic("grandma", "watch-maria")
    spy.wait_for(lambda s: len(s.on(topic)) == 3)
    start, end, elsewhere = (SosPayload.model_validate_json(p) for p in spy.on(topic))
    assert (start.action, end.action) == ("start", "end")
    assert start.ts == START + 60
    assert start.location is not None
    assert (start.location.latitude, start.location.longitude) == HOME
    assert elsewhere.location is not None and elsewhere.location.latitude == 1.5
    w.disconnect()


def test_notifications_are_kept_and_prompts_answered(broker: Broker, spy: Spy) -> None:
    seen: list[str] = []
    w = make_watch(broker, auto_answer=True, on_notify=lambda _w, n: seen.append(n.text))
    w.connect()
    notify = notify_topic("grandma")
    spy.client.publish(notify, json.dumps({"text": "Your SpO2 is 86%", "kind": "soft_sos"}), 1)
    spy.client.publish(notify, b"not json", 1)
    prompt = {"text": "Are you OK?", "kind": "prompt", "prompt_id": "p-42"}
    spy.client.publish(notify, json.dumps(prompt), 1)
    note = w.wait_for_notification("prompt")
    assert note is not None and note.prompt_id == "p-42"
    assert [n.kind for n in w.notifications] == ["soft_sos", "prompt"]
    assert seen == ["Your SpO2 is 86%", "Are you OK?"]
    assert w.invalid_notifications == 1
    topic = ack_topic("grandma", "watch-maria")
    spy.wait_for(lambda s: len(s.on(topic)) == 1)
    ack = AckPayload.model_validate_json(spy.on(topic)[0])
    assert ack.ok is True and ack.prompt_id == "p-42"
    w.ack(ok=False, prompt_id="p-43")
    spy.wait_for(lambda s: len(s.on(topic)) == 2)
    assert json.loads(spy.on(topic)[1])["ok"] is False
    w.disconnect()


def test_connect_to_nothing_raises(tmp_path: Path) -> None:
    from tests.brokers import free_port

    w = Watch("a", "b", VitalsModel("a", start_ts=START), "127.0.0.1", free_port())
    with pytest.raises(OSError):
        w.connect(timeout=2)


def test_cli_per_device_mode_publishes_and_presses_sos(
    broker: Broker, spy: Spy, household_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    flags = "--interval 0.2 --duration 1.5 --sos-at 0.3 --sos-end-at 0.6 --scenario dad=fever"
    argv = ["--mqtt-url", broker.url, "--household", str(household_path), *flags.split()]
    assert cli.run_simulate(parser.parse_args(argv)) == 0
    sos = sos_topic("grandma", "watch-maria")
    spy.wait_for(lambda s: len(s.on(sos)) == 2)
    assert [json.loads(p)["action"] for p in spy.on(sos)] == ["start", "end"]
    for person, device in (("grandma", "watch-maria"), ("dad", "watch-jon")):
        readings = spy.on(vitals_topic(person, device))
        assert readings, person
        for p in readings:
            VitalsPayload.model_validate_json(p)
        status = status_topic(person, device)
        spy.wait_for(lambda s, t=status: s.on(t)[-1:] == [b"offline"])
    out = capsys.readouterr().out
    assert "readings from 2 device(s)" in out and "SOS pressed 1, ended 1" in out
