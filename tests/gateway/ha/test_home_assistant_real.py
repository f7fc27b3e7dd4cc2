"""Our Home Assistant discovery, proved with Home Assistant itself (slow, opt-in: `pytest -m
slow tests/gateway/ha/test_home_assistant_real.py`, or `make test-all`).

A real HA (tests/home_assistant.py: its own cached venv) with the MQTT integration on this
test's mosquitto, and a real `healthgw run` process publishing discovery for a household.
Through HA's REST API: every entity we announce appears with its unit, device class, state
class and availability; readings show up as states; a hard SOS turns the SOS binary sensor
on; the hub going away makes the person entities unavailable; a device and a person removed
from the household (restart with a smaller file) leave HA's states and entity registry."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import paho.mqtt.publish as mqtt_publish
import pytest
import yaml

from gateway.broker import AuthStore, Role
from gateway.contract.topics import sos_topic, vitals_topic
from gateway.ha.messages import NEWS2_LEVELS, discovery_messages
from gateway.household.model import Household
from tests import home_assistant
from tests.brokers import Broker, free_port, running_secure_broker, stop_process
from tests.harness import ROOT, gateway_process_env, spawn_gateway

if TYPE_CHECKING:
    from paho.mqtt.publish import AuthParameter

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]
GW = "testhub"
PASSWORDS = {"gateway": "gw-secret-7Qx9pLm2Za", "homeassistant": "ha-secret-7Qx9pLm2Za",
             "watch": "watch-secret-7Qx9pLm2"}  # fmt: skip


def _household(tmp: Path, name: str, *, with_cuff: bool, with_dad: bool) -> tuple[Path, Household]:
    """The example household; grandma also has a blood-pressure cuff when `with_cuff`."""
    data = yaml.safe_load((ROOT / "examples" / "household.yaml").read_text())
    grandma = next(p for p in data["persons"] if p["id"] == "grandma")
    if with_cuff:
        grandma["devices"].append({"id": "cuff-maria", "kind": "bp_cuff", "interval_s": 3600})
    if not with_dad:
        data["persons"] = [p for p in data["persons"] if p["id"] != "dad"]
    path = tmp / name
    path.write_text(yaml.safe_dump(data))
    return path, Household.model_validate(data)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def expected_entities(hh: Household) -> dict[str, dict[str, Any]]:
    """entity_id -> our discovery config. HA names an entity `<device name> <entity name>`
    and derives the id from it (has_entity_name)."""
    return {
        f"{m.component}.{_slug(m.payload['device']['name'] + ' ' + m.payload['name'])}": m.payload
        for m in discovery_messages(hh, GW)
    }


@pytest.fixture(scope="module")
def ha_python() -> Path:
    started = time.monotonic()
    python = home_assistant.ensure_installed()
    print(f"Home Assistant {home_assistant.HA_VERSION} ready in {time.monotonic() - started:.0f} s")
    return python


class Gateway:
    """`healthgw run` as a process; restartable with another household file."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, household: Path, broker_url: str, **env_extra: str) -> None:
        env = gateway_process_env(self.tmp / "data", broker_url, household=household, gateway_id=GW)
        env |= env_extra
        self.proc = spawn_gateway(env, self.tmp / "gateway.log")

    def stop(self) -> None:
        stop_process(self.proc, timeout=20)
        self.proc = None


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    gw = Gateway(tmp_path)
    try:
        yield gw
    finally:
        gw.stop()


def _send(port: int, topic: str, body: dict[str, Any], auth: AuthParameter | None = None) -> None:
    mqtt_publish.single(topic, json.dumps(body), qos=1, hostname="127.0.0.1", port=port, auth=auth)


def _ha_errors(log: Path) -> list[str]:
    """HA's errors and warnings about our entities or templates (other integrations' import
    errors on this minimal install, e.g. camera without numpy, are not ours)."""
    lines = log.read_text(errors="replace").splitlines()
    ours = ("mqtt", "template", "healthgw", "sensor.", "value_json")
    return [
        ln for ln in lines if (" ERROR " in ln or " WARNING " in ln) and any(w in ln for w in ours)
    ]


