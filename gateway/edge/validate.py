"""Edge validation: raw MQTT (topic, bytes) -> a typed inbound value or a Rejection.

Validate once, here; everything downstream trusts the types. A rejection carries a short
stable reason code and a detail that names fields, never their values (PHI)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from pydantic import ValidationError

from gateway.base.clock import Clock
from gateway.contract.topics import (
    MAX_PAYLOAD_BYTES,
    PAYLOADS,
    STATUS_OFFLINE,
    STATUS_ONLINE,
    AckPayload,
    IntentPayload,
    ParsedTopic,
    SosPayload,
    TopicKind,
    VitalsPayload,
    parse_topic,
)
from gateway.contract.values import Reading
from gateway.household.model import Household

MAX_FUTURE_S = 300.0


@dataclass(frozen=True, slots=True)
class Rejection:
    topic: str
    reason: str
    detail: str
    size: int


@dataclass(frozen=True, slots=True)
class SosIn:
    person: str
    device: str
    payload: SosPayload


@dataclass(frozen=True, slots=True)
class WatchAck:
    person: str
    device: str
    payload: AckPayload


@dataclass(frozen=True, slots=True)
class StatusIn:
    person: str
    device: str
    online: bool


@dataclass(frozen=True, slots=True)
class IntentIn:
    person: str
    payload: IntentPayload


Inbound = Reading | SosIn | WatchAck | StatusIn | IntentIn


def _describe(exc: ValidationError) -> tuple[str, str]:
    errs = exc.errors(include_input=False, include_url=False, include_context=False)
    kinds = {e["type"] for e in errs}
    if "json_invalid" in kinds:
        return "not_json", "payload is not valid JSON"
    if "model_type" in kinds and all(not e["loc"] for e in errs):
        return "not_object", "payload must be a JSON object"
    reason = "non_finite" if "finite_number" in kinds else "schema"
    parts = []
    for e in errs[:5]:
        where = ".".join(str(p) for p in e["loc"]) or "payload"
        parts.append(f"{where}: {e['msg']}")
    if len(errs) > 5:
        parts.append(f"... {len(errs) - 5} more")
    return reason, "; ".join(parts)


class EdgeValidator:
    def __init__(self, household: Household, clock: Clock, *, max_age_s: float) -> None:
        self._hh = household
        self._clock = clock
        self._max_age_s = max_age_s
        self._known = {(p.id, d.id) for p in household.persons for d in p.devices}
        # Topics repeat per device: parse each known one once (bounded by the household).
        self._topics: dict[str, ParsedTopic] = {}

    def validate(self, topic: str, payload: bytes) -> Inbound | Rejection:
        size = len(payload)

        def reject(reason: str, detail: str) -> Rejection:
            return Rejection(topic, reason, detail, size)

        parsed = self._topics.get(topic) or parse_topic(topic)
        if parsed is None or parsed.kind in (TopicKind.NOTIFY, TopicKind.EVENTS, TopicKind.REPLY):
            return reject("unknown_topic", "topic is not part of the inbound contract")
        if size > MAX_PAYLOAD_BYTES:
            return reject("oversized", f"payload is {size} bytes; the limit is {MAX_PAYLOAD_BYTES}")
        if parsed.device is not None:
            if (parsed.person, parsed.device) not in self._known:
                return reject("unknown_device", "this person/device pair is not in the household")
            self._topics[topic] = parsed
        elif self._hh.person(parsed.person) is None:
            return reject("unknown_person", "this person is not in the household")
        try:
            text = payload.decode("utf-8")
        except UnicodeDecodeError:
            return reject("not_utf8", "payload is not UTF-8")

        if parsed.kind is TopicKind.STATUS:
            value = text.strip().strip('"').lower()
            if value not in (STATUS_ONLINE, STATUS_OFFLINE):
                return reject("schema", "status must be 'online' or 'offline'")
            assert parsed.device is not None
            return StatusIn(parsed.person, parsed.device, value == STATUS_ONLINE)

        # One parse and validation in pydantic-core (Rust): it rejects NaN/Infinity as
        # non-finite, and is several times cheaper than json.loads + model_validate.
        try:
            obj = PAYLOADS[parsed.kind].model_validate_json(payload)
        except ValidationError as exc:
            reason, detail = _describe(exc)
            return reject(reason, detail)

        now = self._clock.now()
        ts = getattr(obj, "ts", None)
        if ts is not None:
            if ts > now + MAX_FUTURE_S:
                return reject(
                    "ts_in_future", f"ts is more than {MAX_FUTURE_S:.0f}s ahead of the hub"
                )
            if ts < now - self._max_age_s:
                return reject("ts_too_old", "ts is older than the retention period")

        if isinstance(obj, VitalsPayload):
            assert parsed.device is not None
            return Reading.from_payload(parsed.person, parsed.device, obj, now)
        if isinstance(obj, SosPayload):
            assert parsed.device is not None
            return SosIn(parsed.person, parsed.device, obj)
        if isinstance(obj, AckPayload):
            assert parsed.device is not None
            return WatchAck(parsed.person, parsed.device, obj)
        assert isinstance(obj, IntentPayload)
        return IntentIn(parsed.person, obj)


class Deduper:
    """Drops QoS 1 redeliveries: same device, same seq, same ts. Out-of-order readings pass.
    A known seq with a different ts is a device that restarted its counter: accepted.

    One window over the hub's last `window` readings, all devices together, not one window
    per device: 4,096 keys per device grew by ~160 bytes a reading until every window was
    full, 650 MB for 1,000 watches (found by the overload test's RSS bound). What comes back
    is what the gateway had not acknowledged: at most the store's commit lag (acks are
    forced after 2 s) plus the inbound queue, at 5,000 readings/s ~20,000 readings, so
    65,536 covers it at ~10 MB. Older copies (a watch re-sending a day it kept offline)
    still cannot be stored twice (the store's unique key), and reach the monitor as late
    data (judged retrospectively, never as the person's present)."""

    def __init__(self, window: int = 65_536) -> None:
        self._window = window
        self._seen: set[tuple[str, int | None, float]] = set()
        self._order: deque[tuple[str, int | None, float]] = deque()  # oldest first
        self.duplicates = 0

    def __len__(self) -> int:
        return len(self._order)

    def is_duplicate(self, reading: Reading) -> bool:
        key = (reading.device, reading.seq, reading.ts)
        seen = self._seen
        if key in seen:
            self.duplicates += 1
            return True
        seen.add(key)
        self._order.append(key)
        if len(self._order) > self._window:
            seen.discard(self._order.popleft())
        return False
