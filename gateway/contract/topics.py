"""The MQTT wire contract: one table of topics and payload types.

The gateway, the simulators and the tests all import this module, so a change to the
contract is a change in one place (the zigbee2mqtt way). docs/wire-contract.md describes it
for humans; tests/gateway/contract/test_topics.py keeps the two honest.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# Which payload fields are vitals is the vitals table's to say; the contract re-exports the
# two lists because the monitor, the store and the API validate against them.
from gateway.contract.vitals import NUMERIC_VITALS as NUMERIC_VITALS
from gateway.contract.vitals import VITAL_FIELDS as VITAL_FIELDS

QOS = 1
MAX_PAYLOAD_BYTES = 16 * 1024
ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
_ID_RE = re.compile(ID_PATTERN)


class TopicKind(StrEnum):
    VITALS = "vitals"
    SOS = "sos"
    ACK = "ack"
    STATUS = "status"
    NOTIFY = "notify"
    EVENTS = "events"
    INTENT = "intent"
    REPLY = "reply"
    STATE = "state"
    GATEWAY_STATUS = "gateway_status"
    GATEWAY_EVENTS = "gateway_events"
    REJECTED = "rejected"


# --- topic table -------------------------------------------------------------------------
# kind -> (pattern, direction). {person}/{device}/{gateway_id} are path segments matching
# ID_PATTERN.
TOPICS: dict[TopicKind, tuple[str, str]] = {
    TopicKind.VITALS: ("health/{person}/{device}/vitals", "device->gateway"),
    TopicKind.SOS: ("health/{person}/{device}/sos", "device->gateway"),
    TopicKind.ACK: ("health/{person}/{device}/ack", "device->gateway"),
    TopicKind.STATUS: ("health/{person}/{device}/status", "device->anyone (retained, LWT)"),
    TopicKind.NOTIFY: ("health/{person}/notify", "gateway->devices"),
    TopicKind.EVENTS: ("health/{person}/events", "gateway->anyone"),
    TopicKind.INTENT: ("health/{person}/intent", "user->gateway"),
    TopicKind.REPLY: ("health/{person}/reply", "gateway->user"),
    TopicKind.STATE: ("health/{person}/state", "gateway->anyone (retained)"),
    TopicKind.GATEWAY_STATUS: ("gateway/{gateway_id}/status", "gateway->anyone (retained, LWT)"),
    TopicKind.GATEWAY_EVENTS: ("gateway/{gateway_id}/events", "gateway->anyone"),
    TopicKind.REJECTED: ("gateway/{gateway_id}/rejected", "gateway->anyone"),
}

# What the gateway subscribes to.
GATEWAY_SUBSCRIPTIONS: tuple[str, ...] = (
    "health/+/+/vitals",
    "health/+/+/sos",
    "health/+/+/ack",
    "health/+/+/status",
    "health/+/intent",
)


def vitals_topic(person: str, device: str) -> str:
    return f"health/{person}/{device}/vitals"


def sos_topic(person: str, device: str) -> str:
    return f"health/{person}/{device}/sos"


def ack_topic(person: str, device: str) -> str:
    return f"health/{person}/{device}/ack"


def status_topic(person: str, device: str) -> str:
    return f"health/{person}/{device}/status"


def notify_topic(person: str) -> str:
    return f"health/{person}/notify"


def events_topic(person: str) -> str:
    return f"health/{person}/events"


def intent_topic(person: str) -> str:
    return f"health/{person}/intent"


def reply_topic(person: str) -> str:
    return f"health/{person}/reply"


def state_topic(person: str) -> str:
    return f"health/{person}/state"


def gateway_events_topic(gateway_id: str) -> str:
    return f"gateway/{gateway_id}/events"


def gateway_status_topic(gateway_id: str) -> str:
    return f"gateway/{gateway_id}/status"


def rejected_topic(gateway_id: str) -> str:
    return f"gateway/{gateway_id}/rejected"


@dataclass(frozen=True, slots=True)
class ParsedTopic:
    kind: TopicKind
    person: str
    device: str | None


def parse_topic(topic: str) -> ParsedTopic | None:
    """Map an inbound topic to its kind; None when it is not part of the contract."""
    parts = topic.split("/")
    if len(parts) == 4 and parts[0] == "health":
        _, person, device, leaf = parts
        kinds = {
            "vitals": TopicKind.VITALS,
            "sos": TopicKind.SOS,
            "ack": TopicKind.ACK,
            "status": TopicKind.STATUS,
        }
        kind = kinds.get(leaf)
        if kind and _ID_RE.match(person) and _ID_RE.match(device):
            return ParsedTopic(kind, person, device)
        return None
    if len(parts) == 3 and parts[0] == "health" and _ID_RE.match(parts[1]):
        leaf_kinds = {
            "intent": TopicKind.INTENT,
            "notify": TopicKind.NOTIFY,
            "events": TopicKind.EVENTS,
            "reply": TopicKind.REPLY,
            "state": TopicKind.STATE,
        }
        kind = leaf_kinds.get(parts[2])
        if kind:
            return ParsedTopic(kind, parts[1], None)
    return None


# --- payloads ------------------------------------------------------------------------------

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True, str_max_length=512)

# Wide physical bounds only: the monitor, not the schema, decides what is plausible
# (a systolic of 500 is questioned as implausible, not rejected as malformed).
NonNeg = Annotated[float, Field(ge=0, le=10_000)]


def parse_ts(value: Any) -> float:
    """RFC 3339 string or epoch seconds -> epoch seconds (float, UTC)."""
    if isinstance(value, bool):
        raise ValueError("ts must be RFC 3339 or epoch seconds")
    if isinstance(value, int | float):
        ts = float(value)
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError as exc:
            raise ValueError("ts is not RFC 3339") from exc
        if dt.tzinfo is None:
            raise ValueError("ts needs a timezone offset (RFC 3339)")
        ts = dt.timestamp()
    else:
        raise ValueError("ts must be RFC 3339 or epoch seconds")
    if not math.isfinite(ts) or ts < 946_684_800:  # before 2000-01-01 is a clock that never synced
        raise ValueError("ts is out of range")
    return ts


def format_ts(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Location(BaseModel):
    model_config = _STRICT
    latitude: float = Field(ge=-90, le=90)
    longitude: float = Field(ge=-180, le=180)


class Sleep(BaseModel):
    model_config = _STRICT
    deep: NonNeg = 0
    light: NonNeg = 0
    rem: NonNeg = 0
    awake: NonNeg = 0


class VitalsPayload(BaseModel):
    """health/{person}/{device}/vitals"""

    model_config = _STRICT
    ts: float
    seq: int | None = Field(default=None, ge=0, le=2**53)
    heart_rate: NonNeg | None = None
    spo2: NonNeg | None = None
    systolic_bp: NonNeg | None = None
    diastolic_bp: NonNeg | None = None
    temperature_c: NonNeg | None = None
    respiratory_rate: NonNeg | None = None
    steps: int | None = Field(default=None, ge=0, le=100_000)
    on_supplemental_o2: bool | None = None
    consciousness: Literal["A", "C", "V", "P", "U"] | None = None
    sleep: Sleep | None = None
    fall_detected: bool | None = None
    battery: float | None = Field(default=None, ge=0, le=100)
    location: Location | None = None

    @field_validator("ts", mode="before")
    @classmethod
    def _ts(cls, v: Any) -> float:
        return parse_ts(v)

    @model_validator(mode="after")
    def _at_least_one_vital(self) -> VitalsPayload:
        if all(getattr(self, f) is None for f in VITAL_FIELDS):
            raise ValueError("a reading needs at least one vital")
        return self


class SosPayload(BaseModel):
    """health/{person}/{device}/sos"""

    model_config = _STRICT
    action: Literal["start", "end"]
    ts: float
    location: Location | None = None

    @field_validator("ts", mode="before")
    @classmethod
    def _ts(cls, v: Any) -> float:
        return parse_ts(v)


class AckPayload(BaseModel):
    """health/{person}/{device}/ack: the wearer answers a prompt."""

    model_config = _STRICT
    ok: bool
    prompt_id: str | None = Field(default=None, max_length=64)
    ts: float | None = None
    # A dose reminder's taken / snooze / skip, or a `confirm` prompt's yes / no (without it,
    # a confirm prompt reads `ok`).
    answer: str | None = Field(default=None, max_length=32)

    @field_validator("ts", mode="before")
    @classmethod
    def _ts(cls, v: Any) -> float | None:
        return None if v is None else parse_ts(v)


class IntentPayload(BaseModel):
    """health/{person}/intent: user text for the assistant."""

    model_config = _STRICT
    text: str = Field(min_length=1, max_length=2000)
    session_id: str | None = Field(default=None, max_length=64)


class ReplyPayload(BaseModel):
    """health/{person}/reply: the assistant's message or question in a conversation. An
    answer goes back as an intent with the same session_id; `answer_type` tells a watch to
    show Yes/No buttons."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    text: str = Field(min_length=1, max_length=2000)
    session_id: str = Field(min_length=1, max_length=64)
    expects_answer: bool
    answer_type: Literal["free_text", "yes_no"] | None = None
    ts: str | None = None


