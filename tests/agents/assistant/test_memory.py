from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

import pytest

from agents.assistant.memory import LongTermMemory, SlotTaken, similarity
from gateway.base.db import Database


@pytest.fixture
def mem(tmp_path: Path) -> LongTermMemory:
    return LongTermMemory(Database(tmp_path / "m.db"), clock_now=lambda: 1.0)


def test_similar_complaints_by_meaning_of_the_words(mem: LongTermMemory) -> None:
    mem.store_complaint("ann", "my knees hurt when I climb stairs", "2026-01-10T10:00:00", None)
    mem.store_complaint("ann", "itchy rash on both arms", "2026-02-01T10:00:00", None)
    mem.store_complaint("bob", "knee pain", "2026-02-01T10:00:00", None)
    got = mem.similar_complaints("ann", "knee pain on the stairs")
    assert [g["symptoms"] for g in got] == ["my knees hurt when I climb stairs"]
    assert got[0]["date"] == "2026-01-10"
    # Only the person's own memory, and the date range is honoured.
    assert mem.similar_complaints("ann", "knee pain", start=date(2026, 1, 20)) == []


def test_similarity_is_bounded() -> None:
    sims = similarity("chest pain", ["chest pain", "sore toe", ""])
    assert sims[0] > 0.99 and sims[1] < 0.3 and all(0 <= s <= 1.0001 for s in sims)
    assert similarity("x", []) == []


def test_a_slot_is_booked_once(mem: LongTermMemory) -> None:
    a, b = datetime(2026, 3, 16, 10), datetime(2026, 3, 16, 10, 30)
    first = mem.book("ann", "CARD-1", a, b, "10:00-10:30, 16/03/2026")
    # The same person again is the same booking (a retried call); someone else is refused.
    assert mem.book("ann", "CARD-1", a, b, "10:00-10:30, 16/03/2026") == first
    with pytest.raises(SlotTaken):
        mem.book("bob", "CARD-1", a, b, "10:00-10:30, 16/03/2026")
    assert mem.taken() == {("CARD-1", a)}
    assert mem.cancel("ann", first)
    assert mem.taken() == set()
    mem.book("bob", "CARD-1", a, b, "10:00-10:30, 16/03/2026")


def test_history_links_to_the_booking(mem: LongTermMemory) -> None:
    a, b = datetime(2026, 3, 16, 10), datetime(2026, 3, 16, 10, 30)
    mem.book("ann", "CARD-1", a, b, "10:00-10:30, 16/03/2026")
    mem.save_history("ann", "CARD-1", "10:00-10:30, 16/03/2026", "chest pain")
    mem.save_history("ann", "GP-1", "09:00-09:15, 17/03/2026", "cough")
    h = mem.history("ann")
    assert [(x["specialist_id"], x["status"]) for x in h] == [
        ("CARD-1", "booked"),
        ("GP-1", "recorded"),
    ]
    assert mem.history("bob") == []
