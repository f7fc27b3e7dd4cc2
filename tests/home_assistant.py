"""A real Home Assistant for the slow tests: installed once into its own virtual environment
(cached under ~/.cache/healthgw/ha-venv-<version>, never the project's .venv), configured
headless (a long-lived access token and the MQTT config entry written into `.storage` before
the start, so neither onboarding nor the UI is needed) and run as `python -m homeassistant`.

HA_VERSION is the newest release whose `Requires-Python` this machine's Python 3.11 meets
(2024.4 needs 3.12): `pip index versions homeassistant` lists it first."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

HA_VERSION = os.environ.get("HEALTHGW_HA_VERSION", "2024.3.3")
CACHE = Path.home() / ".cache" / "healthgw"
INSTALL_TIMEOUT_S = 1200.0  # each pip step; about 2 min on this 2-core hub with a warm wheel cache
START_TIMEOUT_S = 180.0
# HA 2024.3 pins hass-nabucasa 0.78 -> acme 2.8, which needs josepy.ComparableX509: gone in
# josepy 2, which pip picks (HA's constraints do not pin it). Without the pin every HTTP
# request answers 500 (http's forwarded middleware imports hass_nabucasa).
EXTRA_PINS = ("josepy<2",)

# Run inside HA's venv: the requirements of the integrations a bare start loads (the default
# set, the frontend that HA insists on, and MQTT), found through their manifests' dependencies.
_REQUIREMENTS_SCRIPT = """
import json, sys
from pathlib import Path
import homeassistant.bootstrap as b
root = Path(b.__file__).parent / "components"
todo = set(b.DEFAULT_INTEGRATIONS) | b.CORE_INTEGRATIONS | b.FRONTEND_INTEGRATIONS
todo |= {"logger", "system_log", "mqtt", "api", "http", "recorder"}
seen, reqs = set(), set()
while todo:
    d = todo.pop()
    if d in seen or not (root / d / "manifest.json").exists():
        continue
    seen.add(d)
    m = json.loads((root / d / "manifest.json").read_text())
    reqs |= set(m.get("requirements", []))
    todo |= set(m.get("dependencies", []))
print("\\n".join(sorted(reqs)))
"""


def ha_venv(version: str = HA_VERSION) -> Path:
    return CACHE / f"ha-venv-{version}"


def _run(cmd: list[str], log: Path, timeout: float) -> str:
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        proc = subprocess.run(
            cmd, stdout=subprocess.PIPE, stderr=out, text=True, timeout=timeout, check=False
        )
        out.write(proc.stdout)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} failed ({proc.returncode}); see {log}")
    return proc.stdout


def ensure_installed(version: str = HA_VERSION) -> Path:
    """The venv's python, installing Home Assistant first if the cache lacks it. A marker
    file is written last, so an interrupted install is redone from scratch; a lock keeps two
    test runs from building the same venv at once."""
    venv = ha_venv(version)
    python = venv / "bin" / "python"
    marker = venv / ".healthgw-ready"
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / f"ha-venv-{version}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return python
        log = CACHE / f"ha-venv-{version}.install.log"
        log.write_text("")
        if venv.exists():
            subprocess.run(["rm", "-rf", str(venv)], check=True, timeout=120)
        # `-m venv` from the project's venv makes one on the same base interpreter.
        _run([sys.executable, "-m", "venv", str(venv)], log, 120)
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
        _run([*pip, f"homeassistant=={version}"], log, INSTALL_TIMEOUT_S)
        reqs = _run([str(python), "-c", _REQUIREMENTS_SCRIPT], log, 120).split()
        site = _run([str(python), "-c", "import homeassistant as h; print(h.__file__)"], log, 60)
        constraints = Path(site.strip()).parent / "package_constraints.txt"
        _run([*pip, "-c", str(constraints), *reqs, *EXTRA_PINS], log, INSTALL_TIMEOUT_S)
        marker.write_text(_run([str(python), "-m", "pip", "freeze"], log, 120))
        return python


# --- configuration ---------------------------------------------------------------------------


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _jwt(issuer: str, key: str, lifetime_s: int = 86400) -> str:
    """What HA's auth.async_create_access_token signs (HS256 over {iss, iat, exp})."""
    now = int(time.time())
    head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = _b64(json.dumps({"iss": issuer, "iat": now, "exp": now + lifetime_s}).encode())
    signed = f"{head}.{body}"
    return f"{signed}.{_b64(hmac.new(key.encode(), signed.encode(), hashlib.sha256).digest())}"


def _store(config: Path, key: str, data: dict[str, Any]) -> None:
    doc = {"version": 1, "minor_version": 1, "key": key, "data": data}
    (config / ".storage" / key).write_text(json.dumps(doc))