# `prompt`: "are you OK?" (can escalate); `confirm`: a yes/no that never does (prompt_id rx-...).
NotifyKind = Literal[
    "info", "soft_sos", "prompt", "confirm", "sos", "sos_end", "reminder", "report", "withdrawn"
]  # fmt: skip
CONFIRM_PROMPT_PREFIX = "rx-"


class NotifyPayload(BaseModel):
    """health/{person}/notify: what notify_user says, and prompts that want an answer."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    text: str
    kind: NotifyKind = "info"
    prompt_id: str | None = None
    ts: str | None = None


class EventType(StrEnum):
    SOFT_SOS = "soft_sos"
    ADVISORY = "advisory"  # a low-priority alert (IEC 60601-1-8): recorded, shown, nobody told
    ALERT_UPDATED = "alert_updated"
    ALERT_CLEARED = "alert_cleared"
    HARD_SOS = "hard_sos"
    SOS_END = "sos_end"
    SOS_ESCALATED = "sos_escalated"
    IMPLAUSIBLE_READING = "implausible_reading"
    UNCONFIRMED_READING = "unconfirmed_reading"  # one wrist reading in the intervention range
    QUESTION_WITHDRAWN = "question_withdrawn"  # the next readings refuted a single one
    DEVICE_STALE = "device_stale"
    DEVICE_RECOVERED = "device_recovered"
    DEVICE_NOT_WORN = "device_not_worn"
    DEVICE_OFFLINE = "device_offline"
    DEVICE_ONLINE = "device_online"
    BATTERY_LOW = "battery_low"
    FALL_DETECTED = "fall_detected"
    PROMPT_ANSWERED = "prompt_answered"
    NOTIFICATION_FAILED = "notification_failed"
    NOTIFICATION_PENDING = "notification_pending"
    NOTIFICATION_SENT = "notification_sent"
    APPOINTMENT_BOOKED = "appointment_booked"
    MEDICATION_MISSED = "medication_missed"
    MEDICATION_WARNING = "medication_warning"
    REPORT_READY = "report_ready"
    SOS_ACKNOWLEDGED = "sos_acknowledged"
    SOS_UNACKNOWLEDGED = "sos_unacknowledged"
    # An alert's "are you OK?" went unanswered and the contacts were texted (not a hard SOS).
    ALERT_ESCALATED = "alert_escalated"
    # An alert found in late data (a watch syncing hours it kept): recorded, never prompted.
    RETROSPECTIVE_ALERT = "retrospective_alert"
    DEVICE_CLOCK_SKEW = "device_clock_skew"
    # The hub itself (person ""; published on gateway/{gateway_id}/events).
    MONITORING_DEGRADED = "monitoring_degraded"
    MONITORING_RECOVERED = "monitoring_recovered"
    OUTBOX_HIGH = "outbox_high"
    # A background task or thread crashed / came back (gateway/base/supervise.py).
    COMPONENT_FAILED = "component_failed"
    COMPONENT_RESTARTED = "component_restarted"


# Events about the hub rather than a person: Event.person is "" for these.
GATEWAY_EVENT_TYPES: frozenset[EventType] = frozenset(
    {
        EventType.MONITORING_DEGRADED,
        EventType.MONITORING_RECOVERED,
        EventType.OUTBOX_HIGH,
        EventType.COMPONENT_FAILED,
        EventType.COMPONENT_RESTARTED,
    }
)


class DeviceState(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    state: str  # the monitor's word: active | stale | offline | not_worn | unknown
    battery: float | None = None
    last_seen: str | None = None


class StatePayload(BaseModel):
    """health/{person}/state (retained): the person's current picture, for dashboards and
    Home Assistant. Latest vitals, NEWS2, SOS state, open alerts and each device's state."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    person: str
    ts: str
    vitals: dict[str, float | int | str | bool | None]
    news2_total: int | None = None
    news2_level: Literal["low", "low-medium", "medium", "high"] | None = None
    sos: Literal["on", "off"] = "off"
    open_alerts: int = 0
    alert_priority: Literal["low", "medium", "high"] | None = None  # highest of the open ones
    devices: dict[str, DeviceState] = Field(default_factory=dict)


# The one topic-kind -> payload-type table (status is a plain "online"/"offline" string).
PAYLOADS: dict[TopicKind, type[BaseModel]] = {
    TopicKind.VITALS: VitalsPayload,
    TopicKind.SOS: SosPayload,
    TopicKind.ACK: AckPayload,
    TopicKind.INTENT: IntentPayload,
    TopicKind.NOTIFY: NotifyPayload,
    TopicKind.REPLY: ReplyPayload,
    TopicKind.STATE: StatePayload,
}

STATUS_ONLINE = "online"
STATUS_OFFLINE = "offline"
