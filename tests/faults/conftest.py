"""Shared machinery for the fault tests (marker `faults`): a Twilio-compatible endpoint whose
failure mode the test switches (500s, hang past the client's timeout, healthy), a `healthgw run`
process, and small measuring helpers. Everything is real: mosquitto, the twilio SDK over HTTP,
the gateway's own process."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from simulators.sms_sink import SmsSink, _error
from tests.brokers import Broker, free_port, stop_process, wait_port
from tests.harness import SID, TOKEN, gateway_process_env, spawn_gateway

# The text queue appends "[ref 7F3A2C]" to every body: the queue row's id, visible at the
# endpoint, so texts are counted per queue row, not guessed from bodies.
MARKER_RE = re.compile(r"\[(ref [0-9A-F]{6})\]\s*$")


def marker_of(body: str) -> str | None:
    m = MARKER_RE.search(body)
    return m.group(1) if m else None


class FaultySms(SmsSink):
    """SmsSink whose whole API (creates and the lookups the queue reconciles with) is switched
    between modes by the test:

    - "error": every request is answered 500 (code 20500), nothing is accepted;
    - "hang": a create IS accepted (recorded) but every answer is held for `hold_s` (past the
      client's timeout) or until the mode changes: the ambiguous "timed out on our side, sent
      on theirs" case that can double a text;
    - "ok": the ordinary sink (201 and truthful lookups).

    `script(error_requests=N, error_s=T, hang_s=H)` runs error until N requests or T seconds
    (whichever first), then hang for H seconds, then ok, on its own timer thread."""

    def __init__(self, hold_s: float = 11.0, **kw: Any) -> None:
        super().__init__(**kw)
        self.hold_s = hold_s
        self._mode = "ok"
        self._mode_cv = threading.Condition()
        self.by_mode: Counter[str] = Counter()  # requests seen per mode
        self.accepted_in: dict[str, str] = {}  # message sid -> mode it was accepted in
        self.mode_log: list[tuple[float, str]] = [(time.monotonic(), "ok")]

    @property
    def mode(self) -> str:
        with self._mode_cv:
            return self._mode

    def set_mode(self, mode: str) -> None:
        assert mode in ("error", "hang", "ok")
        with self._mode_cv:
            self._mode = mode
            self.mode_log.append((time.monotonic(), mode))
            self._mode_cv.notify_all()

    def script(self, *, error_requests: int, error_s: float, hang_s: float) -> threading.Thread:
        def run() -> None:
            self.set_mode("error")
            start, seen0 = time.monotonic(), self.by_mode["error"]
            with self._mode_cv:
                self._mode_cv.wait_for(
                    lambda: (
                        self.by_mode["error"] - seen0 >= error_requests
                        or time.monotonic() - start >= error_s
                    ),
                    error_s,
                )
            self.set_mode("hang")
            time.sleep(hang_s)
            self.set_mode("ok")

        t = threading.Thread(target=run, name="sms-fault-script", daemon=True)
        t.start()
        return t

    # The handler calls _check first for every request, then _create / _list, then _reply,
    # which sleeps _delay_s(): the three hooks the modes need.
    def _check(self, sid: str, auth_header: str | None) -> tuple[int, dict[str, Any]] | None:
        with self._mode_cv:
            mode = self._mode
            self.by_mode[mode] += 1
            self._mode_cv.notify_all()
        if mode == "error":
            return 500, _error(500, 20500, "Internal server error")
        return super()._check(sid, auth_header)

    def _create(self, sid: str, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        mode = self.mode
        status, payload = super()._create(sid, form)
        if status == 201:
            with self._mode_cv:
                self.accepted_in[str(payload["sid"])] = mode
        return status, payload

    def _delay_s(self) -> float:
        with self._mode_cv:
            if self._mode == "hang":
                start = time.monotonic()
                self._mode_cv.wait_for(
                    lambda: self._mode != "hang" or time.monotonic() - start >= self.hold_s,
                    self.hold_s,
                )
        return super()._delay_s()


@pytest.fixture
def faulty_sms() -> Iterator[FaultySms]:
    with FaultySms(account_sid=SID, auth_token=TOKEN) as s:
        yield s


async def until(pred: Callable[[], Any], within: float, what: str, step: float = 0.05) -> Any:
    """Poll `pred` until truthy; fail naming `what` after `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {within:.0f}s: {what}")
        await asyncio.sleep(step)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def summary(name: str, **numbers: Any) -> None:
    """The one line a reader greps for in `pytest -s` output."""
    body = " ".join(f"{k}={v}" for k, v in numbers.items())
    print(f"FAULTS-SUMMARY {name}: {body}", flush=True)


def gateway_env(
    data: Path, broker: Broker, sms: SmsSink | None, household: Path, **extra: str
) -> tuple[dict[str, str], int]:
    """Environment for `healthgw run` against the private broker and the local endpoint
    (no endpoint: texts stay in the offline outbox)."""
    port = free_port()
    env = gateway_process_env(
        data,
        broker.url,
        sms_url=None if sms is None else sms.url,
        household=household,
        gateway_id="faulthub",
        api_port=port,
        **extra,
    )
    return env, port


def start_gateway(env: dict[str, str], log: Path, api_port: int) -> subprocess.Popen[bytes]:
    proc = spawn_gateway(env, log)
    try:
        wait_port(api_port, 60)
        # Then subscribed: on a first run its broker sessions do not exist yet, and what is
        # published before the SUBSCRIBE is not kept for it (a race that lost readings).
        _wait_broker_link(api_port, 30)
    except TimeoutError:
        stop_process(proc)
        tail = log.read_text(errors="replace")[-2000:]
        raise AssertionError("gateway did not start: " + tail) from None
    return proc


def _wait_broker_link(api_port: int, within: float) -> None:
    """Until /readyz says the broker link is up (set once both sessions are subscribed)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{api_port}/readyz", timeout=5) as r:
                body = json.load(r)
        except urllib.error.HTTPError as exc:  # 503 while not ready: the same body
            body = json.load(exc)
        except OSError:
            body = {}
        if (body.get("checks") or {}).get("broker"):
            return
        time.sleep(0.2)
    raise TimeoutError("the gateway's broker link did not come up")