def write_config(
    config: Path, *, http_port: int, mqtt_port: int, mqtt_login: tuple[str, str] | None = None
) -> str:
    """A minimal configuration, an owner with a long-lived access token, and the MQTT config
    entry (discovery on, prefix `homeassistant`; `mqtt_login`: HA's broker account). Returns
    the bearer token."""
    (config / ".storage").mkdir(parents=True, exist_ok=True)
    # Metric units: HA would convert our °C otherwise.
    (config / "configuration.yaml").write_text(
        "homeassistant:\n  name: healthgw test\n  latitude: 51.5\n  longitude: -0.1\n"
        "  elevation: 0\n  unit_system: metric\n  time_zone: UTC\n  country: GB\n"
        f"http:\n  server_host: 127.0.0.1\n  server_port: {http_port}\napi:\n"
        "logger:\n  default: warning\n"
    )
    user, token_id, jwt_key = uuid.uuid4().hex, uuid.uuid4().hex, secrets.token_hex(64)
    owner = {"id": user, "group_ids": ["system-admin"], "is_owner": True, "is_active": True,
             "name": "healthgw test", "system_generated": False, "local_only": False}  # fmt: skip
    refresh = {"id": token_id, "user_id": user, "client_id": None, "client_name": "healthgw",
               "client_icon": None, "token_type": "long_lived_access_token",
               "created_at": "2024-01-01T00:00:00+00:00", "access_token_expiration": 86400.0,
               "token": secrets.token_hex(64), "jwt_key": jwt_key, "last_used_at": None,
               "last_used_ip": None, "expire_at": None, "credential_id": None}  # fmt: skip
    _store(config, "auth", {"users": [owner], "credentials": [], "refresh_tokens": [refresh],
                            "groups": [{"id": "system-admin", "name": "Administrators"}]})  # fmt: skip
    entry: dict[str, Any] = {"entry_id": uuid.uuid4().hex, "version": 1, "minor_version": 1, "domain": "mqtt",
             "title": "test broker", "options": {}, "source": "user", "unique_id": None,
             "data": {"broker": "127.0.0.1", "port": mqtt_port, "discovery": True},
             "pref_disable_new_entities": False, "pref_disable_polling": False,
             "disabled_by": None}  # fmt: skip
    if mqtt_login is not None:
        entry["data"] |= {"username": mqtt_login[0], "password": mqtt_login[1]}
    _store(config, "core.config_entries", {"entries": [entry]})
    return _jwt(token_id, jwt_key)


# --- the running instance --------------------------------------------------------------------


@dataclass
class HomeAssistant:
    proc: subprocess.Popen[bytes]
    url: str
    token: str
    log: Path

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=10
        )

    def states(self) -> dict[str, dict[str, Any]]:
        with self.client() as c:
            r = c.get("/api/states")
            r.raise_for_status()
            return {s["entity_id"]: s for s in r.json()}

    def template(self, template: str) -> str:
        with self.client() as c:
            r = c.post("/api/template", json={"template": template})
            r.raise_for_status()
            return r.text

    def wait(self, pred: Any, what: str, within: float = 60.0) -> dict[str, dict[str, Any]]:
        """Poll /api/states until pred(states) is true; fail with `what` after `within` s."""
        deadline = time.monotonic() + within
        states: dict[str, dict[str, Any]] = {}
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"Home Assistant exited; see {self.log}")
            states = self.states()
            if pred(states):
                return states
            time.sleep(0.5)
        raise AssertionError(f"Home Assistant never showed {what} within {within} s")


@contextlib.contextmanager
def running(
    python: Path,
    config: Path,
    *,
    http_port: int,
    mqtt_port: int,
    mqtt_login: tuple[str, str] | None = None,
) -> Iterator[HomeAssistant]:
    token = write_config(config, http_port=http_port, mqtt_port=mqtt_port, mqtt_login=mqtt_login)
    log = config / "hass.out"
    # Its own process group: HA's helper processes (if any) go with it at the end.
    proc = subprocess.Popen(
        [str(python), "-m", "homeassistant", "-c", str(config), "--skip-pip"],
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    ha = HomeAssistant(proc, f"http://127.0.0.1:{http_port}", token, log)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"Home Assistant exited at start; see {log}")
            with contextlib.suppress(httpx.HTTPError), ha.client() as c:
                if c.get("/api/").status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise TimeoutError(f"Home Assistant's API not up in {START_TIMEOUT_S} s")
            time.sleep(0.5)
        yield ha
    finally:
        _stop_group(proc)


def _stop_group(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    with contextlib.suppress(ProcessLookupError):  # anything left in its group
        os.killpg(proc.pid, signal.SIGKILL)
