"""The person's yes/no to a proposed prescription (agents.medication.rx_confirm through the
medication service): asked on the watch and the chat with one id; the first answer decides;
no answer schedules nothing and the API can still confirm; a confirm prompt's "no" is never
an "are you OK?" answer."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agents.medication.service import MedicationService
from gateway.base.clock import ManualClock
from gateway.base.db import Database
from gateway.contract.values import Event
from gateway.household.model import load_household
from tests.agents.medication.test_service import Pub, Texts

ROOT = Path(__file__).resolve().parents[3]
METFORMIN = "Metformin 500 mg twice daily after meals for 30 days"


@pytest.fixture
async def svc(tmp_path: Path) -> Any:
    hh = load_household(ROOT / "examples" / "household.yaml")
    clock = ManualClock(time.time())

    async def emit(e: Event) -> None:
        pass

    pub = Pub()
    s = MedicationService(Database(tmp_path / "m.db"), pub, Texts(), hh, clock, emit)
    await s.start()
    s.scheduler.pause()
    yield s, clock, pub
    await s.stop()


def status(s: MedicationService, rx_id: str) -> str:
    return next(str(p["status"]) for p in s.prescriptions("grandma") if p["id"] == rx_id)


async def test_a_proposal_is_asked_on_the_watch_and_the_chat(svc: Any) -> None:
    s, _, pub = svc
    rx_id, _ = await s.propose("grandma", METFORMIN)
    (t1, note), (t2, reply) = pub.sent
    assert t1 == "health/grandma/notify" and note["kind"] == "confirm"
    assert note["prompt_id"] == f"rx-{rx_id}" and "Metformin 500 mg" in note["text"]
    assert t2 == "health/grandma/reply" and reply["session_id"] == f"rx-{rx_id}"
    assert reply["expects_answer"] is True and reply["answer_type"] == "yes_no"
    assert s.next_doses("grandma", rx_id) == [] and status(s, rx_id) == "proposed"


async def test_yes_from_the_watch_schedules_and_a_later_no_changes_nothing(svc: Any) -> None:
    s, _, pub = svc
    rx_id, _ = await s.propose("grandma", METFORMIN)
    assert await s.on_answer("grandma", f"rx-{rx_id}", "yes", ok=True)
    assert status(s, rx_id) == "active" and len(s.next_doses("grandma", rx_id)) == 2
    assert "reminders are set up" in pub.sent[-1][1]["text"]
    assert s.confirmations.get(f"rx-{rx_id}").status == "confirmed"
    assert await s.on_answer("grandma", f"rx-{rx_id}", "no", ok=False)
    assert status(s, rx_id) == "active" and "already settled" in pub.sent[-1][1]["text"]


async def test_ok_false_without_an_answer_declines(svc: Any) -> None:
    s, _, pub = svc
    rx_id, _ = await s.propose("grandma", METFORMIN)
    # Consumed (True): the gateway must not take it for "not OK" and call an ambulance.
    assert await s.on_answer("grandma", f"rx-{rx_id}", None, ok=False)
    assert status(s, rx_id) == "stopped" and s.next_doses("grandma", rx_id) == []
    assert s.confirmations.get(f"rx-{rx_id}").status == "declined"
    assert "not set up" in pub.sent[-1][1]["text"]


async def test_no_answer_schedules_nothing_and_the_api_still_confirms(svc: Any) -> None:
    s, clock, pub = svc
    rx_id, _ = await s.propose("grandma", METFORMIN)
    clock.advance(2 * 86_400)  # past the answer window
    assert s.next_doses("grandma", rx_id) == [] and status(s, rx_id) == "proposed"
    assert s.confirmations.open_for("grandma") is None
    assert await s.on_answer("grandma", f"rx-{rx_id}", "yes")
    assert status(s, rx_id) == "proposed" and "expired" in pub.sent[-1][1]["text"]
    out = await s.confirm("grandma", rx_id)  # the family / admin through the API
    assert out["status"] == "active"
    p = s.confirmations.get(f"rx-{rx_id}")
    assert p is not None and p.status == "confirmed"


async def test_other_persons_and_other_prompts(svc: Any) -> None:
    s, _, _ = svc
    rx_id, _ = await s.propose("grandma", METFORMIN)
    # Dad's watch answering grandma's question: consumed, nothing happens.
    assert await s.on_answer("dad", f"rx-{rx_id}", "yes", ok=True)
    assert status(s, rx_id) == "proposed"
    # An "are you OK?" prompt's ack (no answer) is not the medication service's.
    assert not await s.on_answer("grandma", "prompt-123", None, ok=False)
    # Stopping through the API closes the open question.
    assert s.stop_prescription("grandma", rx_id)
    assert s.confirmations.get(f"rx-{rx_id}").status == "closed"
