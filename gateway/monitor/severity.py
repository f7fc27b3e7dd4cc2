"""The alert severity scale: how the severities rank, which are urgent, and the worse of two.
Apart from the tracker because the response (who is told) and the events (which alert leads
a grouped event) rank severities too, and none of them needs the tracker's state machine."""

from __future__ import annotations

import logging
from collections.abc import Mapping

log = logging.getLogger(__name__)

SEVERITY_RANK: Mapping[str, int] = {
    "low": 0,
    "abnormal": 1,
    "low-medium": 2,
    "critical": 2,
    "medium": 3,
    "high": 4,
    "intervention": 4,
}
URGENT_RANK = 2
_TOP_RANK = max(SEVERITY_RANK.values())


def severity_rank(severity: str) -> int:
    rank = SEVERITY_RANK.get(severity)
    if rank is None:
        log.warning("unknown alert severity; treating it as the highest")
        return _TOP_RANK
    return rank


def worse(a: str | None, b: str) -> str:
    """The worse of two severities (b wins ties: it is the more recent)."""
    if a is None or severity_rank(b) >= severity_rank(a):
        return b
    return a