def test_home_assistant_shows_what_the_hub_announces(
    ha_python: Path, tmp_path: Path, broker: Broker, gateway: Gateway
) -> None:
    full_path, full = _household(tmp_path, "household.yaml", with_cuff=True, with_dad=True)
    small_path, small = _household(tmp_path, "smaller.yaml", with_cuff=False, with_dad=False)
    want = expected_entities(full)
    with home_assistant.running(
        ha_python, tmp_path / "ha", http_port=free_port(), mqtt_port=broker.port
    ) as ha:
        gateway.start(full_path, broker.url)
        t0 = time.monotonic()
        # Every entity, available (the hub's retained status says online), except the NEWS2
        # levels: unavailable until there is a NEWS2.
        levels = {e for e in want if e.endswith("_news2_level")}
        states = ha.wait(
            lambda s: (
                set(want) <= set(s)
                and all(s[e]["state"] != "unavailable" for e in set(want) - levels)
            ),
            "every announced entity, available",
            90,
        )
        print(f"{len(want)} entities in HA {time.monotonic() - t0:.1f} s after the gateway start")
        assert all(states[e]["state"] == "unavailable" for e in levels)

        # Units and classes exactly as announced.
        for entity_id, cfg in want.items():
            attrs = states[entity_id]["attributes"]
            for key in ("unit_of_measurement", "device_class", "state_class"):
                assert attrs.get(key) == cfg.get(key), (entity_id, key, attrs)
        # Nothing measured yet: values unknown, the level unavailable until there is one.
        assert states["sensor.maria_lopez_heart_rate"]["state"] == "unknown"
        assert states["binary_sensor.maria_lopez_sos"]["state"] == "off"
        assert states["sensor.maria_lopez_open_alerts"]["state"] == "0"
        assert states["binary_sensor.healthgw_hub_testhub_status"]["state"] == "on"

        # Readings become states.
        now = time.time()
        _send(broker.port, vitals_topic("grandma", "watch-maria"),
              {"ts": now, "seq": 1, "heart_rate": 77, "spo2": 97, "temperature_c": 37.1,
               "respiratory_rate": 16, "battery": 55})  # fmt: skip
        _send(broker.port, vitals_topic("grandma", "cuff-maria"),
              {"ts": now, "seq": 1, "systolic_bp": 128, "diastolic_bp": 82, "battery": 90})  # fmt: skip
        _send(broker.port, vitals_topic("dad", "watch-jon"),
              {"ts": now, "seq": 1, "heart_rate": 64, "spo2": 98, "battery": 71})  # fmt: skip
        expect = {
            "sensor.maria_lopez_heart_rate": "77.0",
            "sensor.maria_lopez_spo2": "97.0",
            "sensor.maria_lopez_temperature": "37.1",
            "sensor.maria_lopez_respiratory_rate": "16.0",
            "sensor.maria_lopez_systolic_blood_pressure": "128.0",
            "sensor.maria_lopez_diastolic_blood_pressure": "82.0",
            "sensor.maria_lopez_watch_maria_battery": "55.0",
            "sensor.maria_lopez_cuff_maria_battery": "90.0",
            "binary_sensor.maria_lopez_watch_maria_connectivity": "on",
            "binary_sensor.maria_lopez_cuff_maria_connectivity": "on",
            "sensor.jon_smith_heart_rate": "64.0",
            "sensor.jon_smith_watch_jon_battery": "71.0",
            "binary_sensor.jon_smith_watch_jon_connectivity": "on",
        }
        states = ha.wait(
            lambda s: all(s[e]["state"] == v for e, v in expect.items()), "the readings", 60
        )
        assert states["sensor.maria_lopez_news2_level"]["state"] in NEWS2_LEVELS
        assert states["sensor.maria_lopez_news2_score"]["state"].isdigit()
        conn = states["binary_sensor.maria_lopez_watch_maria_connectivity"]["attributes"]
        assert conn["device_state"] == "active" and conn["battery"] == 55.0
        assert conn["last_seen"].endswith("Z")

        # A hard SOS turns the SOS binary sensor on; ending it turns it off.
        _send(
            broker.port, sos_topic("grandma", "watch-maria"), {"action": "start", "ts": time.time()}
        )
        ha.wait(lambda s: s["binary_sensor.maria_lopez_sos"]["state"] == "on", "SOS on", 30)
        assert ha.states()["binary_sensor.jon_smith_sos"]["state"] == "off"
        _send(
            broker.port, sos_topic("grandma", "watch-maria"), {"action": "end", "ts": time.time()}
        )
        ha.wait(lambda s: s["binary_sensor.maria_lopez_sos"]["state"] == "off", "SOS off", 30)

        # The hub goes away: its last will makes every person entity unavailable.
        gateway.stop()
        people = [e for e, c in want.items() if "availability_topic" in c or "availability" in c]
        ha.wait(
            lambda s: all(s[e]["state"] == "unavailable" for e in people),
            "the person entities unavailable",
            30,
        )
        assert ha.states()["binary_sensor.healthgw_hub_testhub_status"]["state"] == "off"

        # Back with a smaller household: the cuff's and dad's entities leave HA.
        gateway.start(small_path, broker.url)
        keep = expected_entities(small)
        gone = set(want) - set(keep)
        assert {e for e in gone if "cuff_maria" in e} and {e for e in gone if "jon_smith" in e}
        states = ha.wait(
            lambda s: not gone & set(s) and s["sensor.maria_lopez_heart_rate"]["state"] == "77.0",
            "the removed entities gone",
            60,
        )
        assert set(keep) <= set(states)
        registry = json.loads(ha.template("{{ integration_entities('mqtt') | tojson }}"))
        assert not gone & set(registry), sorted(gone & set(registry))
        assert set(keep) <= set(registry)
        devices = ha.template(
            "{{ integration_entities('mqtt') | map('device_attr', 'name') | unique | list }}"
        )
        assert "Jon Smith" not in devices and "Maria Lopez" in devices

        assert _ha_errors(ha.log) == []
    # HA saves its registries when it stops: the removed person's device is gone too.
    saved = json.loads((tmp_path / "ha" / ".storage" / "core.device_registry").read_text())
    names = {d.get("name") for d in saved["data"]["devices"]}
    assert "Maria Lopez" in names and "Jon Smith" not in names, names
    deleted = [d["identifiers"] for d in saved["data"]["deleted_devices"]]
    assert [["mqtt", f"healthgw_{GW}_dad"]] in deleted, deleted


