"""The production broker config against a real mosquitto: who may connect, publish and read.

Mosquitto drops a denied publish silently (MQTT 3.1.1 still gets its PUBACK) and filters
denied deliveries, so every "not delivered" below is checked after a positive control that
was sent later on the same connection has arrived."""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.broker import AuthStore, Role
from gateway.contract.topics import (
    ack_topic,
    events_topic,
    gateway_events_topic,
    gateway_status_topic,
    intent_topic,
    notify_topic,
    reply_topic,
    sos_topic,
    state_topic,
    status_topic,
    vitals_topic,
)
from healthgw.cli import main
from tests.brokers import ROOT, Probe, SecureBroker, running_secure_broker

pytestmark = pytest.mark.integration

PASSWORDS = {
    "gateway": "gw-secret-7Qx9pLm2Za",
    "ha": "ha-secret-7Qx9pLm2Za",
    "sim": "sim-secret-7Qx9pLm2Za",
    "grandma.w1": "w1-secret",
    "grandma.w2": "w2-secret",
    "dad.w3": "w3-secret",
}
HA_CONFIG = "homeassistant/sensor/hub_grandma/heart_rate/config"
# The only person the simulator may act for (HEALTHGW_SIMULATOR_PERSONS).
SIMULATED = "simpat"


def prepare(auth_dir: Path, *, simulator: bool = True) -> AuthStore:
    store = AuthStore(auth_dir, iterations=1000)  # fewer rounds: the tests make many accounts
    services = {
        Role.GATEWAY: ("gateway", PASSWORDS["gateway"]),
        Role.HOMEASSISTANT: ("ha", PASSWORDS["ha"]),
    }
    if simulator:
        services[Role.SIMULATOR] = ("sim", PASSWORDS["sim"])
    store.ensure_services(services, simulator_persons=[SIMULATED])
    for username in ("grandma.w1", "grandma.w2", "dad.w3"):
        person, device = username.split(".")
        store.add_device(person, device, PASSWORDS[username])
    return store


@pytest.fixture
def secure(tmp_path: Path) -> Iterator[SecureBroker]:
    prepare(tmp_path / "broker" / "auth")
    with running_secure_broker(tmp_path / "broker") as b:
        yield b


@pytest.fixture
def clients() -> Iterator[list[Probe]]:
    made: list[Probe] = []
    yield made
    for c in made:
        c.close()


def login(broker: SecureBroker, made: list[Probe], username: str) -> Probe:
    probe = Probe(broker.port, username, PASSWORDS[username])
    assert probe.connect(), f"{username} was refused: {broker.log()[-500:]}"
    made.append(probe)
    return probe


def connects(port: int, username: str | None, password: str | None) -> bool:
    probe = Probe(port, username, password)
    try:
        return probe.connect()
    finally:
        probe.close()


