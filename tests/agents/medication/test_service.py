"""The medication service: propose -> confirm -> jobs -> reminder -> answer -> adherence, and a
missed dose telling the family (recording publisher and text queue; controllable clock)."""

from __future__ import annotations

import json
import time
from datetime import date, datetime
from datetime import time as dtime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agents.medication.prescription import parse_prescription
from agents.medication.service import MedicationError, MedicationService
from gateway.base.clock import ManualClock
from gateway.base.db import Database
from gateway.contract.values import Event
from gateway.household.model import load_household

ROOT = Path(__file__).resolve().parents[3]
LONDON = ZoneInfo("Europe/London")


class Pub:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    async def publish(
        self, topic: str, payload: Any, *, qos: int = 1, retain: bool = False
    ) -> None:
        self.sent.append((topic, json.loads(payload) if isinstance(payload, str) else payload))


class Texts:
    def __init__(self) -> None:
        self.sent: dict[str, tuple[str, str]] = {}

    def submit(self, *, to: str, body: str, key: str, person: str, purpose: str) -> str:
        self.sent.setdefault(key, (to, body))
        return key


def today(clock: ManualClock) -> date:
    return datetime.fromtimestamp(clock.now(), LONDON).date()


@pytest.fixture
async def svc(tmp_path: Path) -> Any:
    hh = load_household(ROOT / "examples" / "household.yaml")
    # apscheduler computes next runs from the wall clock, so the service clock starts at now.
    clock = ManualClock(time.time())
    events: list[Event] = []

    async def emit(e: Event) -> None:
        events.append(e)

    pub, texts = Pub(), Texts()
    s = MedicationService(Database(tmp_path / "m.db"), pub, texts, hh, clock, emit,
                          missed_after_s=1800, snooze_s=600)  # fmt: skip
    await s.start()
    s.scheduler.pause()  # the test drives the doses; no wall-clock firing
    yield s, clock, pub, texts, events
    await s.stop()


async def test_confirmed_schedule_reminds_and_counts(svc: Any) -> None:
    s, clock, pub, _, _ = svc
    rx_id, parsed = await s.propose(
        "grandma", "Metformin 500 mg twice daily after meals for 30 days"
    )
    assert rx_id is not None and parsed.ok
    assert s.next_doses("grandma", rx_id) == []  # nothing until the user confirms
    out = await s.confirm("grandma", rx_id)
    assert sorted(t[11:16] for t in out["schedule"]) == ["08:30", "19:30"]
    dose = await s.fire(rx_id, "grandma", "metformin")
    topic, note = pub.sent[-1]
    assert topic == "health/grandma/notify" and note["kind"] == "reminder"
    assert note["prompt_id"] == dose and "Metformin 500 mg (after meals)" in note["text"]
    assert await s.on_answer("grandma", dose, "taken")
    assert not await s.on_answer("dad", dose, "taken")  # not his dose
    assert not await s.on_answer("grandma", dose, "maybe")
    adh = s.adherence("grandma", today(clock))
    assert adh["metformin"]["taken"] == 1 and adh["metformin"]["rate"] == 1.0


async def test_missed_dose_tells_the_family_once(svc: Any) -> None:
    s, clock, _, texts, events = svc
    rx_id, _ = await s.propose("grandma", "Bisoprolol 5 mg OD")
    await s.confirm("grandma", rx_id)
    dose = await s.fire(rx_id, "grandma", "bisoprolol")
    day = today(clock)  # the dose's local day (the clock moves on below)
    await s.tick()
    assert texts.sent == {}
    clock.advance(1801)
    await s.tick()
    await s.tick()
    assert [e.type for e in events] == ["medication_missed"]
    assert events[0].data["dose_id"] == dose
    assert sorted(to for to, _ in texts.sent.values()) == ["+447700900201", "+447700900202"]
    assert all("Bisoprolol" in body for _, body in texts.sent.values())
    assert s.adherence("grandma", day)["bisoprolol"]["missed"] == 1


