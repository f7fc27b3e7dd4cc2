"""In-memory stand-ins shared by the agent tests (the real MQTT/Twilio paths are tested by
the gateway's own suites)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gateway.base.errors import NotificationError
from gateway.household.model import Household

HOME = (51.5072, -0.1276)  # everyone's home in HOUSEHOLD; AMB-west is nearest to it

HOUSEHOLD_DATA: dict[str, Any] = {
    "timezone": "Europe/London",
    "persons": [
        {
            "id": "alice",
            "name": "Alice Moreau",
            "birth_date": "1950-04-01",
            "sex": "female",
            "location": {"latitude": HOME[0], "longitude": HOME[1]},
            "devices": ["watch-alice"],
            "emergency_contacts": [
                {"name": "Ana Moreau", "phone": "+447700900201"},
                {"name": "Tom Moreau", "phone": "+447700900202"},
            ],
        },
        {
            "id": "bob",
            "name": "Bob Stone",
            "birth_date": "1960-01-01",
            "sex": "male",
            "location": {"latitude": HOME[0], "longitude": HOME[1]},
            "emergency_contacts": [{"name": "Ana Moreau", "phone": "+447700900201"}],
        },
        {
            "id": "carol",
            "name": "Carol Quinn",
            "birth_date": "1970-01-01",
            "sex": "female",
            "location": {"latitude": HOME[0], "longitude": HOME[1]},
        },
    ],
    "ambulances": [
        {"id": "AMB-central", "phone": "+447700900901",
         "location": {"latitude": 51.5155, "longitude": -0.0922}},
        {"id": "AMB-west", "phone": "+447700900902",
         "location": {"latitude": 51.4975, "longitude": -0.1357}},
        {"id": "AMB-north", "phone": "+447700900903",
         "location": {"latitude": 51.5560, "longitude": -0.1400}},
    ],
}  # fmt: skip
ALICE_CONTACTS = ("+447700900201", "+447700900202")
AMB_WEST = "+447700900902"
AMB_NORTH = "+447700900903"


def household(**overrides: Any) -> Household:
    return Household.model_validate({**HOUSEHOLD_DATA, **overrides})


@dataclass
class Published:
    topic: str
    payload: dict[str, Any]
    qos: int


@dataclass
class RecordingPublisher:
    messages: list[Published] = field(default_factory=list)

    async def publish(
        self,
        topic: str,
        payload: dict[str, Any] | str | bytes,
        *,
        qos: int = 1,
        retain: bool = False,
    ) -> None:
        body = json.loads(payload) if isinstance(payload, str | bytes) else dict(payload)
        self.messages.append(Published(topic, body, qos))

    def texts(self) -> list[str]:
        return [m.payload["text"] for m in self.messages]


@dataclass(frozen=True)
class Text:
    id: str
    to: str
    body: str
    key: str
    person: str
    purpose: str


@dataclass
class FakeTextQueue:
    """Records every submit; idempotent on key like the real durable queue."""

    by_key: dict[str, Text] = field(default_factory=dict)
    submits: list[str] = field(default_factory=list)  # keys, in submit order
    fail_once: set[str] = field(default_factory=set)  # phones whose next submit fails

    def submit(self, *, to: str, body: str, key: str, person: str, purpose: str) -> str:
        self.submits.append(key)
        if to in self.fail_once:
            self.fail_once.discard(to)
            raise NotificationError("provider down", transient=True)
        if key not in self.by_key:
            self.by_key[key] = Text(f"m{len(self.by_key)}", to, body, key, person, purpose)
        return self.by_key[key].id

    @property
    def sent(self) -> list[Text]:
        return list(self.by_key.values())

    def to(self, phone: str) -> list[Text]:
        return [t for t in self.by_key.values() if t.to == phone]
