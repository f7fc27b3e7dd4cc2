"""Fleet mode over a real broker, generated households, and the fleet CLI."""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from gateway.contract.topics import VitalsPayload, parse_topic, sos_topic, status_topic
from gateway.household.model import load_household
from simulators import cli
from simulators.fleet import Fleet, SimDevice, devices_from_household, make_household
from simulators.vitals import VitalsModel
from tests.brokers import ROOT, Broker
from tests.simulators.test_watch import Spy

START = 1_790_000_000.0


def test_make_household_is_a_valid_household(tmp_path: Path) -> None:
    path = tmp_path / "hh.yaml"
    made = make_household(120, path, seed=3, interval_s=10)
    hh = load_household(path)
    assert hh == made
    assert len(hh.persons) == 120
    devices = [(p.id, d.id, d.interval_s) for p in hh.persons for d in p.devices]
    assert len({d for _, d, _ in devices}) == 120
    assert all(interval == 10 for *_, interval in devices)
    assert all(len(p.emergency_contacts) == 2 for p in hh.persons)
    assert len(hh.ambulances) == 3
    # Every number is in Ofcom's drama range: a misconfigured provider texts no stranger.
    phones = [c.phone for p in hh.persons for c in p.emergency_contacts] + [
        a.phone for a in hh.ambulances
    ]
    assert all(n.startswith("+447700900") for n in phones)
    # Deterministic by seed.
    make_household(120, tmp_path / "again.yaml", seed=3, interval_s=10)
    assert (tmp_path / "again.yaml").read_text() == path.read_text()


def test_fleet_publishes_the_expected_count(broker: Broker, tmp_path: Path) -> None:
    hh = make_household(200, tmp_path / "hh.yaml")
    devices = devices_from_household(hh, start_ts=START, seed=1)
    spy = Spy(broker)
    fleet = Fleet(devices, "127.0.0.1", broker.port, rate=400, per_connection=50, start_ts=START)
    assert fleet.stats.connections == 4
    fleet.connect()
    stats = fleet.run(duration=1.0)
    fleet.disconnect()
    assert stats.published == 400  # ceil(duration * rate), however the loop was woken
    assert stats.acked == 400 + 2 * 200  # readings plus online and offline per device
    spy.wait_for(lambda s: sum(t.endswith("/vitals") for t, _, _ in s.messages) == 400)
    per_device: Counter[str] = Counter()
    statuses: dict[str, list[bytes]] = {}
    for topic, payload, _ in spy.messages:
        parsed = parse_topic(topic)
        assert parsed is not None and parsed.device is not None
        if topic.endswith("/vitals"):
            VitalsPayload.model_validate_json(payload)
            per_device[parsed.device] += 1
        else:
            statuses.setdefault(parsed.device, []).append(payload)
    assert set(per_device.values()) == {2}  # round robin: every device twice
    assert len(statuses) == 200
    spy.wait_for(lambda s: sum(p == b"offline" for t, p, _ in s.messages) == 200)
    spy.close()


def test_each_device_reading_ts_advance_by_its_interval(broker: Broker) -> None:
    models = [VitalsModel(f"p{i}", start_ts=START, interval_s=5) for i in range(4)]
    devices = [SimDevice(f"p{i}", f"w{i}", m) for i, m in enumerate(models)]
    spy = Spy(broker)
    fleet = Fleet(devices, "127.0.0.1", broker.port, speed=10, start_ts=START)
    assert fleet.rate == pytest.approx(4 * 10 / 5)  # 10x faster than real time
    fleet.connect()
    fleet.run(duration=1.0)
    fleet.disconnect()
    spy.wait_for(lambda s: sum(t.endswith("/vitals") for t, _, _ in s.messages) == 8)
    ts = [
        VitalsPayload.model_validate_json(p).ts
        for t, p, _ in spy.messages
        if t == "health/p0/w0/vitals"
    ]
    assert ts == [START, START + 5]
    spy.close()


def test_dead_battery_marks_the_device_offline_and_sos_works(broker: Broker) -> None:
    dying = VitalsModel("p0", start_ts=START, scenario="battery_dying", battery=10, interval_s=60)
    well = VitalsModel("p1", start_ts=START, home=(51.5, -0.1), interval_s=60)
    devices = [SimDevice("p0", "w0", dying), SimDevice("p1", "w1", well)]
    spy = Spy(broker)
    # Each device reads every 2/40 s of wall time = 60 s of simulated time at speed 1200.
    fleet = Fleet(devices, "127.0.0.1", broker.port, rate=40, speed=1200, start_ts=START)
    fleet.connect()
    fleet.press_sos("p1", ts=START + 1)
    fleet.end_sos("p1", ts=START + 2)
    stats = fleet.run(duration=0.5)
    fleet.disconnect()
    assert stats.dead == 1
    # p1 sends all its 10; p0 dies on its 6th (t = 300 s, BATTERY_DYING_S).
    assert stats.published == 10 + 6
    spy.wait_for(lambda s: s.on(status_topic("p1", "w1"))[-1:] == [b"offline"])
    assert spy.on(status_topic("p0", "w0")) == [b"online", b"offline"]
    start, end = (json.loads(p) for p in spy.on(sos_topic("p1", "w1")))
    assert start["action"] == "start" and start["location"] == {
        "latitude": 51.5,
        "longitude": -0.1,
    }
    assert end["action"] == "end"
    spy.close()


def test_cli_fleet_generates_a_household_and_reports(
    broker: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fleet.yaml"
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    flags = "--persons 20 --fleet --rate 40 --duration 1 --scenario p00=hypoxia"
    argv = ["--mqtt-url", broker.url, "--household-out", str(out), *flags.split()]
    assert cli.run_simulate(parser.parse_args(argv)) == 0
    assert len(load_household(out).persons) == 20
    text = capsys.readouterr().out
    assert "40 readings from 20 devices over 1 connection(s)" in text
    # A household the user wrote is never overwritten.
    mine = tmp_path / "mine.yaml"
    mine.write_text("persons: []\n")
    argv[argv.index(str(out))] = str(mine)
    assert cli.run_simulate(parser.parse_args(argv)) == 2
    assert mine.read_text() == "persons: []\n"
    assert "not overwriting" in capsys.readouterr().err


def test_cli_rejects_unknown_scenarios(household_path: Path) -> None:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    base = ["--household", str(household_path), "--duration", "0"]
    assert cli.run_simulate(parser.parse_args([*base, "--scenario", "zombie"])) == 2
    assert cli.run_simulate(parser.parse_args([*base, "--scenario", "nobody=fever"])) == 2


def test_ctrl_c_stops_cleanly_with_a_summary(broker: Broker, tmp_path: Path) -> None:
    spy = Spy(broker)
    argv = ["--mqtt-url", broker.url, "--persons", "5", "--fleet", "--interval", "0.2"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "simulators.cli", *argv, "--household-out", str(tmp_path / "h")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        spy.wait_for(lambda s: sum(t.endswith("/vitals") for t, _, _ in s.messages) >= 10)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert "readings from 5 devices" in out
    spy.wait_for(lambda s: sum(p == b"offline" for _, p, _ in s.messages) == 5)
    spy.close()
