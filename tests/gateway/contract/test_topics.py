"""The contract module and docs/wire-contract.md must agree."""

from __future__ import annotations

import re
from pathlib import Path

from gateway.contract.topics import (
    PAYLOADS,
    TOPICS,
    EventType,
    TopicKind,
    VitalsPayload,
    format_ts,
    parse_topic,
    parse_ts,
)

DOC = (Path(__file__).resolve().parents[3] / "docs" / "wire-contract.md").read_text()


def test_every_topic_is_documented() -> None:
    for pattern, _ in TOPICS.values():
        assert f"`{pattern}`" in DOC, pattern


def test_every_event_type_is_documented() -> None:
    for t in EventType:
        assert f"`{t.value}`" in DOC, t


def test_every_vitals_field_is_documented() -> None:
    for name in VitalsPayload.model_fields:
        assert f"`{name}`" in DOC, name


def test_rejection_reasons_documented() -> None:
    src = (Path(__file__).resolve().parents[3] / "gateway" / "edge" / "validate.py").read_text()
    reasons = set(re.findall(r'reject\("([a-z_]+)"', src)) | {"non_finite", "schema"}
    for r in reasons:
        assert f"`{r}`" in DOC, r


def test_parse_topic_round_trip() -> None:
    for kind, (pattern, _) in TOPICS.items():
        if kind in (TopicKind.GATEWAY_STATUS, TopicKind.GATEWAY_EVENTS, TopicKind.REJECTED):
            continue
        topic = pattern.format(person="p1", device="d1")
        parsed = parse_topic(topic)
        assert parsed is not None and parsed.kind is kind and parsed.person == "p1"
    assert parse_topic("health/p1/d1/vitals/extra") is None
    assert parse_topic("health/p 1/d1/vitals") is None
    assert parse_topic("other/p1/d1/vitals") is None


def test_payload_table_covers_inbound_json_topics() -> None:
    assert {TopicKind.VITALS, TopicKind.SOS, TopicKind.ACK, TopicKind.INTENT} <= set(PAYLOADS)


def test_ts_formats() -> None:
    assert parse_ts("2026-11-22T07:30:00Z") == parse_ts("2026-11-22T08:30:00+01:00")
    assert parse_ts(1_790_000_000) == 1_790_000_000.0
    assert format_ts(parse_ts("2026-11-22T07:30:00.250Z")) == "2026-11-22T07:30:00.250Z"
