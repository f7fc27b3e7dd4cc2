"""Start a private Mosquitto on a free port with the project's config (never share state)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_process(proc: subprocess.Popen[bytes] | None, timeout: float = 5.0) -> None:
    """Terminate a server we started; kill it if it does not go in time."""
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {port}")


@dataclass
class Broker:
    port: int
    workdir: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def start(self) -> None:
        conf = self.workdir / "mosquitto.conf"
        data = self.workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        # As root mosquitto switches to the `mosquitto` user, which cannot write pytest's
        # 0700 temp dirs: persistence then silently never saves (a restart forgets sessions).
        run_as = "user root\n" if os.geteuid() == 0 else ""
        conf.write_text(
            (ROOT / "mosquitto" / "dev.conf").read_text()
            + f"\nlistener {self.port} 127.0.0.1\npersistence_location {data}/\n{run_as}"
        )
        self.proc = subprocess.Popen(
            [MOSQUITTO, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_port(self.port)

    def stop(self) -> None:
        stop_process(self.proc)
        self.proc = None


@contextlib.contextmanager
def running_broker(workdir: Path) -> Iterator[Broker]:
    b = Broker(free_port(), workdir)
    b.start()
    try:
        yield b
    finally:
        b.stop()


# --- the production broker (mosquitto/mosquitto.conf) ---------------------------------------

PRODUCTION_CONF = ROOT / "mosquitto" / "mosquitto.conf"
_TLS_MARKER = "# --- TLS listener ---"


def render_production_conf(
    *,
    port: int,
    auth_dir: Path,
    data_dir: Path,
    log_file: Path,
    tls_port: int | None = None,
    certs_dir: Path | None = None,
) -> str:
    """mosquitto/mosquitto.conf itself, with only its paths and ports swapped (and the
    commented TLS block switched on when tls_port is given): the tests run the real rules."""
    text = PRODUCTION_CONF.read_text()
    if tls_port is not None:
        assert certs_dir is not None
        head, marker, tail = text.partition(_TLS_MARKER)
        assert marker, f"{PRODUCTION_CONF} lost its {_TLS_MARKER!r} block"
        tail = re.sub(r"(?m)^#(?=(listener|cafile|certfile|keyfile)\b)", "", tail)
        text = head + marker + tail
        text = re.sub(r"(?m)^listener 8883$", f"listener {tls_port} 127.0.0.1", text)
        text = text.replace("/mosquitto/certs/", f"{certs_dir}/")
    text = re.sub(r"(?m)^listener 1883$", f"listener {port} 127.0.0.1", text)
    text = text.replace("/mosquitto/auth/", f"{auth_dir}/").replace(
        "/mosquitto/data/", f"{data_dir}/"
    )
    active = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    leftovers = [ln for ln in active if "/mosquitto/" in ln or re.match(r"listener \d+$", ln)]
    assert not leftovers, f"render_production_conf does not know how to swap {leftovers}"
    text += f"\n# test run\nlog_dest file {log_file}\nlog_type all\nconnection_messages true\n"
    if os.geteuid() == 0:
        # As root mosquitto switches to the `mosquitto` user, which cannot enter pytest's
        # 0700 temp dirs; in the container the broker's user owns /mosquitto instead.
        text += "user root\n"
    return text


@dataclass
class SecureBroker:
    """mosquitto with the production rules. Prepare `auth_dir` (passwd, acl) before start()."""

    port: int
    workdir: Path
    tls_port: int | None = None
    certs_dir: Path | None = None
    proc: subprocess.Popen[bytes] | None = None

    @property
    def auth_dir(self) -> Path:
        return self.workdir / "auth"

    @property
    def log_file(self) -> Path:
        return self.workdir / "mosquitto.log"

    def start(self) -> None:
        data = self.workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        conf = self.workdir / "mosquitto.conf"
        conf.write_text(
            render_production_conf(
                port=self.port,
                auth_dir=self.auth_dir,
                data_dir=data,
                log_file=self.log_file,
                tls_port=self.tls_port,
                certs_dir=self.certs_dir,
            )
        )
        self.proc = subprocess.Popen(
            [MOSQUITTO, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for port in (self.port, self.tls_port):
            if port is not None:
                self._wait(port)

    def _wait(self, port: int) -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"mosquitto exited: {self.log()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                return
            time.sleep(0.05)
        raise TimeoutError(f"nothing listens on {port}")

    def reload(self) -> None:
        """SIGHUP: mosquitto re-reads passwd and acl."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGHUP)

    def log(self) -> str:
        try:
            return self.log_file.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self) -> None:
        stop_process(self.proc)
        self.proc = None


@contextlib.contextmanager
def running_secure_broker(
    workdir: Path, *, certs_dir: Path | None = None
) -> Iterator[SecureBroker]:
    """Start it after `workdir/auth` holds passwd and acl; with certs_dir, TLS too."""
    b = SecureBroker(
        free_port(), workdir, tls_port=free_port() if certs_dir else None, certs_dir=certs_dir
    )
    b.start()
    try:
        yield b
    finally:
        b.stop()


