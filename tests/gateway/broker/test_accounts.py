"""Broker accounts: `$7$` hashes, the ACL each role gets, the registry files and
`healthgw devices`. The rules are exercised against a real broker in test_broker_acl.py."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import stat
import subprocess
from pathlib import Path

import pytest

from gateway.broker import AuthStore, BrokerAuthError, Change, Role, hash_password, verify_password
from gateway.broker.acl import (
    device_rules,
    render_acl,
    render_passwd,
    service_rules,
    simulator_rules,
)
from gateway.broker.commands import RELOAD_HINT
from gateway.broker.passwords import ITERATIONS, check_password, parse_hash
from gateway.broker.store import AccountExists
from healthgw.cli import main
from tests.brokers import ROOT

HOUSEHOLD = ROOT / "examples" / "household.yaml"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("HEALTHGW_"):
            monkeypatch.delenv(name)


@pytest.fixture
def gw_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEALTHGW_MQTT_USERNAME", "gateway")
    monkeypatch.setenv("HEALTHGW_MQTT_PASSWORD", "gw-secret-7Qx9pLm2Za")


def store(tmp_path: Path) -> AuthStore:
    return AuthStore(tmp_path / "auth", iterations=1000)  # fewer rounds: faster tests


# --- hashes ----------------------------------------------------------------------------------


def test_hash_is_mosquittos_pbkdf2_sha512_format_and_verifies() -> None:
    encoded = hash_password("s3cret")
    iterations, salt, digest = parse_hash(encoded)
    assert encoded.startswith(f"$7${ITERATIONS}$") and iterations == ITERATIONS
    assert (len(salt), len(digest)) == (12, 64)
    assert verify_password("s3cret", encoded)
    assert not verify_password("s3cret ", encoded)
    assert hash_password("s3cret") != encoded  # a fresh salt each time


@pytest.mark.skipif(shutil.which("mosquitto_passwd") is None, reason="needs mosquitto_passwd")
def test_hashes_from_mosquitto_passwd_verify(tmp_path: Path) -> None:
    pwfile = tmp_path / "pw"
    subprocess.run(["mosquitto_passwd", "-b", "-c", str(pwfile), "u", "pässword"], check=True)
    theirs = pwfile.read_text().strip().split(":", 1)[1]
    assert theirs.startswith("$7$")
    assert verify_password("pässword", theirs)
    assert not verify_password("password", theirs)


@pytest.mark.parametrize(
    "bad", ["", "$6$abc$def", "$7$x$AAAA$AAAA", "$7$100$!!$AAAA", "$7$100$AAAAAAAAAAAAAAAA$AAAA"]
)
def test_malformed_hashes_are_refused_without_echoing_them(bad: str) -> None:
    with pytest.raises(BrokerAuthError) as exc:
        parse_hash(bad)
    assert bad not in str(exc.value) or not bad


@pytest.mark.parametrize("bad", ["", "a\nb", "a\x00b", "a\rb", "x" * 1025])
def test_passwords_mosquitto_would_mangle_are_refused(bad: str) -> None:
    with pytest.raises(BrokerAuthError) as exc:
        check_password(bad)
    assert bad not in str(exc.value) or not bad


# --- ACL -------------------------------------------------------------------------------------


def test_a_device_gets_exactly_its_own_topics_and_its_persons() -> None:
    rules = [(r.access, r.topic) for r in device_rules("grandma", "w1")]
    assert rules == [
        ("write", "health/grandma/w1/vitals"),
        ("write", "health/grandma/w1/sos"),
        ("write", "health/grandma/w1/ack"),
        ("readwrite", "health/grandma/w1/status"),
        ("write", "health/grandma/intent"),
        ("read", "health/grandma/notify"),
        ("read", "health/grandma/reply"),
        ("read", "health/grandma/events"),
        ("read", "health/grandma/state"),
    ]


def test_service_roles() -> None:
    def rules(role: Role, prefix: str = "homeassistant") -> list[str]:
        return [f"{r.access} {r.topic}" for r in service_rules(role, prefix)]

    assert rules(Role.GATEWAY) == [
        "readwrite health/#",
        "readwrite gateway/#",
        "readwrite homeassistant/#",
        "read $SYS/broker/uptime",
    ]
    assert rules(Role.HOMEASSISTANT) == [
        "read homeassistant/#",
        "write homeassistant/status",
        "read health/+/state",
        "read health/+/+/status",
        "read health/+/events",
        "read gateway/+/status",
        "read gateway/+/events",
    ]
    assert "readwrite ha/disc/#" in rules(Role.GATEWAY, "ha/disc")
    assert "homeassistant" not in " ".join(rules(Role.GATEWAY, "") + rules(Role.HOMEASSISTANT, ""))
    for role in (Role.DEVICE, Role.SIMULATOR):
        with pytest.raises(ValueError):
            service_rules(role, "homeassistant")


def test_the_simulator_gets_only_its_simulated_persons_topics() -> None:
    assert [f"{r.access} {r.topic}" for r in simulator_rules(["sim-a"])] == [
        "write health/sim-a/+/vitals",
        "write health/sim-a/+/sos",
        "write health/sim-a/+/ack",
        "write health/sim-a/+/status",
        "write health/sim-a/intent",
        "read health/sim-a/notify",
        "read health/sim-a/reply",
    ]
    # No role but the gateway may acknowledge for anyone: no wildcard person in an ack rule.
    for role in (Role.HOMEASSISTANT,):
        assert not [r for r in service_rules(role, "homeassistant") if r.topic.endswith("/ack")]
    two = {r.topic for r in simulator_rules(["a", "b"]) if r.topic.endswith("/ack")}
    assert two == {"health/a/+/ack", "health/b/+/ack"}


def test_the_simulator_account_needs_persons_and_keeps_them(tmp_path: Path) -> None:
    s = store(tmp_path)
    with pytest.raises(BrokerAuthError, match="at least one simulated person"):
        s.ensure_services({Role.SIMULATOR: ("sim", "pw")})
    with pytest.raises(BrokerAuthError, match="invalid person"):
        s.ensure_services({Role.SIMULATOR: ("sim", "pw")}, simulator_persons=["a/b"])
    sim = {Role.SIMULATOR: ("sim", "pw")}
    assert s.ensure_services(sim, simulator_persons=["b", "a", "a"]) == {
        Role.SIMULATOR: Change.CREATED
    }
    (account,) = s.accounts()
    assert account.persons == ("a", "b")
    assert s.ensure_services(sim, simulator_persons=["a", "b"])[Role.SIMULATOR] is Change.UNCHANGED
    hash_before = account.password_hash
    assert s.ensure_services(sim, simulator_persons=["a"])[Role.SIMULATOR] is Change.UPDATED
    (account,) = s.accounts()
    assert account.persons == ("a",) and account.password_hash == hash_before
    acl = (tmp_path / "auth" / "acl").read_text()
    assert "health/a/+/vitals" in acl and "health/b/" not in acl and "health/+/" not in acl
    assert s.remove_service(Role.SIMULATOR) == "sim"
    assert s.remove_service(Role.SIMULATOR) is None
    assert "sim" not in (tmp_path / "auth" / "passwd").read_text()


def test_a_legacy_simulator_without_persons_is_dropped(tmp_path: Path) -> None:
    """A registry from before the simulator was limited: its all-persons account goes."""
    s = store(tmp_path)
    s.ensure_services({Role.GATEWAY: ("gateway", "gw")})
    path = tmp_path / "auth" / "accounts.json"
    doc = json.loads(path.read_text())
    doc["accounts"].append({"username": "sim", "role": "simulator", "hash": hash_password("x")})
    path.write_text(json.dumps(doc))
    assert [a.username for a in s.accounts()] == ["gateway"]
    s.sync()
    assert "sim" not in (tmp_path / "auth" / "passwd").read_text()
    assert "sim" not in path.read_text()


def test_rendered_files_grant_nothing_to_anonymous_and_are_stable(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.add_device("grandma", "w1", "pw-1")
    s.ensure_services({Role.GATEWAY: ("gateway", "gw")})
    accounts = s.accounts()
    acl = render_acl(accounts, "homeassistant")
    before_first_user = acl.split("\nuser ", 1)[0]
    assert "topic " not in before_first_user and "pattern " not in acl
    # Services first, then devices: the same accounts always give the same files.
    assert acl.index("user gateway") < acl.index("user grandma.w1")
    assert render_acl(reversed(accounts), "homeassistant") == acl
    assert render_passwd(accounts).splitlines()[1].startswith("grandma.w1:$7$")
    assert (tmp_path / "auth" / "acl").read_text() == acl


# --- the registry ----------------------------------------------------------------------------


def test_sync_on_an_empty_dir_creates_private_empty_files(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.sync()
    auth = tmp_path / "auth"
    assert stat.S_IMODE(auth.stat().st_mode) == 0o700
    for name in ("passwd", "acl", "accounts.json"):
        assert stat.S_IMODE((auth / name).stat().st_mode) == 0o600, name
    assert (auth / "passwd").read_text() == ""
    assert "user " not in (auth / "acl").read_text()
    assert s.accounts() == []


def test_add_rotate_remove(tmp_path: Path) -> None:
    s = store(tmp_path)
    auth = tmp_path / "auth"
    assert s.add_device("grandma", "w1", "first-pw") is Change.CREATED
    assert s.add_device("grandma", "w2", "second-pw") is Change.CREATED
    assert s.add_device("dad", "w3", "third-pw") is Change.CREATED
    with pytest.raises(AccountExists):
        s.add_device("grandma", "w1", "other")
    old = (auth / "passwd").read_text()
    assert s.add_device("grandma", "w1", "rotated", rotate=True) is Change.UPDATED
    hashes = dict(line.split(":", 1) for line in (auth / "passwd").read_text().splitlines())
    assert verify_password("rotated", hashes["grandma.w1"])
    assert old != (auth / "passwd").read_text()
    # Only hashes on disk.
    for name in ("passwd", "acl", "accounts.json"):
        text = (auth / name).read_text()
        assert "rotated" not in text and "second-pw" not in text

    assert s.remove_devices("grandma", "w2") == [("grandma", "w2")]
    assert s.remove_devices("grandma", "w2") == []
    s.add_device("grandma", "w4", "x")
    assert s.remove_devices("grandma") == [("grandma", "w1"), ("grandma", "w4")]
    assert [a.username for a in s.accounts()] == ["dad.w3"]
    assert "grandma" not in (auth / "acl").read_text() + (auth / "passwd").read_text()


def test_service_accounts_rehash_only_when_the_password_changed(tmp_path: Path) -> None:
    s = store(tmp_path)
    auth = tmp_path / "auth"
    assert s.ensure_services({Role.GATEWAY: ("gateway", "a")}) == {Role.GATEWAY: Change.CREATED}
    passwd = auth / "passwd"
    first, inode = passwd.read_text(), passwd.stat().st_ino
    assert s.ensure_services({Role.GATEWAY: ("gateway", "a")}) == {Role.GATEWAY: Change.UNCHANGED}
    assert (passwd.read_text(), passwd.stat().st_ino) == (first, inode)  # not even rewritten
    assert s.ensure_services({Role.GATEWAY: ("gateway", "b")}) == {Role.GATEWAY: Change.UPDATED}
    assert s.ensure_services({Role.GATEWAY: ("hub", "b")}) == {Role.GATEWAY: Change.REPLACED}
    assert [(a.username, a.role) for a in s.accounts()] == [("hub", Role.GATEWAY)]


@pytest.mark.parametrize(
    ("wanted", "message"),
    [
        ({Role.GATEWAY: ("grandma.w1", "pw")}, "no dot"),
        ({Role.GATEWAY: ("gw", "pw"), Role.HOMEASSISTANT: ("gw", "pw2")}, "same username"),
        ({Role.DEVICE: ("gw", "pw")}, "not a service role"),
        ({Role.GATEWAY: ("gw", "")}, "empty"),
    ],
)
def test_bad_service_accounts(
    tmp_path: Path, wanted: dict[Role, tuple[str, str]], message: str
) -> None:
    with pytest.raises(BrokerAuthError, match=message):
        store(tmp_path).ensure_services(wanted)


def test_ids_are_checked_so_usernames_and_topics_stay_unambiguous(tmp_path: Path) -> None:
    s = store(tmp_path)
    for person, device in [("a.b", "w"), ("a", "w/x"), ("a", "#"), ("", "w"), ("a", "w+")]:
        with pytest.raises(BrokerAuthError, match="invalid"):
            s.add_device(person, device, "pw")


def test_a_corrupt_registry_is_reported_without_its_hashes(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.add_device("grandma", "w1", "pw")
    path = tmp_path / "auth" / "accounts.json"
    doc = json.loads(path.read_text())
    secret_hash = doc["accounts"][0]["hash"]
    doc["accounts"][0]["username"] = "dad.w1"
    path.write_text(json.dumps(doc))
    with pytest.raises(BrokerAuthError, match="account #1") as exc:
        s.accounts()
    assert secret_hash not in str(exc.value)
    path.write_text("{")
    with pytest.raises(BrokerAuthError, match="not JSON"):
        s.add_device("dad", "w1", "pw")


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_files_take_the_auth_dirs_owner_or_the_given_one(tmp_path: Path) -> None:
    auth = tmp_path / "auth"
    auth.mkdir()
    os.chown(auth, 4242, 4343)  # as the broker's user owns it in its container
    s = AuthStore(auth, iterations=1000)
    s.add_device("grandma", "w1", "pw")
    for name in ("passwd", "acl", "accounts.json"):
        st = (auth / name).stat()
        assert (st.st_uid, st.st_gid) == (4242, 4343), name
    other = tmp_path / "other"
    AuthStore(other, owner=(1883, 1883), iterations=1000).sync()
    assert {((other / n).stat().st_uid) for n in ("", "passwd", "acl")} == {1883}


# --- the CLI ---------------------------------------------------------------------------------


def cli(tmp_path: Path, *args: str) -> int:
    return main(["devices", *args, "--auth-dir", str(tmp_path / "auth")])


def test_init_needs_the_gateway_account_then_is_idempotent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cli(tmp_path, "init") == 2
    assert "HEALTHGW_MQTT_USERNAME" in capsys.readouterr().err
    monkeypatch.setenv("HEALTHGW_MQTT_USERNAME", "gateway")
    assert cli(tmp_path, "init") == 2  # a username without a password
    assert "HEALTHGW_MQTT_PASSWORD" in capsys.readouterr().err

    monkeypatch.setenv("HEALTHGW_MQTT_PASSWORD", "gw-secret-7Qx9pLm2Za")
    monkeypatch.setenv("HEALTHGW_HA_MQTT_USERNAME", "ha")
    monkeypatch.setenv("HEALTHGW_HA_MQTT_PASSWORD", "ha-secret-7Qx9pLm2Za")
    assert cli(tmp_path, "init") == 0
    out = capsys.readouterr().out
    assert "gateway account gateway: created" in out and "homeassistant account ha: created" in out
    assert RELOAD_HINT in out
    assert (tmp_path / "auth" / "passwd").read_text().count("$7$") == 2

    assert cli(tmp_path, "init") == 0
    out = capsys.readouterr().out
    assert "unchanged" in out and RELOAD_HINT not in out

    # Simulator credentials alone do not make an account: it is off until persons are listed.
    monkeypatch.setenv("HEALTHGW_SIM_MQTT_USERNAME", "sim")
    monkeypatch.setenv("HEALTHGW_SIM_MQTT_PASSWORD", "sim-secret-7Qx9pLm2Za")
    assert cli(tmp_path, "init") == 0
    out = capsys.readouterr().out
    assert "simulator account: off" in out and "simulator account sim" not in out
    assert "sim:" not in (tmp_path / "auth" / "passwd").read_text()

    monkeypatch.setenv("HEALTHGW_SIMULATOR_PERSONS", "grandma, dad")
    monkeypatch.setenv("HEALTHGW_MQTT_PASSWORD", "new-gw-secret-7Qx9pLm2")
    assert cli(tmp_path, "init") == 0
    out = capsys.readouterr().out
    assert "gateway account gateway: updated" in out and "simulator account sim: created" in out
    assert "simulator may act for: dad, grandma" in out
    for secret in ("gw-secret-7Qx9pLm2Za", "ha-secret-7Qx9pLm2Za", "sim-secret-7Qx9pLm2Za"):
        assert secret not in out


def test_init_switches_the_simulator_on_for_listed_persons_and_off_again(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    gw_env: None,
) -> None:
    monkeypatch.setenv("HEALTHGW_SIMULATOR_PERSONS", "grandma")
    assert cli(tmp_path, "init") == 2  # persons without the simulator's credentials
    assert "HEALTHGW_SIM_MQTT_USERNAME" in capsys.readouterr().err
    monkeypatch.setenv("HEALTHGW_SIM_MQTT_USERNAME", "sim")
    monkeypatch.setenv("HEALTHGW_SIM_MQTT_PASSWORD", "sim-secret-7Qx9pLm2Za")
    monkeypatch.setenv("HEALTHGW_SIMULATOR_PERSONS", "grandma,nobody")
    monkeypatch.setenv("HEALTHGW_HOUSEHOLD", str(HOUSEHOLD))
    assert cli(tmp_path, "init") == 0
    assert "'nobody' is not in" in capsys.readouterr().err
    acl = (tmp_path / "auth" / "acl").read_text()
    assert "topic write health/grandma/+/vitals" in acl and "health/+/+" not in acl
    assert cli(tmp_path, "list", "--json") == 0
    sim = next(r for r in json.loads(capsys.readouterr().out) if r["role"] == "simulator")
    assert sim["persons"] == ["grandma", "nobody"]

    # `add` leaves the simulator as it is, even without the variable.
    monkeypatch.delenv("HEALTHGW_SIMULATOR_PERSONS")
    assert cli(tmp_path, "add", "grandma", "w9") == 0
    assert "sim:" in (tmp_path / "auth" / "passwd").read_text()
    capsys.readouterr()
    # `init` without persons switches it off.
    assert cli(tmp_path, "init") == 0
    out = capsys.readouterr().out
    assert "simulator account sim: removed" in out and RELOAD_HINT in out
    assert "sim:" not in (tmp_path / "auth" / "passwd").read_text()
    monkeypatch.setenv("HEALTHGW_SIMULATOR_PERSONS", "a/b")
    assert cli(tmp_path, "init") == 2
    assert "invalid person" in capsys.readouterr().err


def test_add_prints_the_password_once_and_it_verifies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gw_env: None
) -> None:
    assert cli(tmp_path, "add", "grandma", "watch-maria") == 0
    out = capsys.readouterr().out
    password = next(ln.split(": ", 1)[1] for ln in out.splitlines() if "password:" in ln)
    assert len(password) == 24 and RELOAD_HINT in out
    assert "health/grandma/watch-maria/vitals" in out
    hashes = dict(ln.split(":", 1) for ln in (tmp_path / "auth" / "passwd").read_text().split())
    assert verify_password(password, hashes["grandma.watch-maria"])
    assert verify_password("gw-secret-7Qx9pLm2Za", hashes["gateway"])  # `add` ran `init` too

    assert cli(tmp_path, "add", "grandma", "watch-maria") == 1
    captured = capsys.readouterr()
    assert "--rotate" in captured.err and password not in captured.err + captured.out
    assert cli(tmp_path, "add", "grandma", "watch-maria", "--rotate", "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["username"] == "grandma.watch-maria" and doc["password"] != password
    assert doc["topics"]["vitals"] == "health/grandma/watch-maria/vitals"
    assert doc["topics"]["notify"] == "health/grandma/notify"
    assert set(doc["topics"]) == {
        "vitals",
        "sos",
        "ack",
        "status",
        "intent",
        "notify",
        "reply",
        "events",
        "state",
    }


def test_add_with_password_stdin_never_prints_it(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    gw_env: None,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("my own pw\n"))
    assert cli(tmp_path, "add", "dad", "band", "--password-stdin", "--json") == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["password"] is None
    assert "my own pw" not in captured.out + captured.err
    hashes = dict(ln.split(":", 1) for ln in (tmp_path / "auth" / "passwd").read_text().split())
    assert verify_password("my own pw", hashes["dad.band"])

    monkeypatch.setattr("sys.stdin", io.StringIO("bad\rpw\n"))
    assert cli(tmp_path, "add", "dad", "band2", "--password-stdin") == 2
    captured = capsys.readouterr()
    assert "bad" not in captured.out + captured.err.replace("healthgw devices", "")


def test_add_checks_the_household(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    hh = ["--household", str(HOUSEHOLD)]
    assert cli(tmp_path, "add", "nobody", "w1", *hh) == 2
    assert "'nobody' is not in" in capsys.readouterr().err
    assert not (tmp_path / "auth" / "passwd").exists()

    assert cli(tmp_path, "add", "grandma", "new-band", *hh) == 0
    captured = capsys.readouterr()
    assert "add it to household.yaml" in captured.err
    assert "unknown_device" in captured.err
    assert "no gateway account" in captured.err  # warned, not fatal, for `add`

    monkeypatch.setenv("HEALTHGW_HOUSEHOLD", str(HOUSEHOLD))
    assert cli(tmp_path, "add", "grandma", "watch-maria") == 0
    assert "household" not in capsys.readouterr().err.replace("no gateway account", "")


def test_remove_and_list(tmp_path: Path, capsys: pytest.CaptureFixture[str], gw_env: None) -> None:
    for person, device in [("grandma", "w1"), ("grandma", "w2"), ("dad", "w3")]:
        assert cli(tmp_path, "add", person, device) == 0
    capsys.readouterr()

    assert cli(tmp_path, "list", "--json") == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["username"] for r in listed] == ["gateway", "dad.w3", "grandma.w1", "grandma.w2"]
    assert all(set(r) == {"username", "role", "person", "device"} for r in listed)
    assert cli(tmp_path, "list") == 0
    out = capsys.readouterr().out
    assert "$7$" not in out and "grandma.w1" in out and "grandma/w1" in out

    assert cli(tmp_path, "remove", "grandma", "w1") == 0
    out = capsys.readouterr().out
    assert "Revoked grandma/w1" in out and RELOAD_HINT in out
    assert cli(tmp_path, "remove", "grandma") == 0
    out = capsys.readouterr().out
    assert "grandma/w2" in out and "dad" not in out
    assert cli(tmp_path, "remove", "grandma") == 1
    assert "no devices of grandma" in capsys.readouterr().err
    assert cli(tmp_path, "remove", "dad", "nope") == 1


def test_reload_pid_sends_sighup(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    gw_env: None,
) -> None:
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr("gateway.broker.commands.os.kill", lambda pid, sig: sent.append((pid, sig)))
    assert cli(tmp_path, "add", "dad", "w3", "--reload-pid", "4321") == 0
    assert sent == [(4321, signal.SIGHUP)]
    assert "Sent SIGHUP" in capsys.readouterr().out

    def refuse(pid: int, sig: int) -> None:
        raise ProcessLookupError(3, "No such process")

    monkeypatch.setattr("gateway.broker.commands.os.kill", refuse)
    assert cli(tmp_path, "remove", "dad", "--reload-pid", "4321") == 1
    assert "could not signal" in capsys.readouterr().err


def test_auth_dir_and_ha_prefix_come_from_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gw_env: None
) -> None:
    monkeypatch.setenv("HEALTHGW_BROKER_AUTH_DIR", str(tmp_path / "from-env"))
    monkeypatch.setenv("HEALTHGW_HA_DISCOVERY_PREFIX", "ha/disc")
    assert main(["devices", "init"]) == 0
    assert "topic readwrite ha/disc/#" in (tmp_path / "from-env" / "acl").read_text()


def test_the_installed_entry_point(tmp_path: Path) -> None:
    exe = ROOT / ".venv" / "bin" / "healthgw"
    if not exe.exists():
        pytest.skip("no .venv/bin/healthgw")
    env = {"PATH": os.environ.get("PATH", ""), "HEALTHGW_MQTT_USERNAME": "gateway"}
    env["HEALTHGW_MQTT_PASSWORD"] = "gw-secret-7Qx9pLm2Za"
    args = [str(exe), "devices", "add", "dad", "w3", "--json", "--auth-dir", str(tmp_path / "a")]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout)["username"] == "dad.w3"
    assert RELOAD_HINT in done.stderr  # stdout stays pure JSON


@pytest.mark.parametrize(
    "password",
    ["change-me-gateway-mqtt-password", "short-pass", "aaaaaaaaaaaaaaaaaaaa"],
    ids=["env-example-placeholder", "short", "repetitive"],
)
def test_init_refuses_a_weak_service_password(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    password: str,
) -> None:
    """The gateway's account may ack for anyone: a password copied from .env.example would be
    a publicly known key to the house."""
    monkeypatch.setenv("HEALTHGW_MQTT_USERNAME", "gateway")
    monkeypatch.setenv("HEALTHGW_MQTT_PASSWORD", password)
    assert cli(tmp_path, "init") == 2
    err = capsys.readouterr().err
    assert "HEALTHGW_MQTT_PASSWORD" in err and password not in err
    assert not (tmp_path / "auth" / "passwd").exists()
