"""The clinical scenario suite: every case in tests/data/clinical_scenarios.yaml through the
real gateway (monitor, escalation, playbooks, tools, text queue) on a hand-moved clock."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.clinical_runner import Runner, check

DATA = Path(__file__).resolve().parents[2] / "data" / "clinical_scenarios.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(DATA.read_text())


def test_the_suite_is_broad() -> None:
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids)) and len(ids) >= 60
    kinds = Counter(i.split("-")[0] for i in ids)
    # Adults, children of several ages, pregnancy, COPD, beta-blockers, late data.
    for k in ("adult", "child", "infant", "pregnant", "copd", "beta", "late"):
        assert kinds[k] >= 2, k
    steps = [s for c in CASES for s in c["steps"]]
    assert any(s.get("restart") for s in steps) and any("sync" in s for s in steps)
    assert all(c.get("what") and c.get("expect") for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
async def test_scenario(case: dict[str, Any], tmp_path: Path) -> None:
    result = await Runner(case, tmp_path).run()
    assert check(case, result) == [], case["what"]
