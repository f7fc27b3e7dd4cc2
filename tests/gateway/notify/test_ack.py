"""An SMS reply stops the SOS ladder only when it is an explicit "I'm helping": negations,
reservations and questions must never acknowledge (the ladder would stop texting others)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents.playbooks.ladder import SosLadder
from agents.tools.registry import ToolRegistry
from gateway.base.clock import ManualClock
from gateway.base.db import Database
from gateway.contract.values import Event
from gateway.household.model import load_household
from gateway.notify.ack import MAX_LEN, is_ack

ROOT = Path(__file__).resolve().parents[3]
ANA = "+447700900201"  # grandma's and dad's emergency contact in examples/household.yaml

ACKS = [
    "OK",
    "ok",
    "ok.",
    "Ok!",
    "okay",
    "OK on my way",
    "on my way",
    "On my way!!",
    "omw",
    "coming",
    "Coming now",
    "I'm coming",
    "I\u2019m coming",  # a phone's curly apostrophe
    "im coming",
    "I'm helping",
    "helping",
    "yes",
    "Yes, coming",
    "ack",
    "got it",
    "I'm here",
    "ok, I'll be there in 10 min",
    "omw 5mins",
    "OK 👍",
    "  ok  ",
    "ok thanks",  # an explicit OK with a thank-you
    # A short delay is still "on my way" (up to MAX_DELAY_MIN minutes).
    "coming in 10 min",
    "omw in 5 mins",
    "on my way, in 30 minutes",
    "ok in 15",
    "coming in half an hour",
    "omw in a few minutes",
]
NOT_ACKS = [
    "ok but I can't come",
    "OK but I cant come",
    "not ok",
    "can't",
    "cannot",
    "Can't, I'm at work",
    "no",
    "No.",
    "nope",
    "busy",
    "ok busy",
    "call someone else",
    "ok call someone else",
    "ok? what happened",
    "OK?",
    "coming?",
    "what happened",
    "I won't make it",
    "sorry",
    "maybe",
    "ok later",
    "I'll be there tomorrow",  # "tomorrow" is not a word we know: do not guess
    # A long delay is not "I'm helping": the ladder must keep texting others.
    "coming in 240 minutes",
    "ok in 300 min",
    "omw in 90 mins",
    "on my way in 31 min",
    "coming in 45",
    "omw 60mins",
    "coming in 2 hours",
    "ok coming in 1 hr",
    "coming in an hour",
    "ok coming tomorrow",
    "ok coming tonight",
    "omw later",
    "ok 999999999999999999999 min",
    "Who is this",
    "STOP",
    "👍",
    "",
    "   ",
    "ok " * (MAX_LEN // 3 + 1),  # a long message is a conversation
]


@pytest.mark.parametrize("body", ACKS)
def test_explicit_acknowledgements(body: str) -> None:
    assert is_ack(body)


@pytest.mark.parametrize("body", NOT_ACKS)
def test_negations_reservations_and_questions_are_not_acks(body: str) -> None:
    assert not is_ack(body)


def test_none_is_not_an_ack() -> None:
    assert not is_ack(None)


@pytest.fixture
def ladder(tmp_path: Path) -> tuple[SosLadder, list[Event]]:
    events: list[Event] = []

    async def emit(e: Event) -> None:
        events.append(e)

    def no_ambulance(_: str) -> Any:
        return None

    hh = load_household(ROOT / "examples" / "household.yaml")
    lad = SosLadder(
        Database(tmp_path / "safety.db"), ToolRegistry(), hh, ManualClock(), emit, no_ambulance
    )
    lad.open("run-1", "grandma")
    return lad, events


@pytest.mark.parametrize("body", ACKS)
async def test_ack_by_sms_stops_the_ladder(
    ladder: tuple[SosLadder, list[Event]], body: str
) -> None:
    lad, events = ladder
    assert await lad.ack_by_sms(ANA, body) == "grandma"
    assert lad.status("grandma")["state"] == "acked"  # type: ignore[index]
    assert [e.data["by"] for e in events] == ["sms:Ana Lopez"]


@pytest.mark.parametrize("body", NOT_ACKS)
async def test_ack_by_sms_ignores_non_acks(
    ladder: tuple[SosLadder, list[Event]], body: str
) -> None:
    lad, events = ladder
    assert await lad.ack_by_sms(ANA, body) is None
    assert lad.status("grandma")["state"] == "waiting"  # type: ignore[index]
    assert events == []


async def test_ack_by_sms_needs_a_contact_of_the_person(
    ladder: tuple[SosLadder, list[Event]],
) -> None:
    lad, _ = ladder
    assert await lad.ack_by_sms("+447700900999", "OK") is None  # not anyone's contact
    assert lad.status("grandma")["state"] == "waiting"  # type: ignore[index]
