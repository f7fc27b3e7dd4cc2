"""Which chat message goes where: a prescription question, a follow-up, or the appointment
conversations (a recording stand-in; the real conversations are in the e2e tests)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from agents.assistant.chat_router import ChatRouter
from agents.assistant.memory import LongTermMemory
from agents.medication.service import MedicationService
from agents.scheduling.follow_ups import FollowUps, session_for
from gateway.base.clock import ManualClock
from gateway.base.db import Database
from gateway.contract.values import Event
from gateway.household.model import load_household
from tests.agents.medication.test_service import LONDON, Pub, Texts

ROOT = Path(__file__).resolve().parents[3]


class Convs:
    """Records what reached the appointment conversations."""

    def __init__(self) -> None:
        self.said: list[tuple[str, str, str | None]] = []
        self.open: set[str] = set()

    async def say(self, person: str, text: str, session_id: str | None = None) -> str:
        self.said.append((person, text, session_id))
        sid = session_id or f"conv{len(self.said)}"
        self.open.add(sid)
        return sid

    def listen(self, person: str, fn: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        return lambda: None

    def session_open(self, session_id: str) -> bool:
        return session_id in self.open

    def stats(self) -> dict[str, Any]:
        return {"sessions": len(self.said)}


@pytest.fixture
async def env(tmp_path: Path) -> Any:
    hh = load_household(ROOT / "examples" / "household.yaml")
    clock = ManualClock(time.time())

    async def emit(e: Event) -> None:
        pass

    db = Database(tmp_path / "m.db")
    pub = Pub()
    meds = MedicationService(db, pub, Texts(), hh, clock, emit)
    await meds.start()
    meds.scheduler.pause()
    mem = LongTermMemory(db, clock_now=clock.now)
    fus = FollowUps(db, pub, clock, LONDON)
    convs = Convs()
    router = ChatRouter(convs, meds.confirmations, meds, fus)  # type: ignore[arg-type]
    heard: list[dict[str, Any]] = []
    router.listen("grandma", heard.append)
    yield router, convs, meds, mem, fus, heard
    await meds.stop()


def status(meds: MedicationService, rx_id: str) -> str:
    return next(str(p["status"]) for p in meds.prescriptions("grandma") if p["id"] == rx_id)


async def test_a_bare_yes_confirms_the_open_prescription(env: Any) -> None:
    router, convs, meds, *_, heard = env
    rx_id, _ = await meds.propose("grandma", "Bisoprolol 5 mg OD")
    assert heard[-1]["session_id"] == f"rx-{rx_id}"  # chat listeners saw the question
    sid = await router.say("grandma", "yes please")
    assert sid == f"rx-{rx_id}" and status(meds, rx_id) == "active"
    assert heard[-1]["expects_answer"] is False and not router.session_open(sid)
    assert convs.said == []


async def test_unclear_text_starts_a_conversation_and_the_question_stays(env: Any) -> None:
    router, convs, meds, *_ = env
    rx_id, _ = await meds.propose("grandma", "Bisoprolol 5 mg OD")
    await router.say("grandma", "my knees hurt")
    assert convs.said == [("grandma", "my knees hurt", None)]
    # That conversation is talking now: a bare "no" is its answer, not the prescription's.
    await router.say("grandma", "no")
    assert convs.said[-1][1] == "no" and status(meds, rx_id) == "proposed"
    # Naming the question's session still reaches it; an unclear answer is asked again.
    await router.say("grandma", "hmm", f"rx-{rx_id}")
    assert status(meds, rx_id) == "proposed" and router.session_open(f"rx-{rx_id}")
    await router.say("grandma", "no thanks", f"rx-{rx_id}")
    assert status(meds, rx_id) == "stopped"


async def test_follow_up_answers(env: Any) -> None:
    router, convs, _, mem, fus, heard = env
    a = mem.add_follow_up("grandma", "app", "check in", "a sore knee", date.today())
    b = mem.add_follow_up("grandma", "app", "check in", "a rash", date.today())
    assert await fus.fire(a)
    assert heard[-1]["session_id"] == session_for(a) and heard[-1]["expects_answer"]
    await router.say("grandma", "much better thanks")
    assert convs.said == [] and "Glad" in heard[-1]["text"]
    assert await fus.fire(b)
    sid = await router.say("grandma", "still itchy and spreading", session_for(b))
    # Not better: an appointment conversation about the remembered symptoms, in its session.
    assert sid == session_for(b)
    assert convs.said == [("grandma", "a rash. still itchy and spreading", session_for(b))]
    assert fus.open_for("grandma") is None
