"""What every console browser test module shares: one headless chromium per module (after
that module's `gateway` fixture is up) and the folder its screenshots go to."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.console.browser import chromium
from tests.gateway.api.gateway_process import LiveGateway


@pytest.fixture(scope="module")
def artefacts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    wanted = os.environ.get("HEALTHGW_TEST_ARTEFACTS")
    folder = Path(wanted) if wanted else tmp_path_factory.mktemp("console-artefacts")
    folder.mkdir(parents=True, exist_ok=True)
    yield folder
    print(f"\nconsole screenshots: {folder}")


@pytest.fixture(scope="module")
def browser(gateway: LiveGateway) -> Iterator[Any]:
    yield from chromium()
