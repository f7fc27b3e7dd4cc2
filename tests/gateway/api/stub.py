"""A small in-memory Backend for driving the real FastAPI app (real auth, real middleware)
without a broker: canned trajectories, memory and events shaped like the gateway's."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from gateway.api.server import create_app
from gateway.base.metrics import LatencyHistogram
from gateway.household.model import Household, load_household
from gateway.monitor.assess import assess_request

ROOT = Path(__file__).resolve().parents[3]
ADMIN = "admin-token-api-tests-0123456789abcdef"
FAMILY = "family-token-api-tests-0123456789abcdef"
VIEWER = "viewer-token-api-tests-0123456789abcdef"
AUTH = {
    "admin": {"Authorization": f"Bearer {ADMIN}"},
    "family": {"Authorization": f"Bearer {FAMILY}"},
    "viewer": {"Authorization": f"Bearer {VIEWER}"},
}

SYMPTOM = "crushing chest pain spreading to my left arm"
PHONE = "+447700900901"
MAPS = "https://maps.google.com/?q=51.50720,-0.12760"

# An appointment run as the assistant stores it (brief format, gateway envelope).
APPOINTMENT_RUN: dict[str, Any] = {
    "run_id": "run-appt-1",
    "person": "dad",
    "category": "general",
    "status": "completed",
    "started_at": 1_780_000_000.0,
    "updated_at": 1_780_000_030.0,
    "steps": 5,
    "trajectory": {
        "category": "general",
        "interaction_trajectory": [
            {"from": "system", "value": {"user_details": {
                "user_id": "dad", "name": "Jon Lopez", "timestamp": "2026-05-02T10:00:00"}}},
            {"from": "user", "value": f"I have {SYMPTOM} when I climb stairs"},
            {"from": "planner", "value": {
                "reason": f"The user reports {SYMPTOM}; check whether this happened before.",
                "action": "Use retrieve_past_complaints for similar complaints."}},
            {"from": "caller", "value": {"tool": "retrieve_past_complaints",
                                         "parameters": {"user_id": "dad", "symptoms": SYMPTOM}}},
            {"from": "observation", "value": {"result": [
                {"date": "2026-01-03", "symptoms": "tight chest on exertion"}]}},
            {"from": "planner", "value": {"reason": "Ask when the user is free.",
                                          "action": "Ask the user for a date."}},
            {"from": "caller", "value": {"tool": "get_input_from_user", "parameters": {
                "user_id": "dad", "questions": "Which day suits you?"}}},
            {"from": "observation", "value": {"result": "Monday, and my chest hurts at night"}},
            {"from": "planner", "value": {"reason": "Book the cardiologist.",
                                          "action": "Call confirm_appointment."}},
            {"from": "caller", "value": {"tool": "confirm_appointment", "parameters": {
                "user_id": "dad", "specialist_id": "CARD-101",
                "appointment_time_date": "10:00-10:30, 04/05/2026"}}},
            {"from": "observation", "value": {"result": True}},
            {"from": "planner", "value": {"reason": "Done.", "action": "<END>"}},
        ],
    },
}  # fmt: skip

# A hard SOS run: a location fix, the ambulance's phone, a text with a maps link.
SOS_RUN: dict[str, Any] = {
    "run_id": "run-sos-1",
    "person": "grandma",
    "category": "hard_sos",
    "status": "completed",
    "started_at": 1_780_000_100.0,
    "updated_at": 1_780_000_101.0,
    "steps": 4,
    "trajectory": {
        "category": "hard_sos",
        "interaction_trajectory": [
            {"from": "system", "value": {"user_details": {
                "user_id": "grandma", "name": "Maria Lopez", "timestamp": "2026-05-02T03:41:00"}}},
            {"from": "user", "value": "SOS pressed"},
            {"from": "planner", "value": {"reason": "Find the user.", "action": "Call get_location."}},
            {"from": "caller", "value": {"tool": "get_location", "parameters": {}}},
            {"from": "observation", "value": {"result": {"latitude": 51.5072, "longitude": -0.1276}}},
            {"from": "planner", "value": {"reason": "Nearest ambulance.",
                                          "action": "Call search_ambulance."}},
            {"from": "caller", "value": {"tool": "search_ambulance", "parameters": {
                "location": {"latitude": 51.5072, "longitude": -0.1276}}}},
            {"from": "observation", "value": {"result": {"ambulance_id": "AMB-central",
                                                         "phone_no": PHONE}}},
            {"from": "planner", "value": {"reason": "Text the ambulance.",
                                          "action": "Call send_message."}},
            {"from": "caller", "value": {"tool": "send_message", "parameters": {
                "text": f"EMERGENCY: Maria Lopez (user ID grandma). Location: 51.50720, "
                        f"-0.12760 ({MAPS}). Call back on 020 7946 0958.",
                "phone_no": PHONE}}},
            {"from": "observation", "value": {"result": True}},
            {"from": "planner", "value": {"reason": "Done.", "action": "<END>"}},
        ],
    },
}  # fmt: skip

MEMORY: dict[str, Any] = {
    "complaints": [{"date": "2026-05-02", "symptoms": SYMPTOM}],
    "bookings": [{"id": "b1", "specialist_id": "CARD-101", "start": "2026-05-04T10:00:00",
                  "end": "2026-05-04T10:30:00", "slot": "10:00-10:30, 04/05/2026",
                  "status": "booked"}],
    "appointment_history": [{"specialist_id": "CARD-101", "status": "booked",
                             "appointment_time_date": "10:00-10:30, 04/05/2026",
                             "symptoms": SYMPTOM}],
    "follow_ups": [{"method": "call", "next_steps": f"ask about the {SYMPTOM}",
                    "symptoms": SYMPTOM, "due": "2026-05-09"}],
}  # fmt: skip

EVENTS: list[dict[str, Any]] = [
    {"type": "hard_sos", "ts": "2026-05-02T03:41:00.000Z", "person": "grandma", "id": "e1",
     "run_id": "run-sos-1", "trigger": "button", "ambulance_id": "AMB-central",
     "location": {"latitude": 51.5072, "longitude": -0.1276}},
    {"type": "sos_acknowledged", "ts": "2026-05-02T03:45:00.000Z", "person": "grandma",
     "id": "e2", "by": "sms:Ana Lopez (+447700900201)"},
]  # fmt: skip


class StubLadder:
    def __init__(self) -> None:
        self.acks: list[tuple[str, str]] = []

    async def ack(self, person: str, by: str) -> bool:
        self.acks.append((person, by))
        return True

    async def ack_by_sms(self, phone: str, body: str) -> str | None:
        return None

    def status(self, person: str) -> dict[str, Any] | None:
        return {"person": person, "state": "waiting"}


class StubBackend:
    """Implements gateway.api.deps.Backend with canned data."""

    def __init__(self) -> None:
        self.household: Household = load_household(ROOT / "examples" / "household.yaml")
        self.meds = None
        self.reports = None
        self.ladder = StubLadder()
        self.reading_latency = LatencyHistogram()
        self.sos_latency = LatencyHistogram()
        self.tool_metrics: Callable[[], Mapping[str, Mapping[str, float]]] | None = None
        self.cleared: list[tuple[str, str]] = []
        self.said: list[str] = []
        self._listeners: dict[str, Callable[[dict[str, Any]], None]] = {}

    def ready(self) -> Mapping[str, bool]:
        return {"store": True}

    def texts_mode(self) -> str:
        return "twilio"

    def components(self) -> Mapping[str, bool]:
        return {"store": True, "tsdb_writer": False}

    def assess(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return assess_request(body, self.household)

    def person_view(self, person_id: str) -> dict[str, Any]:
        latest = {"heart_rate": 72, "latitude": 51.5072, "longitude": -0.1276}
        return {"id": person_id, "devices": [{"id": "watch", "latest": latest}]}

    def device_views(self) -> list[dict[str, Any]]:
        return []

    def events(
        self,
        *,
        person: str | None,
        types: Sequence[str] | None,
        since: float | None,
        until: float | None,
        limit: int,
    ) -> list[dict[str, Any]]:
        return copy.deepcopy(EVENTS)

    def readings(
        self, person: str, *, since: float | None, until: float | None, limit: int
    ) -> list[dict[str, Any]]:
        return [{"person": person, "heart_rate": 72, "latitude": 51.5072, "longitude": -0.12}]

    def trajectories(
        self, *, person: str | None, category: str | None, limit: int
    ) -> list[dict[str, Any]]:
        runs = [APPOINTMENT_RUN, SOS_RUN]
        return [{k: v for k, v in r.items() if k != "trajectory"} for r in runs]

    def trajectory(self, run_id: str) -> dict[str, Any] | None:
        for run in (APPOINTMENT_RUN, SOS_RUN):
            if run["run_id"] == run_id:
                return copy.deepcopy(run)
        return None

    async def sos_start(self, person: str) -> bool:
        return True

    async def chat_say(self, person: str, text: str, session_id: str | None) -> str | None:
        self.said.append(text)
        sid = session_id or "s1"
        fn = self._listeners.get(person)
        if fn is not None:
            fn({"text": "When are you free?", "session_id": sid, "expects_answer": True})
        return sid

    def chat_listen(
        self, person: str, fn: Callable[[dict[str, Any]], None]
    ) -> Callable[[], None] | None:
        self._listeners[person] = fn
        return lambda: self._listeners.pop(person, None) and None

    def chat_open(self, session_id: str) -> bool:
        return True

    def text_delivery(self, provider_id: str, status: str) -> bool:
        return False

    def memory(self, person: str) -> dict[str, Any] | None:
        return copy.deepcopy(MEMORY)

    async def sos_end(self, person: str) -> bool:
        return True

    async def clear_alerts(self, person: str, by: str) -> int:
        self.cleared.append((person, by))
        return 1

    def stats(self) -> dict[str, Any]:
        return {"ok": True}


def make_app(backend: StubBackend | None = None, **kw: Any) -> FastAPI:
    """The real app over the stub; rate limits off unless a test sets them."""
    kw.setdefault("rate_limit", "off")
    return create_app(
        backend or StubBackend(),
        admin_token=ADMIN,
        family_tokens=[FAMILY],
        viewer_tokens=[VIEWER],
        **kw,
    )
