"""Item 2: the redaction functions (pure) on real-shaped trajectories, memory and events."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from agents.playbooks import steps as sos_playbook
from agents.playbooks.ladder import SosLadder
from agents.playbooks.soft_texts import clinician_text, family_text, unanswered_text
from agents.tools.registry import ToolRegistry
from gateway.api import redact
from gateway.api.redact import REDACTED, scrub_text
from gateway.base.clock import ManualClock
from gateway.base.db import Database
from gateway.contract.values import Event
from gateway.household.model import Household, load_household
from tests.gateway.api.stub import (
    APPOINTMENT_RUN,
    EVENTS,
    MAPS,
    MEMORY,
    PHONE,
    ROOT,
    SOS_RUN,
    SYMPTOM,
)


@pytest.mark.parametrize(
    "phone",
    [
        "+447700900901",
        "+44 20 7946 0958",
        "+1 (555) 123-4567",
        "+1-555-123-4567",
        "020 7946 0958",
        "(020) 7946-0958",
        "07700 900123",
        "07700900123",
        "(555) 123-4567",
        "555-123-4567",
        "555.123.4567",
    ],
)
def test_phone_formats(phone: str) -> None:
    out = scrub_text(f"call {phone} now")
    assert out == "call [phone] now", out


@pytest.mark.parametrize(
    "place",
    [
        "51.50720, -0.12760",
        "51.5072,-0.1276",
        "-33.8688 151.2093",
        "51.5072° N, 0.1276° W",
        MAPS,
        "https://www.google.com/maps/place/51.5,-0.12",
        "https://www.openstreetmap.org/?mlat=51.5072&mlon=-0.1276",
        "geo:51.5072,-0.1276",
    ],
)
def test_places(place: str) -> None:
    out = scrub_text(f"at {place} now")
    assert out == "at [location] now", out


@pytest.mark.parametrize(
    "keep",
    [
        "2026-05-02T03:41:00.000Z",
        "10:00-10:30, 04/05/2026",
        "run 4f3a9c0e2b7d41a8b0c3d2e1f0a9b8c7",
        "heart rate 124 bpm, SpO2 87%, temperature 38.4",
        "CARD-101",
        "AMB-central",
        "NEWS2 7 (high)",
    ],
)
def test_ordinary_text_is_kept(keep: str) -> None:
    assert scrub_text(keep) == keep


def test_appointment_trajectory() -> None:
    before = copy.deepcopy(APPOINTMENT_RUN)
    out = redact.trajectory_record(APPOINTMENT_RUN)
    assert before == APPOINTMENT_RUN  # pure: the input is untouched
    text = json.dumps(out)
    assert "chest" not in text and "stairs" not in text
    states = out["trajectory"]["interaction_trajectory"]
    assert states[1] == {"from": "user", "value": REDACTED}
    assert states[2]["value"]["reason"] == REDACTED
    assert states[2]["value"]["action"].startswith("Use retrieve_past_complaints")
    assert states[3]["value"]["parameters"] == {"user_id": "dad", "symptoms": REDACTED}
    assert states[4]["value"]["result"] == [{"date": "2026-01-03", "symptoms": REDACTED}]
    assert states[7]["value"]["result"] == REDACTED  # the user's own answer
    # What happened stays readable: the tools, the booking, the ids and dates.
    assert [s["value"]["tool"] for s in states if s["from"] == "caller"] == [
        "retrieve_past_complaints", "get_input_from_user", "confirm_appointment",
    ]  # fmt: skip
    assert states[9]["value"]["parameters"]["specialist_id"] == "CARD-101"
    assert states[9]["value"]["parameters"]["appointment_time_date"] == "10:00-10:30, 04/05/2026"
    assert out["status"] == "completed" and out["category"] == "general"
    assert states[0]["value"]["user_details"]["user_id"] == "dad"


def test_sos_trajectory() -> None:
    out = redact.trajectory_record(SOS_RUN)
    text = json.dumps(out)
    for leak in (PHONE, "51.50", "-0.127", "51.5072", "maps.google", "7946"):
        assert leak not in text, leak
    states = out["trajectory"]["interaction_trajectory"]
    assert states[4]["value"]["result"] == {"latitude": REDACTED, "longitude": REDACTED}
    assert states[6]["value"]["parameters"] == {"location": REDACTED}
    assert states[7]["value"]["result"] == {"ambulance_id": "AMB-central", "phone_no": REDACTED}
    assert states[9]["value"]["parameters"]["phone_no"] == REDACTED
    assert states[9]["value"]["tool"] == "send_message"


def test_memory_keeps_dates_and_bookings() -> None:
    out = redact.memory(MEMORY)
    assert SYMPTOM not in json.dumps(out)
    assert out["complaints"] == [{"date": "2026-05-02", "symptoms": REDACTED}]
    assert out["bookings"] == MEMORY["bookings"]
    assert out["appointment_history"][0]["symptoms"] == REDACTED
    assert out["appointment_history"][0]["specialist_id"] == "CARD-101"
    assert out["follow_ups"][0]["next_steps"] == REDACTED
    assert out["follow_ups"][0]["due"] == "2026-05-09"


def test_events() -> None:
    out = redact.events(EVENTS)
    assert out[0]["location"] == REDACTED and out[0]["ambulance_id"] == "AMB-central"
    assert out[1]["by"] == "sms:Ana Lopez ([phone])"
    assert out[0]["type"] == "hard_sos" and out[0]["ts"] == EVENTS[0]["ts"]


def test_absent_values_stay_absent() -> None:
    # A reading without a fix keeps null (no fix), not a marker suggesting there was one.
    assert redact.records([{"latitude": None, "longitude": None, "spo2": 97}]) == [
        {"latitude": None, "longitude": None, "spo2": 97}
    ]


def test_unexpected_shapes_are_still_scrubbed() -> None:
    odd = {"trajectory": ["call +447700900901", {"phone": "x", "symptoms": "cough"}]}
    out = redact.trajectory_record(odd)
    assert out == {"trajectory": ["call [phone]", {"phone": REDACTED, "symptoms": REDACTED}]}


# --- the gateway's own text formats -----------------------------------------------------------

ABNORMAL = {
    "spo2": {"value": 87.0, "unit": "%", "class": "low", "range": [94, 100]},
    "heart_rate": {"value": 124.0, "unit": "bpm", "class": "high", "range": [51, 90]},
    "temperature_c": {"value": 38.42, "unit": "°C", "class": "high", "range": [36.1, 38.0]},
}
SCORES = {"abnormal": ABNORMAL, "news2": {"total": 7, "level": "high", "complete": True},
          "advice": "Sit upright and use the inhaler."}  # fmt: skip


def _household() -> Household:
    return load_household(ROOT / "examples" / "household.yaml")


def _real_texts(tmp_path: Path) -> list[str]:
    """Texts as the agents build them: the ladder's rungs, the care line's alert and the
    ambulance's SOS text (all carry "Home: lat, lon." or "Location: lat, lon (link)")."""

    async def emit(_: Event) -> None:
        return None

    hh = _household()
    grandma = hh.person("grandma")
    assert grandma is not None
    ladder = SosLadder(
        Database(tmp_path / "safety.db"), ToolRegistry(), hh, ManualClock(), emit,
        lambda _: ("AMB-central", PHONE),
    )  # fmt: skip
    rungs = [r.text for r in ladder.rungs(grandma)]
    where = (grandma.location.latitude, grandma.location.longitude)
    return [*rungs, clinician_text(grandma, SCORES), f"Location: {sos_playbook._maps(where)}"]


