from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.brokers import Broker, running_broker
from tests.phi_scan import findings

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    """A private mosquitto on a free port, configured from mosquitto/dev.conf."""
    with running_broker(tmp_path / "broker") as b:
        yield b


@pytest.fixture
def household_path() -> Path:
    return ROOT / "examples" / "household.yaml"


class _PhiGuard(logging.Handler):
    """Collects every log line a test produces at INFO and above (the shipped default)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.hits: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                text += " " + str(record.exc_info[1])
        except Exception:  # a broken log call is that test's problem, not PHI
            return
        for f in findings(text):
            self.hits.append(f"{record.name}: {f}")


@pytest.fixture(autouse=True)
def no_phi_in_logs(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test, including the end-to-end ones: no household name, phone number or
    coordinate may reach a log line. A test that logs PHI on purpose marks itself
    `@pytest.mark.phi_in_logs`."""
    guard = _PhiGuard()
    root = logging.getLogger()
    old = root.level
    root.addHandler(guard)
    if root.level > logging.INFO or root.level == logging.NOTSET:
        root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(guard)
        root.setLevel(old)
    if guard.hits and request.node.get_closest_marker("phi_in_logs") is None:
        pytest.fail("PHI in log lines: " + "; ".join(sorted(set(guard.hits))[:10]))