def test_home_assistant_with_its_own_account_on_the_production_broker(
    ha_python: Path, tmp_path: Path, gateway: Gateway
) -> None:
    """mosquitto/mosquitto.conf's rules with the accounts `healthgw devices init` makes: HA's
    own account reads what the entities need, the watch publishes with its own."""
    auth = tmp_path / "broker" / "auth"
    store = AuthStore(auth, iterations=1000)
    store.ensure_services(
        {Role.GATEWAY: ("gateway", PASSWORDS["gateway"]),
         Role.HOMEASSISTANT: ("homeassistant", PASSWORDS["homeassistant"])}
    )  # fmt: skip
    store.add_device("grandma", "watch-maria", PASSWORDS["watch"])
    path, hh = _household(tmp_path, "household.yaml", with_cuff=False, with_dad=True)
    want = expected_entities(hh)
    levels = {e for e in want if e.endswith("_news2_level")}
    login = ("homeassistant", PASSWORDS["homeassistant"])
    sos, heart = "binary_sensor.maria_lopez_sos", "sensor.maria_lopez_heart_rate"
    with running_secure_broker(tmp_path / "broker") as b:
        with home_assistant.running(
            ha_python, tmp_path / "ha", http_port=free_port(), mqtt_port=b.port, mqtt_login=login
        ) as ha:
            gateway.start(
                path,
                f"mqtt://127.0.0.1:{b.port}",
                HEALTHGW_MQTT_USERNAME="gateway",
                HEALTHGW_MQTT_PASSWORD=PASSWORDS["gateway"],
            )
            ha.wait(
                lambda s: (
                    set(want) <= set(s)
                    and all(s[e]["state"] != "unavailable" for e in set(want) - levels)
                ),
                "every announced entity, available, through HA's own account",
                90,
            )
            watch: AuthParameter = {
                "username": "grandma.watch-maria",
                "password": PASSWORDS["watch"],
            }
            reading = {"ts": time.time(), "seq": 1, "heart_rate": 81, "battery": 60}
            _send(b.port, vitals_topic("grandma", "watch-maria"), reading, watch)
            ha.wait(
                lambda s: (
                    s[heart]["state"] == "81.0"
                    and s["binary_sensor.maria_lopez_watch_maria_connectivity"]["state"] == "on"
                ),
                "the watch's reading",
                60,
            )
            press = {"action": "start", "ts": time.time()}
            _send(b.port, sos_topic("grandma", "watch-maria"), press, watch)
            ha.wait(lambda s: s[sos]["state"] == "on", "SOS on", 30)
        # HA restarts (an update, a reboot) while the hub runs: the retained configs and
        # state give it every entity and the open SOS straight away.
        with home_assistant.running(
            ha_python, tmp_path / "ha", http_port=free_port(), mqtt_port=b.port, mqtt_login=login
        ) as ha:
            ha.wait(
                lambda s: (
                    s.get(sos, {}).get("state") == "on"
                    and s[heart]["state"] == "81.0"
                    and set(want) <= set(s)
                ),
                "the entities and the open SOS after HA's restart",
                60,
            )
            assert _ha_errors(ha.log) == []  # both runs: the log is appended to
        # The states above are the proof that HA's account may read what its entities
        # need; mosquitto also logged no denied publish for HA's clients (birth messages).
        log = b.log()
    clients = re.findall(r"as (\S+) \(.*u'homeassistant'\)", log)
    assert len(clients) >= 2, "HA never connected with its own account"
    assert not [ln for ln in log.splitlines() if "Denied" in ln and any(c in ln for c in clients)]
