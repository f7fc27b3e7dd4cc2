"""Item 2: the redaction functions (pure) on real-shaped trajectories, memory and events."""

from __future__ import annotations

import copy
import json

import pytest

from gateway.api import redact
from gateway.api.redact import REDACTED, scrub_text
from tests.api.stub import APPOINTMENT_RUN, EVENTS, MAPS, MEMORY, PHONE, SOS_RUN, SYMPTOM


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
