from __future__ import annotations

import time
from pathlib import Path

import pytest

from agents.triage.classifier import Triage


@pytest.fixture(scope="session")
def triage_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("triage-cache")


@pytest.fixture(scope="session")
def training_seconds(triage_cache_dir: Path) -> float:
    """Train once per session into the shared cache dir; later loads read the cache."""
    t0 = time.perf_counter()
    model = Triage.load(triage_cache_dir)
    elapsed = time.perf_counter() - t0
    assert model.trained, "a fresh cache dir must train"
    print(f"\ntriage training took {elapsed:.1f} s")
    return elapsed
