"""The medication service with the person's profile: refusals and warnings at propose and
confirm, totals over a rolling 24 hours across reported products and taken doses, weekly
schedules (jobs only on their day, surviving a restart) and adherence on days off."""

from __future__ import annotations

import time
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agents.medication.service import MedicationError, MedicationService
from gateway.base.clock import ManualClock
from gateway.base.db import Database
from gateway.contract.values import Event
from gateway.household.model import Household, load_household
from tests.agents.medication.test_service import Pub, Texts

LONDON = ZoneInfo("Europe/London")
TODAY = date.today()


def household(tmp_path: Path) -> Household:
    kid_born = TODAY.replace(year=TODAY.year - 10, day=1)
    body = f"""
timezone: Europe/London
persons:
  - id: gran
    name: Gran
    birth_date: 1940-01-01
    sex: female
    location: {{latitude: 51.5, longitude: -0.1}}
    weight_kg: 45
    conditions: [Chronic kidney disease, hypertension]
    medications: [warfarin 5 mg]
    emergency_contacts: [{{name: Ana, phone: "+447700900201"}}]
  - id: kid
    name: Kid
    birth_date: {kid_born.isoformat()}
    sex: male
    location: {{latitude: 51.5, longitude: -0.1}}
    emergency_contacts: [{{name: Ana, phone: "+447700900201"}}]
  - id: dad
    name: Dad
    birth_date: 1980-05-05
    sex: male
    location: {{latitude: 51.5, longitude: -0.1}}
    emergency_contacts: [{{name: Ana, phone: "+447700900201"}}]
"""
    path = tmp_path / "household.yaml"
    path.write_text(body)
    return load_household(path)


async def make(tmp_path: Path, clock: ManualClock, events: list[Event]) -> MedicationService:
    async def emit(e: Event) -> None:
        events.append(e)

    s = MedicationService(Database(tmp_path / "m.db"), Pub(), Texts(), household(tmp_path),
                          clock, emit)  # fmt: skip
    await s.start()
    s.scheduler.pause()  # the tests fire doses themselves
    return s


@pytest.fixture
async def svc(tmp_path: Path) -> Any:
    # apscheduler computes next runs from the wall clock: the service clock starts at now.
    clock = ManualClock(time.time())
    events: list[Event] = []
    s = await make(tmp_path, clock, events)
    yield s, clock, events
    await s.stop()


async def test_refusals_make_no_proposal(svc: Any) -> None:
    s, _, _ = svc
    rx_id, r = await s.propose("kid", "Aspirin 300 mg every 4 hours when required")
    assert rx_id is None and r.refused and "Reye's syndrome" in r.questions[0]
    rx_id, r = await s.propose("dad", "Methotrexate 10 mg once daily")
    assert rx_id is None and r.refused and "fatal" in r.questions[0]
    assert s.prescriptions("kid") == [] and s.prescriptions("dad") == []
    rx_id, r = await s.propose("dad", "Methotrexate 10 mg once a week on Monday")
    assert rx_id is not None and "once a week on Monday" in r.prescription.summary()


async def test_profile_warnings_at_propose_and_to_the_family_at_confirm(svc: Any) -> None:
    s, _, events = svc
    rx_id, r = await s.propose("gran", "Ibuprofen 200 mg TDS")
    says = " ".join(r.warnings)
    for part in ("kidney disease", "high blood pressure", "warfarin", "65 or over"):
        assert part in says
    out = await s.confirm("gran", rx_id)
    assert out["warnings"] == list(r.warnings)
    assert [e.type for e in events] == ["medication_warning"]
    texts = s._texts.sent
    assert any("Medication warning for Gran" in body for _, body in texts.values())
    # Paracetamol for a 45 kg person: the lowered limit and why.
    _, r = await s.propose("gran", "Paracetamol 1 g QDS")
    assert any("maximum of 2700 mg" in w and "weight under 50 kg" in w for w in r.warnings)


async def test_totals_include_the_other_active_prescriptions(svc: Any) -> None:
    s, _, _ = svc
    rx_id, _ = await s.propose("dad", "Co-codamol 30/500 2 tablets QDS")
    await s.confirm("dad", rx_id)
    _, r = await s.propose("dad", "Paracetamol 500 mg BD")
    assert any("5000 mg in 24 hours together with co-codamol 30/500" in w for w in r.warnings)
    # Confirming the second one: the first is one of its "others", not itself.
    rx2, _ = await s.propose("dad", "Paracetamol 500 mg BD")
    out = await s.confirm("dad", rx2)
    assert any("together with co-codamol 30/500" in w for w in out["warnings"])


