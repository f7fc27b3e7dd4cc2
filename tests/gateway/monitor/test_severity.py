"""The alert severity scale (gateway/monitor/severity.py)."""

from __future__ import annotations

from gateway.monitor.severity import SEVERITY_RANK, URGENT_RANK, severity_rank, worse


def test_news2_levels_rank() -> None:
    assert [severity_rank(s) for s in ("low", "low-medium", "medium", "high")] == [0, 2, 3, 4]
    assert SEVERITY_RANK["abnormal"] < SEVERITY_RANK["critical"] < SEVERITY_RANK["intervention"]
    assert severity_rank("low-medium") == URGENT_RANK


def test_unknown_severity_ranks_highest() -> None:
    assert severity_rank("severe") == max(SEVERITY_RANK.values())


def test_worse_keeps_the_more_recent_on_a_tie() -> None:
    assert worse(None, "low") == "low"
    assert worse("high", "medium") == "high"
    assert worse("critical", "low-medium") == "low-medium"