def test_real_templates_lose_their_places_and_phones(tmp_path: Path) -> None:
    texts = _real_texts(tmp_path)
    assert len(texts) >= 5 and any(t.endswith("-0.12760.") for t in texts)  # the full stop
    for text in texts:
        out = scrub_text(text)
        for leak in ("51.50", "0.127", "51.5072", "+4477", "maps.google"):
            assert leak not in out, (leak, out)
        assert "[location]" in out
    clinic = scrub_text(texts[-2])
    # The rest of the care line's text is still readable: score, vitals, dates, the contact.
    for kept in ("NEWS2 7 (high)", "oxygen saturation 87%", "heart rate 124 bpm", "temperature 38.4 °C",
                 "born 1944-03-02", "Ana Lopez [phone]", "Home: [location]."):  # fmt: skip
        assert kept in clinic, (kept, clinic)


def test_texts_without_places_are_unchanged() -> None:
    grandma = _household().person("grandma")
    assert grandma is not None
    for text in (
        family_text(grandma, SCORES),
        unanswered_text(grandma, {"summary": "low SpO2 91%"}),
    ):
        assert scrub_text(text) == text  # fmt: skip


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("Home: 51.50720, -0.12760.", "Home: [location]."),
        ("at 51.5072,-0.1276; then", "at [location]; then"),
        ("lat 51.5072 lon -0.1276", "[location]"),
        ("fix: latitude: 51.50720, longitude: -0.12760.", "fix: [location]."),
        ("lat=51.5072&lng=-0.1276", "[location]&[location]"),
        ('{"lat": 51.5072, "lon": -0.1276}', "{[location]}"),
        ("from 447700900123 at 3am", "from [phone] at 3am"),
        ("sms from 15005550006.", "sms from [phone]."),
        ("whatsapp:447700900123", "whatsapp:[phone]"),
        ("tel:+447700900123", "tel:[phone]"),
    ],
)
def test_more_place_and_phone_formats(text: str, want: str) -> None:
    assert scrub_text(text) == want


@pytest.mark.parametrize(
    "keep",
    [
        "NEWS2 7",
        "heart rate 120",
        "SpO2 91%",
        "ts 1780000000 and 1780000000.123 and 1780000000123",  # epoch s, float, ms
        "sent 2026-05-02 03:41:00, took 12.345 s",
        "waited so long 10.5 minutes",
        "London 51.5",
        "temperature 38.4, 37.9 then 37.5.",
        "BP 120/80, weight 71.250 kg",
        "version 1.2.3, build 20260502",
    ],
)
def test_ordinary_numbers_are_kept(keep: str) -> None:
    assert scrub_text(keep) == keep


def test_coordinate_lists_under_any_key() -> None:
    value = {
        "home": [51.5072, -0.1276],
        "point": {"type": "Point", "where": [-0.1276, 51.5072, 35]},  # GeoJSON order, altitude
        "track": [[51.50721, -0.12761], [51.50725, -0.12768]],
        "bp": [120, 80],
        "temps": [38.4, 37.9],
        "range": [36.1, 38.0],
        "flags": [True, False],
    }
    out = redact.records([value])[0]
    assert out["home"] == REDACTED and out["point"]["where"] == REDACTED
    assert out["track"] == [REDACTED, REDACTED]
    assert {k: out[k] for k in ("bp", "temps", "range", "flags")} == {
        k: value[k] for k in ("bp", "temps", "range", "flags")
    }