class Probe:
    """A small synchronous MQTT client (paho, MQTT 3.1.1) for access-control tests."""

    def __init__(
        self,
        port: int,
        username: str | None = None,
        password: str | None = None,
        *,
        host: str = "127.0.0.1",
        ca_file: Path | None = None,
    ) -> None:
        import paho.mqtt.client as mqtt
        from paho.mqtt.enums import CallbackAPIVersion

        self.host, self.port = host, port
        self.client_id = f"probe-{uuid.uuid4().hex[:12]}"
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=self.client_id,
            protocol=mqtt.MQTTv311,
            reconnect_on_failure=False,
        )
        if username is not None:
            self.client.username_pw_set(username, password)
        if ca_file is not None:
            self.client.tls_set(ca_certs=str(ca_file))
        self.messages: list[tuple[str, bytes, bool]] = []
        self._cond = threading.Condition()
        self._connack: Any = None
        self._subacks: dict[int, list[Any]] = {}
        self.client.on_connect = self._on_connect
        self.client.on_message = self._on_message
        self.client.on_subscribe = self._on_subscribe

    def _on_connect(self, client: Any, userdata: Any, flags: Any, rc: Any, props: Any) -> None:
        with self._cond:
            self._connack = rc
            self._cond.notify_all()

    def _on_message(self, client: Any, userdata: Any, msg: Any) -> None:
        with self._cond:
            self.messages.append((msg.topic, msg.payload, bool(msg.retain)))
            self._cond.notify_all()

    def _on_subscribe(self, client: Any, userdata: Any, mid: int, rcs: Any, props: Any) -> None:
        with self._cond:
            self._subacks[mid] = list(rcs)
            self._cond.notify_all()

    def connect(self, timeout: float = 5.0) -> bool:
        """True when the broker accepted the credentials (CONNACK 0)."""
        self.client.connect(self.host, self.port, keepalive=30)
        self.client.loop_start()
        with self._cond:
            self._cond.wait_for(lambda: self._connack is not None, timeout)
        if self._connack is None:
            raise TimeoutError("no CONNACK")
        ok = not self._connack.is_failure
        if not ok:
            self.close()
        return bool(ok)

    def subscribe(self, *topics: str, timeout: float = 5.0) -> list[Any]:
        _, mid = self.client.subscribe([(t, 1) for t in topics])
        assert mid is not None
        with self._cond:
            self._cond.wait_for(lambda: mid in self._subacks, timeout)
            return self._subacks[mid]

    def publish(self, topic: str, payload: bytes | str, *, retain: bool = False) -> None:
        info = self.client.publish(topic, payload, qos=1, retain=retain)
        info.wait_for_publish(5.0)
        assert info.is_published(), f"no PUBACK for {topic}"

    def wait_for(self, topic: str, payload: bytes | None = None, timeout: float = 5.0) -> bool:
        def seen() -> bool:
            return any(t == topic and payload in (None, p) for t, p, _ in self.messages)

        with self._cond:
            return self._cond.wait_for(seen, timeout)

    def topics(self) -> set[str]:
        with self._cond:
            return {t for t, _, _ in self.messages}

    def is_connected(self) -> bool:
        return bool(self.client.is_connected())

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.disconnect()
        self.client.loop_stop()


# --- a second MQTT implementation: NATS's MQTT gateway (docs/scale-out.md) -------------------

NATS_SERVER = shutil.which("nats-server") or "/usr/sbin/nats-server"


@dataclass
class NatsBroker(Broker):
    """A private nats-server speaking MQTT 3.1.1 on `port` (JetStream keeps sessions and
    retained messages in `workdir`, so stop()/start() keeps them like mosquitto's persistence).
    Its own NATS client port is random and loopback-only; the system's NATS is never touched."""

    name: str = "nats"
    # QoS 1 messages in flight per subscription (NATS default 1024). A session's total over
    # all its subscriptions is capped at 65535: beyond it NATS refuses the SUBACK.
    max_ack_pending: int | None = None

    @property
    def log_file(self) -> Path:
        return self.workdir / "nats.log"

    def start(self) -> None:
        store = self.workdir / "jetstream"
        store.mkdir(parents=True, exist_ok=True)
        conf = self.workdir / "nats.conf"
        conf.write_text(
            f'server_name: "healthgw-test-{self.port}"\n'
            "listen: 127.0.0.1:-1\n"
            f'jetstream {{ store_dir: "{store}" }}\n'
            f"mqtt {{ listen: 127.0.0.1:{self.port}"
            + (f", max_ack_pending: {self.max_ack_pending}" if self.max_ack_pending else "")
            + " }\n"
        )
        self.proc = subprocess.Popen(
            [NATS_SERVER, "-c", str(conf), "-l", str(self.log_file)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_port(self.port, 20)  # JetStream recovers its streams first after a restart
        except TimeoutError:
            stop_process(self.proc)
            raise

    def log(self) -> str:
        try:
            return self.log_file.read_text(errors="replace")
        except FileNotFoundError:
            return ""


@contextlib.contextmanager
def running_nats(workdir: Path, max_ack_pending: int | None = None) -> Iterator[NatsBroker]:
    b = NatsBroker(free_port(), workdir, max_ack_pending=max_ack_pending)
    b.start()
    try:
        yield b
    finally:
        b.stop()