async def test_intakes_over_a_rolling_24_hours_across_products(svc: Any) -> None:
    s, clock, events = svc
    for _ in range(4):  # 2 x co-codamol 30/500 four times: 4 g of paracetamol, at the limit
        got = await s.record_intake("dad", "2 x co-codamol 30/500", 1000)
        assert got["warning"] is None
        clock.advance(4 * 3600)
    assert got["last_24h_mg"] == {"codeine": 240, "paracetamol": 4000}
    got = await s.record_intake("dad", "Lemsip Max", 1000)  # 16 h after the first
    assert got["last_24h_mg"]["paracetamol"] == 5000
    assert got["warning"].startswith("paracetamol: 5000 mg in the last 24 hours (from "
                                     "2 x co-codamol 30/500, lemsip max)")  # fmt: skip
    assert [e.type for e in events] == ["medication_warning"]
    # 24 hours after the first intake it has left the window: 3 x 1 g + 1 g + 0.5 g.
    clock.advance(8 * 3600 + 1)
    got = await s.record_intake("dad", "Panadol", 500)
    assert got["last_24h_mg"]["paracetamol"] == 4500 and "4500 mg" in got["warning"]
    clock.advance(4 * 3600)  # and the second one too: 3.5 g
    got = await s.record_intake("dad", "ibuprofen", 200)
    assert got["last_24h_mg"]["paracetamol"] == 3500 and got["warning"] is None


async def test_taken_scheduled_doses_count_towards_the_total(svc: Any) -> None:
    s, _, _ = svc
    rx_id, _ = await s.propose("dad", "Paracetamol 1 g QDS")
    await s.confirm("dad", rx_id)
    for i in range(3):
        dose = await s.fire(rx_id, "dad", "paracetamol", i)
        assert await s.on_answer("dad", dose, "taken")
        s._clock.advance(120)  # a different minute: a different dose
    skipped = await s.fire(rx_id, "dad", "paracetamol", 3)
    assert await s.on_answer("dad", skipped, "skip")  # not taken: not counted
    got = await s.record_intake("dad", "Lemsip Max", 1000)
    assert got["last_24h_mg"]["paracetamol"] == 4000 and got["warning"] is None
    got = await s.record_intake("dad", "ibuprofen", 400)
    assert got["warning"] is None
    got = await s.record_intake("dad", "Calpol Six Plus", 250)
    assert "paracetamol: 4250 mg in the last 24 hours" in got["warning"]


async def test_intake_nsaid_and_child_warnings(svc: Any) -> None:
    s, _, _ = svc
    got = await s.record_intake("gran", "Nurofen", 200)
    assert any("kidney disease" in w for w in got["warnings"])
    got = await s.record_intake("kid", "Aspirin", 300)
    assert "Reye's syndrome" in got["warning"] and "NHS 111" in got["warning"]


async def test_confirm_checks_again(svc: Any) -> None:
    s, _, _ = svc
    rx_id, _ = await s.propose("dad", "Aspirin 300 mg QDS")
    # The household changes before it is confirmed (here: the proposal is moved to the child).
    with s._db.tx() as c:
        c.execute("UPDATE prescriptions SET person = 'kid' WHERE id = ?", (rx_id,))
    with pytest.raises(MedicationError):
        await s.confirm("kid", rx_id)
    assert s.next_doses("kid", rx_id) == []


async def test_weekly_jobs_run_only_on_their_day_and_survive_a_restart(
    svc: Any, tmp_path: Path
) -> None:
    s, clock, _ = svc
    today = datetime.fromtimestamp(clock.now(), LONDON).date()
    day = (today + timedelta(days=2)).strftime("%A")
    rx_id, r = await s.propose("dad", f"Methotrexate 10 mg once a week on {day} at 9am")
    assert f"once a week on {day} at 09:00" in r.prescription.summary()
    out = await s.confirm("dad", rx_id)
    (nxt,) = out["schedule"]
    assert datetime.fromisoformat(nxt).date() == today + timedelta(days=2)
    fortnight, _ = await s.propose("dad", f"Dulaglutide 1.5 mg every 2 weeks on {day}")
    (first,) = (await s.confirm("dad", fortnight))["schedule"]
    assert datetime.fromisoformat(first).date() == today + timedelta(days=2)
    # Adherence: nothing expected today, one dose on its day.
    adh = s.adherence("dad", today)
    assert "methotrexate" not in adh and "dulaglutide" not in adh
    assert s.adherence("dad", today + timedelta(days=2))["methotrexate"]["expected"] == 1
    assert "dulaglutide" not in s.adherence("dad", today + timedelta(days=9))
    assert s.adherence("dad", today + timedelta(days=16))["dulaglutide"]["expected"] == 1
    await s.stop()
    again = await make(tmp_path, clock, [])
    try:
        assert again.next_doses("dad", rx_id) == [nxt]
        assert again.next_doses("dad", fortnight) == [first]
    finally:
        await again.stop()


async def test_per_time_doses_in_the_reminders(svc: Any) -> None:
    s, _, _ = svc
    rx_id, r = await s.propose("dad", "Prednisolone 40 mg in the morning and 20 mg at lunchtime")
    assert "40 mg at 08:00 and 20 mg at 12:00 every day (60 mg a day)" in r.prescription.summary()
    out = await s.confirm("dad", rx_id)
    assert sorted(t[11:16] for t in out["schedule"]) == ["08:00", "12:00"]
    await s.fire(rx_id, "dad", "prednisolone", 1)
    assert "Time for your Prednisolone 20 mg." in s._pub.sent[-1][1]["text"]
    await s.fire(rx_id, "dad", "prednisolone", 0)
    assert "Time for your Prednisolone 40 mg." in s._pub.sent[-1][1]["text"]