def eventually_connects(port: int, username: str, password: str, want: bool) -> None:
    """SIGHUP is handled asynchronously: poll until the broker gives the wanted answer."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if connects(port, username, password) is want:
            return
        time.sleep(0.05)
    raise AssertionError(f"{username}: connect never became {want}")


def test_anonymous_unknown_and_wrong_password_are_refused(secure: SecureBroker) -> None:
    assert not connects(secure.port, None, None)
    assert not connects(secure.port, "grandma.w1", "wrong")
    assert not connects(secure.port, "nobody", "w1-secret")
    assert not connects(secure.port, "grandma.w1", "")
    assert connects(secure.port, "grandma.w1", PASSWORDS["grandma.w1"])


def test_a_device_publishes_only_to_its_own_topics(
    secure: SecureBroker, clients: list[Probe]
) -> None:
    gw = login(secure, clients, "gateway")
    gw.subscribe("#")
    dev = login(secure, clients, "grandma.w1")
    forbidden = [
        vitals_topic("dad", "w3"),  # another person
        sos_topic("dad", "w3"),
        vitals_topic("grandma", "w2"),  # another device of the same person
        ack_topic("grandma", "w2"),
        status_topic("grandma", "w2"),
        intent_topic("dad"),
        notify_topic("grandma"),  # only the gateway speaks to the person
        state_topic("grandma"),
        events_topic("grandma"),
        reply_topic("grandma"),
        gateway_status_topic("hub"),
        HA_CONFIG,
        "health/grandma/w1/other",
        "elsewhere",
    ]
    for topic in forbidden:
        dev.publish(topic, b"spoof")
    own = [
        sos_topic("grandma", "w1"),
        ack_topic("grandma", "w1"),
        status_topic("grandma", "w1"),
        intent_topic("grandma"),
        vitals_topic("grandma", "w1"),  # the control: last
    ]
    for topic in own:
        dev.publish(topic, b"{}")
    assert gw.wait_for(vitals_topic("grandma", "w1"))
    assert gw.topics() == set(own)


def test_a_device_reads_nothing_of_other_people_or_devices(
    secure: SecureBroker, clients: list[Probe]
) -> None:
    gw = login(secure, clients, "gateway")
    # Retained before the device subscribes: the retained path is filtered too.
    gw.publish(state_topic("dad"), b"{}", retain=True)
    gw.publish(state_topic("grandma"), b"{}", retain=True)
    dev = login(secure, clients, "grandma.w1")
    dev.subscribe("#", "health/#", "health/dad/#", "health/+/+/vitals", "health/grandma/w2/#")
    dev.subscribe("$SYS/#")
    dev.subscribe(notify_topic("grandma"), reply_topic("grandma"), events_topic("grandma"))
    dev.subscribe(state_topic("grandma"), status_topic("grandma", "w1"))
    assert dev.wait_for(state_topic("grandma"))

    others = [
        notify_topic("dad"),
        events_topic("dad"),
        state_topic("dad"),
        reply_topic("dad"),
        vitals_topic("dad", "w3"),
        status_topic("grandma", "w2"),  # a sibling device's status
        vitals_topic("grandma", "w2"),
        gateway_status_topic("hub"),
        gateway_events_topic("hub"),
        HA_CONFIG,
    ]
    for topic in others:
        gw.publish(topic, b"{}")
    mine = [
        status_topic("grandma", "w1"),
        notify_topic("grandma"),
        reply_topic("grandma"),
        events_topic("grandma"),  # the control: last
    ]
    for topic in mine:
        gw.publish(topic, b"{}")
    assert dev.wait_for(events_topic("grandma"))
    assert dev.topics() == {*mine, state_topic("grandma")}


def test_the_gateway_account_reads_every_device_and_publishes_its_topics(
    secure: SecureBroker, clients: list[Probe]
) -> None:
    gw = login(secure, clients, "gateway")
    gw.subscribe("health/+/+/vitals", "health/+/+/sos", "health/+/+/ack", "health/+/+/status")
    gw.subscribe("health/+/intent", "homeassistant/status")
    sent = {
        "grandma.w1": [vitals_topic("grandma", "w1"), sos_topic("grandma", "w1")],
        "grandma.w2": [ack_topic("grandma", "w2"), intent_topic("grandma")],
        "dad.w3": [status_topic("dad", "w3"), vitals_topic("dad", "w3")],
        "sim": [vitals_topic(SIMULATED, "watch"), intent_topic(SIMULATED)],
        "ha": ["homeassistant/status"],
    }
    for username, topics in sent.items():
        sender = login(secure, clients, username)
        for topic in topics:
            sender.publish(topic, b"{}")
    expected = {t for topics in sent.values() for t in topics}
    for topic in expected:
        assert gw.wait_for(topic), topic
    assert gw.topics() == expected
    # The compose healthcheck logs in as the gateway and reads the (retained) uptime.
    gw.subscribe("$SYS/broker/uptime")
    assert gw.wait_for("$SYS/broker/uptime")

    dev = login(secure, clients, "grandma.w1")
    dev.subscribe(notify_topic("grandma"), state_topic("grandma"), reply_topic("grandma"))
    ha = login(secure, clients, "ha")
    ha.subscribe("homeassistant/#", gateway_status_topic("+"), state_topic("+"))
    for topic in (
        notify_topic("grandma"),
        reply_topic("grandma"),
        HA_CONFIG,
        gateway_status_topic("hub"),
        gateway_events_topic("hub"),
        "gateway/hub/rejected",
        state_topic("grandma"),
    ):
        gw.publish(topic, b"{}")
    assert dev.wait_for(state_topic("grandma"))
    assert dev.topics() == {notify_topic("grandma"), reply_topic("grandma"), state_topic("grandma")}
    assert ha.wait_for(state_topic("grandma"))
    assert {HA_CONFIG, gateway_status_topic("hub")} <= ha.topics()


def test_home_assistant_reads_state_and_discovery_but_cannot_publish_vitals(
    secure: SecureBroker, clients: list[Probe]
) -> None:
    gw = login(secure, clients, "gateway")
    gw.subscribe("#")
    ha = login(secure, clients, "ha")
    ha.subscribe("#")
    readable = [
        HA_CONFIG,
        status_topic("grandma", "w1"),
        events_topic("grandma"),
        gateway_status_topic("hub"),
        gateway_events_topic("hub"),
        state_topic("dad"),  # the control: last
    ]
    private = [notify_topic("dad"), reply_topic("dad"), "gateway/hub/rejected"]
    for topic in private + readable:
        gw.publish(topic, b"{}")
    assert ha.wait_for(state_topic("dad"))
    assert ha.topics() == set(readable)

    gw.messages.clear()
    for topic in (vitals_topic("grandma", "w1"), sos_topic("dad", "w3"), notify_topic("dad")):
        ha.publish(topic, b"{}")
    ha.publish(state_topic("dad"), b"{}")
    ha.publish(HA_CONFIG, b"{}")
    ha.publish("homeassistant/status", b"online")  # HA's birth message: allowed, the control
    assert gw.wait_for("homeassistant/status")
    assert gw.topics() == {"homeassistant/status"}


def test_the_simulator_writes_and_reads_only_its_simulated_persons_topics(
    secure: SecureBroker, clients: list[Probe]
) -> None:
    gw = login(secure, clients, "gateway")
    gw.subscribe("#")
    sim = login(secure, clients, "sim")
    sim.subscribe("#")
    for person in ("dad", SIMULATED):
        for topic in (state_topic(person), events_topic(person), reply_topic(person)):
            gw.publish(topic, b"{}")
    gw.publish(notify_topic("dad"), b"{}")
    gw.publish(notify_topic(SIMULATED), b"{}")  # the control: last
    assert sim.wait_for(notify_topic(SIMULATED))
    assert sim.topics() == {reply_topic(SIMULATED), notify_topic(SIMULATED)}

    gw.messages.clear()
    real = [
        vitals_topic("dad", "w3"),  # a real person's device topics: dropped
        sos_topic("dad", "w3"),
        ack_topic("dad", "w3"),
        status_topic("dad", "w3"),
        vitals_topic("dad", "simwatch"),  # even under a device id the person does not have
        intent_topic("dad"),
        notify_topic(SIMULATED),  # only the gateway speaks to a person
        state_topic(SIMULATED),
    ]
    for topic in real:
        sim.publish(topic, b"spoof")
    own = [
        sos_topic(SIMULATED, "watch"),
        ack_topic(SIMULATED, "watch"),
        status_topic(SIMULATED, "watch"),
        intent_topic(SIMULATED),
        vitals_topic(SIMULATED, "watch"),  # the control: last
    ]
    for topic in own:
        sim.publish(topic, b"{}")
    assert gw.wait_for(vitals_topic(SIMULATED, "watch"))
    assert gw.topics() == set(own)


def test_a_disabled_simulator_cannot_connect(tmp_path: Path) -> None:
    prepare(tmp_path / "broker" / "auth", simulator=False)
    with running_secure_broker(tmp_path / "broker") as b:
        assert not connects(b.port, "sim", PASSWORDS["sim"])
        assert connects(b.port, "gateway", PASSWORDS["gateway"])


def test_only_the_gateway_acknowledges_for_another_person(
    secure: SecureBroker, clients: list[Probe]
) -> None:
    """An SOS acknowledgement (`{"ok": true, "prompt_id": "sos"}` on .../ack) stops the
    escalation ladder: a device acks only for its own person, Home Assistant never."""
    watcher = login(secure, clients, "gateway")
    watcher.subscribe("health/+/+/ack")
    ack = b'{"ok": true, "prompt_id": "sos"}'
    dev = login(secure, clients, "grandma.w1")
    dev.publish(ack_topic("dad", "w3"), ack)  # another person's device
    dev.publish(ack_topic("dad", "w1"), ack)  # another person, its own device id
    ha = login(secure, clients, "ha")
    ha.publish(ack_topic("dad", "w3"), ack)
    ha.publish(ack_topic("grandma", "w1"), ack)
    sim = login(secure, clients, "sim")
    sim.publish(ack_topic("dad", "w3"), ack)
    dad = login(secure, clients, "dad.w3")
    dad.publish(ack_topic("dad", "w3"), ack)  # the control: dad's own watch
    assert watcher.wait_for(ack_topic("dad", "w3"))
    assert watcher.topics() == {ack_topic("dad", "w3")}
    assert len(watcher.messages) == 1


def test_a_last_will_on_another_persons_topic_is_dropped(
    secure: SecureBroker, clients: list[Probe]
) -> None:
    gw = login(secure, clients, "gateway")
    gw.subscribe("#")
    liar = Probe(secure.port, "grandma.w1", PASSWORDS["grandma.w1"])
    liar.client.will_set(status_topic("dad", "w3"), "offline", qos=1, retain=True)
    honest = Probe(secure.port, "grandma.w2", PASSWORDS["grandma.w2"])
    honest.client.will_set(status_topic("grandma", "w2"), "offline", qos=1, retain=True)
    assert liar.connect() and honest.connect()
    for probe in (liar, honest):  # vanish without DISCONNECT: the broker sends the will
        sock = probe.client.socket()
        assert isinstance(sock, socket.socket)
        sock.shutdown(socket.SHUT_RDWR)
        probe.client.loop_stop()
        # The liar's will must be handled before the honest one is sent: wait for the log.
        deadline = time.monotonic() + 5
        while f"{probe.client_id} closed its connection" not in secure.log():
            assert time.monotonic() < deadline, "the broker never noticed the close"
            time.sleep(0.02)
    assert gw.wait_for(status_topic("grandma", "w2"), b"offline")
    assert gw.topics() == {status_topic("grandma", "w2")}


def test_a_device_added_while_the_broker_runs_connects_after_sighup(
    secure: SecureBroker, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEALTHGW_MQTT_USERNAME", "gateway")
    monkeypatch.setenv("HEALTHGW_MQTT_PASSWORD", PASSWORDS["gateway"])
    assert not connects(secure.port, "dad.band", "anything")
    assert secure.proc is not None
    argv = ["devices", "add", "dad", "band", "--auth-dir", str(secure.auth_dir), "--json"]
    assert main([*argv, "--reload-pid", str(secure.proc.pid)]) == 0
    created = json.loads(capsys.readouterr().out)
    assert created["username"] == "dad.band"
    eventually_connects(secure.port, "dad.band", created["password"], want=True)
    # `devices init` re-checked the gateway's password without changing it.
    assert connects(secure.port, "gateway", PASSWORDS["gateway"])


def test_removal_revokes_after_sighup(
    secure: SecureBroker, clients: list[Probe], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HEALTHGW_MQTT_USERNAME", raising=False)
    connected = login(secure, clients, "grandma.w1")
    assert main(["devices", "remove", "grandma", "w1", "--auth-dir", str(secure.auth_dir)]) == 0
    # Not applied until the broker reloads.
    assert connects(secure.port, "grandma.w1", PASSWORDS["grandma.w1"])
    secure.reload()
    eventually_connects(secure.port, "grandma.w1", PASSWORDS["grandma.w1"], want=False)
    # The reload also drops the revoked device's open connection; its sibling stays.
    deadline = time.monotonic() + 5
    while connected.is_connected():
        assert time.monotonic() < deadline, "the revoked device is still connected"
        time.sleep(0.05)
    assert connects(secure.port, "grandma.w2", PASSWORDS["grandma.w2"])


@pytest.fixture
def certs(tmp_path: Path) -> Path:
    out = tmp_path / "certs"
    script = ROOT / "scripts" / "make-broker-certs.sh"
    subprocess.run([str(script), "hub.test", str(out)], check=True, capture_output=True)
    return out


def test_make_broker_certs_writes_a_ca_and_a_server_cert_for_the_hostname(certs: Path) -> None:
    assert (os.stat(certs / "server.key").st_mode & 0o777) == 0o600
    assert (os.stat(certs / "ca.key").st_mode & 0o777) == 0o600
    verify = ["openssl", "verify", "-CAfile", str(certs / "ca.crt"), str(certs / "server.crt")]
    assert subprocess.run(verify, capture_output=True).returncode == 0
    san = subprocess.run(
        ["openssl", "x509", "-in", str(certs / "server.crt"), "-noout", "-ext", "subjectAltName"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "DNS:hub.test" in san and "DNS:localhost" in san and "IP Address:127.0.0.1" in san


def test_tls_listener_with_the_scripts_certificates(
    tmp_path: Path, certs: Path, clients: list[Probe]
) -> None:
    prepare(tmp_path / "broker" / "auth")
    with running_secure_broker(tmp_path / "broker", certs_dir=certs) as b:
        assert b.tls_port is not None
        gw = login(b, clients, "gateway")  # plain listener, same rules
        gw.subscribe("#")
        for host in ("localhost", "127.0.0.1"):  # both are in the certificate
            dev = Probe(b.tls_port, "grandma.w1", PASSWORDS["grandma.w1"], host=host)
            dev.client.tls_set(ca_certs=str(certs / "ca.crt"))
            clients.append(dev)
            assert dev.connect()
            dev.publish(vitals_topic("grandma", "w1"), host.encode())
            assert gw.wait_for(vitals_topic("grandma", "w1"), host.encode())

        # The same rules over TLS: no password, no entry.
        anon = Probe(b.tls_port, host="localhost", ca_file=certs / "ca.crt")
        assert not anon.connect()
        # Without our CA the broker's certificate does not verify.
        stranger = Probe(b.tls_port, "grandma.w1", PASSWORDS["grandma.w1"], host="localhost")
        stranger.client.tls_set()  # the system's CAs only
        with pytest.raises(ssl.SSLCertVerificationError):
            stranger.connect()
        stranger.close()
