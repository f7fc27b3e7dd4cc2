"""The family's side of medication: a missed dose and a warning each raise an event and text
every emergency contact once per cause; a contact that cannot be queued does not stop the rest."""

from __future__ import annotations

from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from agents.medication.family_alerts import FamilyAlerts
from gateway.base.clock import ManualClock
from gateway.contract.values import Event
from gateway.household.model import load_household

ROOT = Path(__file__).resolve().parents[3]
DAUGHTER, SON = "+447700900201", "+447700900202"  # grandma's contacts in the example household


class Texts:
    def __init__(self, failing: str | None = None) -> None:
        self.failing = failing
        self.sent: dict[str, tuple[str, str]] = {}

    def submit(self, *, to: str, body: str, key: str, person: str, purpose: str) -> str:
        if to == self.failing:
            raise OSError(f"queue full: {body}")  # a message that quotes the text
        self.sent.setdefault(key, (to, body))
        return key


def alerts(texts: Texts, events: list[Event]) -> FamilyAlerts:
    async def emit(e: Event) -> None:
        events.append(e)

    hh = load_household(ROOT / "examples" / "household.yaml")
    # 2026-03-02 08:00 UTC is 08:00 in London.
    return FamilyAlerts(hh, texts, ManualClock(1772438400.0), emit, ZoneInfo("Europe/London"))


async def test_a_missed_dose_is_an_event_and_one_text_per_contact() -> None:
    texts, events = Texts(), []
    a = alerts(texts, events)
    await a.missed("grandma", "d1", "metformin", 1772438400.0)
    await a.missed("grandma", "d1", "metformin", 1772438400.0)  # the same cause: no new texts
    assert [e.type for e in events] == ["medication_missed", "medication_missed"]
    assert events[0].data["dose_id"] == "d1" and events[0].data["medication"] == "metformin"
    assert sorted(to for to, _ in texts.sent.values()) == [DAUGHTER, SON]
    assert all("08:00 dose of Metformin" in body for _, body in texts.sent.values())


async def test_a_warning_reaches_the_other_contacts_when_one_cannot_be_queued(
    caplog: pytest.LogCaptureFixture,
) -> None:
    texts, events = Texts(failing=DAUGHTER), []
    await alerts(texts, events).warn("grandma", ["Too much paracetamol."], key="rx:1")
    assert [e.type for e in events] == ["medication_warning"]
    assert [to for to, _ in texts.sent.values()] == [SON]
    assert "could not queue a text" in caplog.text
    assert "paracetamol" not in caplog.text  # the log names the error's class, not the message


async def test_an_unknown_person_raises_the_event_but_texts_nobody() -> None:
    texts, events = Texts(), []
    await alerts(texts, events).missed("nobody", "d2", "metformin", 1772438400.0)
    assert [e.type for e in events] == ["medication_missed"]
    assert texts.sent == {}