async def test_snooze_reminds_again(svc: Any) -> None:
    s, clock, pub, _, _ = svc
    rx_id, _ = await s.propose("grandma", "Bisoprolol 5 mg OD")
    await s.confirm("grandma", rx_id)
    dose = await s.fire(rx_id, "grandma", "bisoprolol")
    assert await s.on_answer("grandma", dose, "snooze")
    n = len(pub.sent)
    clock.advance(601)
    await s.tick()
    assert len(pub.sent) == n + 1 and pub.sent[-1][1]["prompt_id"] == dose


async def test_unclear_prescriptions_are_not_scheduled(svc: Any) -> None:
    s, *_ = svc
    rx_id, parsed = await s.propose("grandma", "Aspirin 75mg")
    assert rx_id is None and parsed.questions
    with pytest.raises(MedicationError):
        await s.propose("nobody", "Aspirin 75 mg OD")
    with pytest.raises(MedicationError):
        await s.confirm("grandma", "missing")


async def test_jobs_survive_a_restart(svc: Any, tmp_path: Path) -> None:
    s, clock, pub, texts, _ = svc
    rx_id, _ = await s.propose("grandma", "Amoxicillin 250mg TDS x 7 days")
    await s.confirm("grandma", rx_id)
    before = s.next_doses("grandma", rx_id)
    assert len(before) == 3
    await s.stop()

    async def emit(e: Event) -> None:
        pass

    again = MedicationService(Database(tmp_path / "m.db"), pub, texts,
                              load_household(ROOT / "examples" / "household.yaml"), clock, emit)  # fmt: skip
    await again.start()
    again.scheduler.pause()
    try:
        assert again.next_doses("grandma", rx_id) == before
        assert again.prescriptions("grandma")[0]["status"] == "active"
        assert again.stop_prescription("grandma", rx_id)
        assert again.next_doses("grandma", rx_id) == []
    finally:
        await again.stop()


async def test_over_the_maximum_tells_the_family(svc: Any) -> None:
    s, _, pub, texts, events = svc
    rx_id, parsed = await s.propose("grandma", "Paracetamol 1 g every 4 hours")
    assert parsed.warnings  # shown before confirming
    out = await s.confirm("grandma", rx_id)
    assert "6000 mg" in out["warnings"][0]
    assert [e.type for e in events] == ["medication_warning"]
    assert sorted(to for to, _ in texts.sent.values()) == ["+447700900201", "+447700900202"]
    # Reported intake: under the maximum nothing happens; over it, the wearer and the family.
    first = await s.record_intake("dad", "Ibuprofen", 800)
    assert first["warning"] is None and first["today_mg"] == 800
    over = await s.record_intake("dad", "ibuprofen", 600)
    assert over["today_mg"] == 1400 and "1200 mg" in over["warning"]
    assert pub.sent[-1][0] == "health/dad/notify" and "Careful" in pub.sent[-1][1]["text"]
    assert any("Medication warning for Jon Smith" in body for _, body in texts.sent.values())


async def test_the_model_reads_what_the_parser_cannot_and_is_checked(tmp_path: Path) -> None:
    from tests.llm_double import ScriptedModel

    hh = load_household(ROOT / "examples" / "household.yaml")
    clock = ManualClock(time.time())

    async def emit(e: Event) -> None:
        pass

    good = {
        "medicine": "Metformin",
        "dose_amount": 500,
        "dose_unit": "mg",
        "times_per_day": 2,
        "duration_days": None,
    }
    invented = {**good, "dose_amount": 850}
    model = ScriptedModel([good, invented])
    await model.start()
    s = MedicationService(Database(tmp_path / "m.db"), Pub(), Texts(), hh, clock, emit, model=model)
    await s.start()
    s.scheduler.pause()
    try:
        text = "Metformin 500 mg two per day"
        assert parse_prescription(text).prescription is None  # the parser asks
        rx_id, result = await s.propose("grandma", text)
        assert rx_id is not None and result.prescription is not None
        assert result.prescription.times == (dtime(8), dtime(20))
        assert "please check" in result.prescription.summary()  # the user confirms it
        out = await s.confirm("grandma", rx_id)
        assert sorted(t[11:16] for t in out["schedule"]) == ["08:00", "20:00"]
        # A reading with a number that is not in the text is refused: the question stays.
        rx2, result2 = await s.propose("grandma", text)
        assert rx2 is None and result2.questions
    finally:
        await s.stop()
