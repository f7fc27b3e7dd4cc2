from __future__ import annotations

from typing import Any

import pytest

from agents.tools.registry import (
    ToolContext,
    ToolPermissionError,
    ToolRegistry,
    ToolUpstreamError,
    ToolValidationError,
)
from agents.tools.sos_tools import (
    NoAmbulanceError,
    SosToolDeps,
    build_sos_registry,
    haversine_km,
    text_key,
)
from gateway.base.clock import ManualClock
from gateway.contract.topics import NotifyPayload, format_ts
from gateway.household.model import Household
from tests.agents import (
    ALICE_CONTACTS,
    AMB_WEST,
    HOME,
    FakeTextQueue,
    RecordingPublisher,
    household,
)


class Assignments:
    def __init__(self) -> None:
        self.by_person: dict[str, tuple[str, str]] = {}

    def assigned_ambulance(self, person: str) -> tuple[str, str] | None:
        return self.by_person.get(person)


class Env:
    def __init__(self, hh: Household | None = None) -> None:
        self.publisher = RecordingPublisher()
        self.texts = FakeTextQueue()
        self.latest: dict[str, tuple[float, float]] = {}
        self.journal = Assignments()
        self.audit: list[dict[str, Any]] = []
        self.clock = ManualClock()
        self.reg: ToolRegistry = build_sos_registry(
            SosToolDeps(
                publisher=self.publisher,
                texts=self.texts,
                household=hh or household(),
                location_lookup=self.latest.get,
                journal=self.journal,
                audit=self.audit.append,
                clock=self.clock,
            )
        )
        self.sleeps: list[float] = []

        async def sleep(s: float) -> None:
            self.sleeps.append(s)

        self.reg.sleep = sleep

    async def call(self, tool: str, params: dict[str, Any], **ctx: Any) -> Any:
        base: dict[str, Any] = {"person": "alice", "run_id": "r1", "step": 3}
        c = ToolContext(actor="test", **(base | ctx))
        return await self.reg.call(tool, params, ctx=c)


def amb(aid: str, phone: str, lat: float, lon: float) -> dict[str, Any]:
    return {"id": aid, "phone": phone, "location": {"latitude": lat, "longitude": lon}}


def test_haversine_known_distances() -> None:
    # One degree of longitude on the equator; London to Paris.
    assert haversine_km((0.0, 0.0), (0.0, 1.0)) == pytest.approx(111.195, abs=0.01)
    assert haversine_km((51.5074, -0.1278), (48.8566, 2.3522)) == pytest.approx(343.5, abs=1.0)
    assert haversine_km(HOME, HOME) == 0.0


async def test_search_ambulance_uses_great_circle_distance() -> None:
    # At 60°N a degree of longitude is half a degree of latitude: A is ~100 km away, B ~111 km.
    # Naive degree distance would pick B (1.0 < 1.8).
    env = Env(
        household(
            ambulances=[amb("B", "+4670000002", 61.0, 0.0), amb("A", "+4670000001", 60.0, 1.8)]
        )
    )
    out = await env.call("search_ambulance", {"location": {"latitude": 60.0, "longitude": 0.0}})
    assert out == {"ambulance_id": "A", "phone_no": "+4670000001"}


async def test_search_ambulance_nearest_in_example_household() -> None:
    env = Env()
    at_home = {"latitude": HOME[0], "longitude": HOME[1]}
    assert await env.call("search_ambulance", {"location": at_home}) == {
        "ambulance_id": "AMB-west",
        "phone_no": AMB_WEST,
    }
    north = {"latitude": 51.56, "longitude": -0.14}
    assert (await env.call("search_ambulance", {"location": north}))["ambulance_id"] == "AMB-north"


async def test_search_ambulance_none_configured_is_typed() -> None:
    env = Env(household(ambulances=[]))
    with pytest.raises(NoAmbulanceError) as exc:
        await env.call("search_ambulance", {"location": {"latitude": 1.0, "longitude": 2.0}})
    assert isinstance(exc.value, ToolUpstreamError)
    assert not exc.value.transient
    assert env.sleeps == []  # not retried


async def test_search_ambulance_rejects_out_of_range_location() -> None:
    env = Env()
    with pytest.raises(ToolValidationError) as exc:
        await env.call("search_ambulance", {"location": {"latitude": 95.0, "longitude": 0.0}})
    assert exc.value.fields == ("location.latitude",)
    assert "95" not in str(exc.value)


async def test_get_location_precedence() -> None:
    env = Env()
    # Nothing known: home.
    assert await env.call("get_location", {}) == {"latitude": HOME[0], "longitude": HOME[1]}
    # A device fix beats home.
    env.latest["alice"] = (51.52, -0.10)
    assert await env.call("get_location", {}) == {"latitude": 51.52, "longitude": -0.10}
    # The press's own fix beats both.
    out = await env.call("get_location", {}, location=(51.53, -0.11))
    assert out == {"latitude": 51.53, "longitude": -0.11}
    # Another person's fix is not used.
    assert await env.call("get_location", {}, person="bob") == {
        "latitude": HOME[0],
        "longitude": HOME[1],
    }


