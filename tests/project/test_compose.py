"""docker-compose.yml is for users' hubs; here it is validated with Debian's docker-compose.

`docker-compose config` runs against a scratch project directory holding a copy of
.env.example as its .env (the gateway's `env_file`), so no .env is ever created in the
repository, and the host's own environment cannot leak into the result.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.tsdb import schema

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
SERVICES = {"broker-init", "mosquitto", "influxdb", "grafana", "gateway", "simulator"}
# Variables a shell might export that would override .env in docker-compose.
_ENV_PREFIXES = ("HEALTHGW_", "GRAFANA_", "INFLUXDB_", "DOCKER_", "COMPOSE_", "GF_")

EXE = shutil.which("docker-compose")
needs_compose = pytest.mark.skipif(
    EXE is None, reason="Debian's docker-compose is not installed (scripts/setup.sh installs it)"
)


def env_example_lines() -> list[str]:
    return ENV_EXAMPLE.read_text(encoding="utf-8").splitlines()


def env_example() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in env_example_lines():
        m = re.match(r"^([A-Z][A-Z0-9_]*)=(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def run_config(
    project: Path, overrides: dict[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """`docker-compose config` with .env = .env.example, VAR=value lines replaced by
    `overrides` (None drops the line)."""
    assert EXE is not None
    overrides = dict(overrides or {})
    lines: list[str] = []
    for line in env_example_lines():
        m = re.match(r"^#?\s*([A-Z][A-Z0-9_]*)=", line)
        if m and m.group(1) in overrides:
            value = overrides.pop(m.group(1))
            if value is not None:
                lines.append(f"{m.group(1)}={value}")
            continue
        lines.append(line)
    lines += [f"{k}={v}" for k, v in overrides.items() if v is not None]
    project.mkdir(parents=True, exist_ok=True)
    (project / ".env").write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(_ENV_PREFIXES)}
    return subprocess.run(
        [EXE, "-f", str(COMPOSE_FILE), "--project-directory", str(project), "config"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def load_config(project: Path, overrides: dict[str, str | None] | None = None) -> dict[str, Any]:
    out = run_config(project, overrides)
    assert out.returncode == 0, out.stderr
    cfg: dict[str, Any] = yaml.safe_load(out.stdout)
    return cfg


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("compose")


@pytest.fixture(scope="module")
def cfg(project: Path) -> dict[str, Any]:
    if EXE is None:
        pytest.skip("Debian's docker-compose is not installed (scripts/setup.sh installs it)")
    return load_config(project)


def service(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    svc: dict[str, Any] = cfg["services"][name]
    return svc


def environment(svc: dict[str, Any]) -> dict[str, str]:
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) for e in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


def mounts(svc: dict[str, Any], project: Path) -> dict[str, tuple[str, str]]:
    """target -> (source relative to the project, or a volume name; mode)."""
    out: dict[str, tuple[str, str]] = {}
    for v in svc.get("volumes", []):
        if isinstance(v, dict):
            source, target, mode = v["source"], v["target"], "ro" if v.get("read_only") else "rw"
        else:
            parts = v.split(":")
            source, target = parts[0], parts[1]
            mode = parts[2] if len(parts) > 2 else "rw"
        if source.startswith(str(project)):
            source = "./" + Path(source).relative_to(project).as_posix()
        out[target] = (source, mode)
    return out


def conditions(svc: dict[str, Any]) -> dict[str, str]:
    deps = svc.get("depends_on") or {}
    if isinstance(deps, list):
        return dict.fromkeys(deps, "service_started")
    return {k: v["condition"] for k, v in deps.items()}


def strings(obj: Any) -> list[str]:
    """Every string value in a parsed YAML document."""
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in strings(v)]
    return []


def healthcheck_test(svc: dict[str, Any]) -> list[str]:
    test = (svc.get("healthcheck") or {}).get("test") or []
    return [test] if isinstance(test, str) else list(test)


# --- the stack ---------------------------------------------------------------------------


@needs_compose
def test_every_service(cfg: dict[str, Any]) -> None:
    assert set(cfg["services"]) == SERVICES


@needs_compose
def test_healthchecks(cfg: dict[str, Any]) -> None:
    for name in ("mosquitto", "influxdb", "grafana", "gateway"):
        test = healthcheck_test(service(cfg, name))
        assert test and test[0] in ("CMD", "CMD-SHELL"), name
    # The broker's healthcheck logs in (anonymous access is off) with the gateway's account,
    # whose credentials the mosquitto service gets for exactly that.
    mosq = service(cfg, "mosquitto")
    probe = " ".join(healthcheck_test(mosq))
    assert "mosquitto_sub" in probe and "$SYS/broker/uptime" in probe.replace("$$", "$")
    assert re.search(r"-u\s+\"?\$\$?HEALTHGW_MQTT_USERNAME", probe), probe
    assert re.search(r"-P\s+\"?\$\$?HEALTHGW_MQTT_PASSWORD", probe), probe
    gw_env = environment(service(cfg, "gateway"))
    for var in ("HEALTHGW_MQTT_USERNAME", "HEALTHGW_MQTT_PASSWORD"):
        assert environment(mosq)[var] == gw_env[var] != ""
    assert "influx ping" in " ".join(healthcheck_test(service(cfg, "influxdb")))
    assert "/api/health" in " ".join(healthcheck_test(service(cfg, "grafana")))
    assert "/healthz" in " ".join(healthcheck_test(service(cfg, "gateway")))
    # The gateway image's HEALTHCHECK probes /healthz: off for the one-shot and the simulator.
    for name in ("broker-init", "simulator"):
        assert healthcheck_test(service(cfg, name)) == ["NONE"], name


@needs_compose
def test_start_order(cfg: dict[str, Any]) -> None:
    assert conditions(service(cfg, "mosquitto")) == {
        "broker-init": "service_completed_successfully"
    }
    # The gateway waits for a healthy broker. It only waits for InfluxDB to start: its disk
    # outbox keeps points, and an unhealthy InfluxDB must not keep SOS handling down.
    assert conditions(service(cfg, "gateway")) == {
        "mosquitto": "service_healthy",
        "influxdb": "service_started",
    }
    assert conditions(service(cfg, "grafana")) == {"influxdb": "service_healthy"}
    assert conditions(service(cfg, "simulator")) == {"gateway": "service_healthy"}
    assert not conditions(service(cfg, "influxdb"))
    assert not conditions(service(cfg, "broker-init"))


@needs_compose
def test_simulator_only_in_its_profile(cfg: dict[str, Any]) -> None:
    assert service(cfg, "simulator")["profiles"] == ["sim"]
    for name in SERVICES - {"simulator"}:
        assert not service(cfg, name).get("profiles"), name
    # It logs in with its own account, not the gateway's.
    sim, example = environment(service(cfg, "simulator")), env_example()
    assert sim["HEALTHGW_MQTT_USERNAME"] == example["HEALTHGW_SIM_MQTT_USERNAME"]
    assert sim["HEALTHGW_MQTT_PASSWORD"] == example["HEALTHGW_SIM_MQTT_PASSWORD"]
    assert sim["HEALTHGW_MQTT_USERNAME"] != example["HEALTHGW_MQTT_USERNAME"]
    assert service(cfg, "simulator")["command"][0] == "simulate"


@needs_compose
def test_broker_auth_mounts(cfg: dict[str, Any], project: Path) -> None:
    conf = (ROOT / "mosquitto" / "mosquitto.conf").read_text(encoding="utf-8")
    directives = dict(re.findall(r"^(password_file|acl_file)\s+(\S+)", conf, re.M))
    assert set(directives) == {"password_file", "acl_file"}
    auth_dir = {str(Path(p).parent) for p in directives.values()}
    assert len(auth_dir) == 1
    (auth_target,) = auth_dir
    assert "allow_anonymous false" in conf

    mosq = mounts(service(cfg, "mosquitto"), project)
    assert mosq["/mosquitto/config/mosquitto.conf"] == ("./mosquitto/mosquitto.conf", "ro")
    assert mosq[auth_target] == ("./mosquitto/auth", "ro")
    assert "/mosquitto/data" in mosq

    init = service(cfg, "broker-init")
    assert init["command"][:2] == ["devices", "init"]
    init_env = environment(init)
    target = init_env["HEALTHGW_BROKER_AUTH_DIR"]
    assert mounts(init, project)[target] == ("./mosquitto/auth", "rw")
    # It creates the gateway's, Home Assistant's and the simulator's accounts from .env.
    example = env_example()
    for prefix in ("HEALTHGW_MQTT", "HEALTHGW_HA_MQTT", "HEALTHGW_SIM_MQTT"):
        for part in ("USERNAME", "PASSWORD"):
            assert init_env[f"{prefix}_{part}"] == example[f"{prefix}_{part}"]
    assert (
        init_env["HEALTHGW_HA_DISCOVERY_PREFIX"]
        == environment(service(cfg, "gateway"))["HEALTHGW_HA_DISCOVERY_PREFIX"]
    )
    # ...and hands the files to the broker's user; the long-running gateway cannot write them.
    assert "--owner" in init["command"]
    assert not any(
        src == "./mosquitto/auth" for src, _ in mounts(service(cfg, "gateway"), project).values()
    )


@needs_compose
def test_grafana_mounts_match_the_provisioning(cfg: dict[str, Any], project: Path) -> None:
    grafana = mounts(service(cfg, "grafana"), project)
    assert grafana["/etc/grafana/provisioning"] == ("./grafana/provisioning", "ro")
    provider = yaml.safe_load(
        (ROOT / "grafana" / "provisioning" / "dashboards" / "healthgw.yaml").read_text()
    )["providers"][0]
    assert grafana[provider["options"]["path"]] == ("./grafana/dashboards", "ro")
    for source, _ in grafana.values():
        if source.startswith("./"):
            assert (ROOT / source).is_dir(), source
    # Every variable the provisioning files interpolate is in Grafana's environment.
    env = environment(service(cfg, "grafana"))
    for path in (ROOT / "grafana" / "provisioning").rglob("*.yaml"):
        for value in strings(yaml.safe_load(path.read_text(encoding="utf-8"))):
            for m in re.finditer(r"\$\{(\w+)\}|\$(\w+)", value):
                var = m.group(1) or m.group(2)
                assert env.get(var), f"{path.name} uses ${var}, not set for grafana"


@needs_compose
def test_influx_init_matches_the_gateway_and_grafana(cfg: dict[str, Any]) -> None:
    influx = environment(service(cfg, "influxdb"))
    gateway = environment(service(cfg, "gateway"))
    grafana = environment(service(cfg, "grafana"))
    assert influx["DOCKER_INFLUXDB_INIT_MODE"] == "setup"
    pairs = {
        "DOCKER_INFLUXDB_INIT_ORG": "HEALTHGW_INFLUX_ORG",
        "DOCKER_INFLUXDB_INIT_BUCKET": "HEALTHGW_INFLUX_BUCKET",
        "DOCKER_INFLUXDB_INIT_ADMIN_TOKEN": "HEALTHGW_INFLUX_TOKEN",
    }
    for init_var, gw_var in pairs.items():
        assert influx[init_var] == gateway[gw_var] == grafana[gw_var] != "", gw_var
    assert gateway["HEALTHGW_INFLUX_BUCKET"] == schema.DEFAULT_BUCKET
    for var in ("DOCKER_INFLUXDB_INIT_USERNAME", "DOCKER_INFLUXDB_INIT_RETENTION"):
        assert influx[var]
    assert len(influx["DOCKER_INFLUXDB_INIT_PASSWORD"]) >= 8  # InfluxDB's minimum
    # The gateway reaches InfluxDB by its service name; the host only on loopback.
    assert gateway["HEALTHGW_INFLUX_URL"] == "http://influxdb:8086"
    assert gateway["HEALTHGW_MQTT_URL"] == "mqtt://mosquitto:1883"
    ports = service(cfg, "influxdb").get("ports", [])
    assert ports and all(str(p).startswith("127.0.0.1:") for p in ports)


@needs_compose
def test_anonymous_viewer_is_opt_in(cfg: dict[str, Any], tmp_path: Path) -> None:
    env = environment(service(cfg, "grafana"))
    assert env["GF_AUTH_ANONYMOUS_ENABLED"] == "false"
    assert env["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer"
    assert env["GF_USERS_ALLOW_SIGN_UP"] == "false"
    assert env["GF_SECURITY_ADMIN_PASSWORD"] == env_example()["GRAFANA_ADMIN_PASSWORD"]
    on = load_config(tmp_path / "on", {"GRAFANA_ANONYMOUS_VIEWER": "true"})
    on_env = environment(service(on, "grafana"))
    assert on_env["GF_AUTH_ANONYMOUS_ENABLED"] == "true"
    assert on_env["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer"
    # Not even a line for it: still off.
    off = load_config(tmp_path / "unset", {"GRAFANA_ANONYMOUS_VIEWER": None})
    assert environment(service(off, "grafana"))["GF_AUTH_ANONYMOUS_ENABLED"] == "false"


@needs_compose
def test_a_missing_secret_is_an_error(tmp_path: Path) -> None:
    out = run_config(tmp_path, {"HEALTHGW_INFLUX_TOKEN": None})
    assert out.returncode != 0
    assert "HEALTHGW_INFLUX_TOKEN" in out.stderr


# --- .env.example --------------------------------------------------------------------------


def test_every_compose_variable_is_in_env_example() -> None:
    text = "\n".join(strings(yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))))
    used: dict[str, bool] = {}  # name -> has a default in the compose file
    for m in re.finditer(r"(?<!\$)\$\{(\w+)(:?[-?])?", text):
        used[m.group(1)] = used.get(m.group(1), True) and m.group(2) in (":-", "-")
    for m in re.finditer(r"(?<![\$\w])\$([A-Za-z_]\w*)", text):
        used.setdefault(m.group(1), False)
    assert used
    lines = env_example_lines()
    defined = {d.group(1) for line in lines if (d := re.match(r"^([A-Z]\w*)=", line))}
    documented = {d.group(1) for line in lines if (d := re.match(r"^#\s*([A-Z]\w*)=", line))}
    for name, has_default in used.items():
        if has_default:
            assert name in defined | documented, f"{name} is not in .env.example"
        else:
            assert name in defined, f"{name} has no default and is not set in .env.example"


def test_env_example_is_commented_and_has_no_secrets() -> None:
    lines = env_example_lines()
    for i, line in enumerate(lines):
        m = re.match(r"^([A-Z]\w*)=(.*)$", line)
        if not m:
            continue
        # A comment line above it, within its block (consecutive non-blank lines).
        j = i - 1
        while j >= 0 and lines[j].strip() and not lines[j].lstrip().startswith("#"):
            j -= 1
        assert j >= 0 and lines[j].lstrip().startswith("#"), f"{m.group(1)} has no comment"
        name, value = m.groups()
        if re.search(r"PASSWORD|TOKEN|SECRET|AUTH", name) and value:
            assert value.startswith("change-me"), f"{name} looks like a real secret"
    compose = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    assert not [v for v in strings(compose) if "change-me" in v], "a secret in the compose file"
    assert env_example()["HEALTHGW_INFLUX_BUCKET"] == schema.DEFAULT_BUCKET
    assert env_example()["GRAFANA_ANONYMOUS_VIEWER"] == "false"


# --- exposure and secrets (security review items 12, 13) -----------------------------------

# Every secret in .env -> the only services whose configuration may contain it.
SECRET_HOLDERS: dict[str, set[str]] = {
    # broker-init hashes it; the broker's healthcheck logs in with it; the gateway uses it.
    "HEALTHGW_MQTT_PASSWORD": {"broker-init", "mosquitto", "gateway"},
    "HEALTHGW_HA_MQTT_PASSWORD": {"broker-init"},
    "HEALTHGW_SIM_MQTT_PASSWORD": {"broker-init", "simulator"},
    # InfluxDB creates it; the gateway writes and Grafana reads with it.
    "HEALTHGW_INFLUX_TOKEN": {"influxdb", "grafana", "gateway"},
    "INFLUXDB_ADMIN_PASSWORD": {"influxdb"},
    "GRAFANA_ADMIN_PASSWORD": {"grafana"},
    "HEALTHGW_API_TOKEN": {"gateway"},
    "HEALTHGW_FAMILY_TOKENS": {"gateway"},
    "HEALTHGW_VIEWER_TOKENS": {"gateway"},
    "HEALTHGW_TWILIO_AUTH_TOKEN": {"gateway"},
}


def published(svc: dict[str, Any]) -> list[str]:
    return [str(p) for p in svc.get("ports", [])]


@needs_compose
def test_every_port_binds_to_loopback_by_default(cfg: dict[str, Any]) -> None:
    ports = {name: published(svc) for name, svc in cfg["services"].items()}
    assert ports["gateway"] == ["127.0.0.1:8080:8080/tcp"]
    assert ports["mosquitto"] == ["127.0.0.1:1883:1883/tcp"]
    assert ports["grafana"] == ["127.0.0.1:3000:3000/tcp"]
    for name, mapped in ports.items():
        assert all(p.startswith("127.0.0.1:") for p in mapped), (name, mapped)
    example = env_example()
    assert example["HEALTHGW_API_BIND"] == example["HEALTHGW_MQTT_BIND"] == "127.0.0.1"


@needs_compose
def test_lan_exposure_is_a_choice_in_env(tmp_path: Path) -> None:
    lan = load_config(
        tmp_path,
        {
            "HEALTHGW_API_BIND": "192.168.1.10",
            "HEALTHGW_MQTT_BIND": "0.0.0.0",
            "GRAFANA_BIND": "0.0.0.0",
        },
    )
    assert published(service(lan, "gateway")) == ["192.168.1.10:8080:8080/tcp"]
    assert published(service(lan, "mosquitto")) == ["0.0.0.0:1883:1883/tcp"]
    assert published(service(lan, "grafana")) == ["0.0.0.0:3000:3000/tcp"]
    # Without the variables at all: loopback still.
    unset = load_config(tmp_path / "unset", {"HEALTHGW_API_BIND": None, "HEALTHGW_MQTT_BIND": None})
    assert published(service(unset, "gateway")) == ["127.0.0.1:8080:8080/tcp"]
    assert published(service(unset, "mosquitto")) == ["127.0.0.1:1883:1883/tcp"]


def test_tls_for_the_lan_is_documented_next_to_the_port() -> None:
    text = COMPOSE_FILE.read_text(encoding="utf-8")
    assert re.search(r'(?m)^\s*# - "\$\{HEALTHGW_MQTTS_BIND:-0\.0\.0\.0\}:8883:8883"', text)
    assert "docs/broker.md#tls" in text
    conf = (ROOT / "mosquitto" / "mosquitto.conf").read_text(encoding="utf-8")
    assert re.search(r"(?m)^#listener 8883$", conf)
    docs = (ROOT / "docs" / "broker.md").read_text(encoding="utf-8")
    assert "HEALTHGW_MQTTS_BIND" in docs and "HEALTHGW_MQTT_BIND" in docs


@needs_compose
def test_each_service_gets_only_the_secrets_it_needs(tmp_path: Path) -> None:
    values = {
        name: f"secret-{name.lower().replace('_', '-')}-0123456789" for name in SECRET_HOLDERS
    }
    cfg = load_config(tmp_path, dict(values))
    for name in cfg["services"]:
        assert "env_file" not in service(cfg, name), f"{name} reads .env wholesale"
    for secret, holders in SECRET_HOLDERS.items():
        seen = {
            name
            for name, svc in cfg["services"].items()
            if any(values[secret] in s for s in strings(svc))
        }
        assert seen == holders, f"{secret} reaches {sorted(seen)}, expected {sorted(holders)}"
    # Every secret in .env.example is accounted for.
    secrets = {k for k in env_example() if re.search(r"PASSWORD|TOKEN", k)}
    assert secrets <= set(SECRET_HOLDERS), secrets - set(SECRET_HOLDERS)


@needs_compose
def test_the_gateway_settings_from_compose_validate(
    cfg: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """http://influxdb:8086 is allowed for that host only (compose's private network)."""
    from gateway.base.settings import Settings

    env = environment(service(cfg, "gateway"))
    assert env["HEALTHGW_ALLOW_INSECURE_HTTP"] == "influxdb"
    for name in list(os.environ):
        if name.startswith("HEALTHGW_"):
            monkeypatch.delenv(name)
    raw = service(cfg, "gateway")["environment"]
    for name, value in raw.items():
        if value is not None:  # a name without a value stays unset: the gateway's default
            monkeypatch.setenv(name, str(value))
    settings = Settings()
    assert str(settings.influx_url) == "http://influxdb:8086/"
    assert settings.allow_insecure_http == ["influxdb"]


@needs_compose
def test_the_simulator_account_is_off_by_default(cfg: dict[str, Any], tmp_path: Path) -> None:
    init = environment(service(cfg, "broker-init"))
    assert init["HEALTHGW_SIMULATOR_PERSONS"] == "" == env_example()["HEALTHGW_SIMULATOR_PERSONS"]
    on = load_config(tmp_path, {"HEALTHGW_SIMULATOR_PERSONS": "simpat"})
    assert environment(service(on, "broker-init"))["HEALTHGW_SIMULATOR_PERSONS"] == "simpat"
    # Only broker-init needs the list: the broker enforces it.
    for name in SERVICES - {"broker-init"}:
        assert "HEALTHGW_SIMULATOR_PERSONS" not in environment(service(cfg, name)), name
