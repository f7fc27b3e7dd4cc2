"""The PHI log scanner itself: it must catch what it is for, and pass what is not PHI."""

from __future__ import annotations

from tests.phi_scan import findings


def test_it_catches_names_numbers_and_places() -> None:
    assert findings("texting Maria Lopez")
    assert findings("to +447700900201 failed")
    assert findings("to 07700 900201 failed")
    assert findings("at 51.50720, -0.12760")
    assert findings("see https://maps.google.com/?q=1,2")


def test_it_passes_ordinary_log_lines() -> None:
    for line in (
        "text queued offline for +44…02 (ref 7F3A2C, 142 chars)",
        "connected to broker (connect #3)",
        "store: pruned 1200 rows older than 365 days",
        "POST /2010-04-01/Accounts/AC123/Messages.json",
        "reading at 1795618283.158 from dad/watch-jon",
        "anomaly refit: 0 fitted, 2 short of history",
    ):
        assert findings(line) == [], line
