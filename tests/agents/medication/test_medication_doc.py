"""docs/clinical.md (§8) lists every row of the medicine tables with its source."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.medication.drugs import KNOWN_SCHEDULES, LIMITS, PRODUCTS

DOC = (Path(__file__).resolve().parents[3] / "docs" / "clinical.md").read_text()
ROWS = (
    [(r.ingredient, r.source) for r in LIMITS]
    + [(p.name, p.source) for p in PRODUCTS]
    + [(", ".join(k.names), k.source) for k in KNOWN_SCHEDULES]
)


@pytest.mark.parametrize(("name", "source"), ROWS, ids=[n for n, _ in ROWS])
def test_every_table_row_is_documented_with_its_source(name: str, source: str) -> None:
    rows = [line for line in DOC.splitlines() if line.startswith(f"| {name} |")]
    assert rows, name
    assert any(source in line for line in rows), (name, source)
