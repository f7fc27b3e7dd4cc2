from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.brokers import Broker, running_broker

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    """A private mosquitto on a free port, configured from mosquitto/dev.conf."""
    with running_broker(tmp_path / "broker") as b:
        yield b


@pytest.fixture
def household_path() -> Path:
    return ROOT / "examples" / "household.yaml"
