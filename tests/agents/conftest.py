from __future__ import annotations

import pytest

from agents.triage.classifier import Triage
from tests.harness import TRIAGE_CACHE


@pytest.fixture(scope="session")
def trained_triage() -> Triage:
    """Train (or load) the triage classifier once per session, in the cache the gateways in
    these tests use, so no test waits on training (it runs once per machine)."""
    return Triage.load(TRIAGE_CACHE)