async def test_send_message_to_phone_only() -> None:
    env = Env()
    assert await env.call("send_message", {"text": "help", "phone_no": AMB_WEST}) is True
    [t] = env.texts.sent
    assert (t.to, t.body, t.key, t.person) == (
        AMB_WEST,
        "help",
        text_key("r1", 3, AMB_WEST),
        "alice",
    )


async def test_send_message_to_contacts_and_phone_dedupes() -> None:
    env = Env()
    params = {"text": "SOS", "phone_no": ALICE_CONTACTS[0], "to_emergency_contacts": True}
    assert await env.call("send_message", params) is True
    assert sorted(t.to for t in env.texts.sent) == sorted(ALICE_CONTACTS)
    assert {t.key for t in env.texts.sent} == {text_key("r1", 3, p) for p in ALICE_CONTACTS}


async def test_send_message_keys_make_resubmits_idempotent() -> None:
    env = Env()
    params = {"text": "SOS", "phone_no": AMB_WEST, "to_emergency_contacts": True}
    await env.call("send_message", params)
    await env.call("send_message", params)  # a resumed run repeating the same step
    assert len(env.texts.submits) == 6
    assert len(env.texts.sent) == 3
    for phone in (AMB_WEST, *ALICE_CONTACTS):
        assert len(env.texts.to(phone)) == 1
    await env.call("send_message", params, step=4)  # a different step is a different text
    assert len(env.texts.sent) == 6
    # Keys never show the phone number.
    assert all(p[1:] not in t.key for t in env.texts.sent for p in ALICE_CONTACTS)


def test_text_key_is_deterministic() -> None:
    assert text_key("r1", 3, AMB_WEST) == text_key("r1", 3, AMB_WEST)
    assert len({text_key("r1", 3, AMB_WEST), text_key("r1", 4, AMB_WEST),
                text_key("r2", 3, AMB_WEST), text_key("r1", 3, ALICE_CONTACTS[0])}) == 4  # fmt: skip


async def test_send_message_needs_a_recipient() -> None:
    env = Env()
    with pytest.raises(ToolValidationError):
        await env.call("send_message", {"text": "hello"})
    with pytest.raises(ToolValidationError) as exc:
        await env.call(
            "send_message", {"text": "hello", "to_emergency_contacts": True}, person="carol"
        )
    assert exc.value.fields == ("to_emergency_contacts",)
    assert env.texts.submits == []


async def test_send_message_retries_failed_recipients_without_duplicates() -> None:
    env = Env()
    env.texts.fail_once.add(ALICE_CONTACTS[1])
    params = {"text": "SOS", "phone_no": AMB_WEST, "to_emergency_contacts": True}
    assert await env.call("send_message", params) is True
    assert env.sleeps == [0.05]  # one transient failure, one retry
    for phone in (AMB_WEST, *ALICE_CONTACTS):
        assert len(env.texts.to(phone)) == 1


async def test_notify_user_publishes_notify_payload() -> None:
    env = Env()
    out = await env.call(
        "notify_user",
        {"user_id": "alice", "message": "Help is coming"},
        notify_kind="sos",
        prompt_id="alert-9",
    )
    assert out is True
    [m] = env.publisher.messages
    assert m.topic == "health/alice/notify"
    assert m.qos == 1
    assert NotifyPayload.model_validate(m.payload) == NotifyPayload(
        text="Help is coming", kind="sos", prompt_id="alert-9", ts=format_ts(env.clock.now())
    )


async def test_tools_refuse_to_act_for_another_person() -> None:
    env = Env()
    with pytest.raises(ToolPermissionError):
        await env.call("notify_user", {"user_id": "bob", "message": "hi"})
    with pytest.raises(ToolPermissionError):
        await env.call("get_assigned_ambulance", {"user_id": "bob"})
    assert env.publisher.messages == []


async def test_notify_unknown_user_is_a_validation_error() -> None:
    env = Env()
    with pytest.raises(ToolValidationError) as exc:
        await env.call("notify_user", {"user_id": "zed", "message": "hi"}, person=None)
    assert exc.value.fields == ("user_id",)


async def test_get_assigned_ambulance_reads_the_journal() -> None:
    env = Env()
    with pytest.raises(NoAmbulanceError):
        await env.call("get_assigned_ambulance", {"user_id": "alice"})
    env.journal.by_person["alice"] = ("AMB-west", AMB_WEST)
    out = await env.call("get_assigned_ambulance", {"user_id": "alice"})
    assert out == {"ambulance_id": "AMB-west", "phone_no": AMB_WEST}


async def test_tool_flags_and_audit_redaction() -> None:
    env = Env()
    send = env.reg.spec("send_message")
    assert (send.risk, send.phi, send.requires_confirmation) == ("high", True, False)
    notify = env.reg.spec("notify_user")
    assert (notify.risk, notify.phi) == ("medium", True)
    assert set(env.reg.names()) == {
        "notify_user", "get_location", "search_ambulance", "get_assigned_ambulance",
        "send_message",
    }  # fmt: skip
    await env.call("send_message", {"text": "Alice is at home", "phone_no": AMB_WEST})
    await env.call("get_location", {})
    sent, loc = env.audit
    assert sent["args"] == {
        "text": "[REDACTED]",
        "phone_no": "[REDACTED]",
        "to_emergency_contacts": False,
    }
    assert loc["result"] == {"latitude": "[REDACTED]", "longitude": "[REDACTED]"}
    assert sent["run_id"] == "r1"
