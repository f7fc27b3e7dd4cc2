"""The console rides out a gateway restart: the page says it is reconnecting while the hub
is down, comes back live on its own (same tab, same token, no reload), and the next reading
reaches its card. A real `healthgw run`, stopped with SIGTERM and started again."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.contract.topics import vitals_topic
from tests.brokers import Broker, free_port, running_broker, stop_process
from tests.console.browser import chromium, skip_without_chromium, wait_for
from tests.console.test_console_browser import publish_to, sign_in
from tests.harness import ADMIN, gateway_process_env, spawn_gateway

pytestmark = [pytest.mark.browser, pytest.mark.integration]


CELL = 'article[data-person="dad"] [data-vital="heart_rate"]'


def link_state(driver: Any) -> str:
    from selenium.webdriver.common.by import By

    text: str = driver.find_element(By.ID, "link-state").text
    return text


def wait_ready(base: str, proc: Any, log: Path, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the gateway exited: {log.read_text(errors='replace')[-2000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise TimeoutError(f"the gateway was not ready: {log.read_text(errors='replace')[-2000:]}")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    skip_without_chromium()
    with running_broker(tmp_path / "broker") as b:
        yield b


def test_the_page_reconnects_after_a_gateway_restart(tmp_path: Path, broker: Broker) -> None:
    from selenium.webdriver.common.by import By

    port = free_port()
    env = gateway_process_env(tmp_path / "data", broker.url, api_port=port)
    log = tmp_path / "gateway.log"
    base = f"http://127.0.0.1:{port}"
    proc = spawn_gateway(env, log)
    try:
        wait_ready(base, proc, log)
        with contextlib.contextmanager(chromium)() as driver:
            sign_in(driver, base, ADMIN, "admin")
            wait_for(driver, lambda d: link_state(d) == "Live")
            stop_process(proc, timeout=15)
            wait_for(driver, lambda d: link_state(d) == "Reconnecting…", within=20)
            proc = spawn_gateway(env, log)
            wait_ready(base, proc, log)
            wait_for(driver, lambda d: link_state(d) == "Live", within=30)
            publish_to(broker.port, vitals_topic("dad", "watch-jon"),
                       {"ts": time.time(), "heart_rate": 88, "spo2": 96})  # fmt: skip
            wait_for(driver, lambda d: d.find_element(By.CSS_SELECTOR, CELL).text == "88 bpm")
    finally:
        stop_process(proc, timeout=15)
