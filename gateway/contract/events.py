"""Typed, frozen payloads for the events that parts act on, one class per event type.

`Event.data` stays the wire body (health/{person}/events, the store, the time series), so
nothing on the wire changes. Producers build these and turn them into data with `to_data()`;
consumers read `event.payload()` instead of string keys, so a renamed or missing field is a
type error or one parse, not a silent `None` deep in a playbook. Fields a consumer does not
act on stay in `data` only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.contract.response import LEVELS, OnNoAnswer, Response
from gateway.contract.topics import EventType


@dataclass(frozen=True, slots=True)
class AlertPayload:
    """soft_sos, advisory, alert_updated, alert_cleared and retrospective_alert: the monitor builds it
    (gateway/monitor/alert_events.py) and its `to_data()` is the wire body."""

    alert_id: str
    alert_ids: tuple[str, ...]
    severity: str
    notify: bool
    high: bool
    retrospective: bool
    # vital -> {"value": ..., "class": ..., "unit": ..., "normal": [lo, hi]}: outside range.
    abnormal: Mapping[str, Mapping[str, Any]]
    response: Response | None
    why: str | None = None
    advice: str | None = None
    condition: str | None = None
    # The scores' breakdowns (NEWS2 / MEOWS parameters and totals), when they applied.
    news2: Mapping[str, Any] | None = None
    meows: Mapping[str, Any] | None = None
    device: str | None = None
    conditions: tuple[str, ...] = ()
    transition: str | None = None  # opened | reopened | recurred | updated | persisting | cleared
    peak_severity: str | None = None
    opened_at: float | None = None
    anomaly_score: float | None = None
    rules: tuple[str, ...] = ()
    # The time of the reading that caused it (device time; late data is counted by it).
    reading_ts: float | None = None

    @classmethod
    def from_data(cls, d: Mapping[str, Any]) -> AlertPayload:
        alert_id = str(d.get("alert_id"))
        ids = d.get("alert_ids") or [alert_id]
        return cls(
            alert_id=alert_id,
            alert_ids=tuple(str(a) for a in ids),
            severity=str(d.get("severity")),
            notify=bool(d.get("notify", False)),
            high=bool(d.get("high")),
            retrospective=bool(d.get("retrospective")),
            abnormal=dict(d.get("abnormal") or {}),
            response=response_from(d.get("response")),
            why=_opt_str(d.get("why")),
            advice=_opt_str(d.get("advice")),
            condition=_opt_str(d.get("condition")),
            news2=d.get("news2"),
            meows=d.get("meows"),
            device=_opt_str(d.get("device")),
            conditions=tuple(str(c) for c in d.get("conditions") or ()),
            transition=_opt_str(d.get("transition")),
            peak_severity=_opt_str(d.get("peak_severity")),
            opened_at=_opt_float(d.get("opened_at")),
            anomaly_score=_opt_float(d.get("anomaly_score")),
            rules=tuple(str(r) for r in d.get("rules") or ()),
            reading_ts=_opt_float(d.get("reading_ts")),
        )

    def to_data(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "alert_id": self.alert_id,
            "alert_ids": list(self.alert_ids),
            "condition": self.condition,
            "conditions": list(self.conditions),
            "transition": self.transition,
            "severity": self.severity,
            "peak_severity": self.peak_severity,
            "high": self.high,
            "notify": self.notify,
            "opened_at": self.opened_at,
            "abnormal": dict(self.abnormal),
            "news2": self.news2,
            "meows": self.meows,
            "anomaly_score": self.anomaly_score,
            "rules": list(self.rules),
            "response": None if self.response is None else self.response.to_dict(),
            # IEC 60601-1-8: high, medium, low (an information signal for late data).
            "priority": "information" if self.response is None else self.response.priority,
            "retrospective": self.retrospective,
        }
        # Present only when known, as before: absent keys stay absent on the wire.
        optional = {
            "device": self.device,
            "reading_ts": self.reading_ts,
            "why": self.why,
            "advice": self.advice,
        }
        d.update({k: v for k, v in optional.items() if v is not None})
        return d


@dataclass(frozen=True, slots=True)
class ImplausiblePayload:
    """implausible_reading: a value the monitor would not score; maybe a question."""

    device: str
    vital: str
    kind: str
    value: Any
    ask: bool
    retrospective: bool
    response: Response | None
    detail: str | None = None
    reading_ts: float | None = None
    # How long the question waits for an answer (a slow device's next reading may refute it
    # first); None: the escalation window.
    window_s: float | None = None
    since: float | None = None  # wall time the value was first read (held, then confirmed)

    @classmethod
    def from_data(cls, d: Mapping[str, Any]) -> ImplausiblePayload:
        return cls(
            device=str(d.get("device", "")),
            vital=str(d.get("vital")),
            kind=str(d.get("kind")),
            value=d.get("value"),
            ask=bool(d.get("ask")),
            retrospective=bool(d.get("retrospective")),
            response=response_from(d.get("response")),
            detail=_opt_str(d.get("detail")),
            reading_ts=_opt_float(d.get("reading_ts")),
            window_s=_opt_float(d.get("window_s")),
            since=_opt_float(d.get("since")),
        )

    def to_data(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "device": self.device,
            "vital": self.vital,
            "kind": self.kind,
            "value": self.value,
            "detail": self.detail,
            "reading_ts": self.reading_ts,
            "retrospective": self.retrospective,
            "ask": self.ask,
        }
        if self.response is not None:  # only a question carries the decided response
            d["response"] = self.response.to_dict()
            d["priority"] = self.response.priority
        if self.window_s is not None:
            d["window_s"] = self.window_s
        if self.since is not None:
            d["since"] = self.since
        return d


@dataclass(frozen=True, slots=True)
class FallPayload:
    """fall_detected, from the watch."""

    device: str
    retrospective: bool

    @classmethod
    def from_data(cls, d: Mapping[str, Any]) -> FallPayload:
        return cls(device=str(d.get("device", "")), retrospective=bool(d.get("retrospective")))

    def to_data(self) -> dict[str, Any]:
        return {"device": self.device, "retrospective": self.retrospective}


@dataclass(frozen=True, slots=True)
class HardSosPayload:
    """hard_sos: a run started (the ambulance is already chosen)."""

    run_id: str
    trigger: str
    device: str | None
    ambulance_id: str | None

    @classmethod
    def from_data(cls, d: Mapping[str, Any]) -> HardSosPayload:
        return cls(
            run_id=str(d.get("run_id", "")),
            trigger=str(d.get("trigger", "")),
            device=_opt_str(d.get("device")),
            ambulance_id=_opt_str(d.get("ambulance_id")),
        )

    def to_data(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "trigger": self.trigger,
            "device": self.device,
            "ambulance_id": self.ambulance_id,
        }


EventPayload = AlertPayload | ImplausiblePayload | FallPayload | HardSosPayload

# One table: which payload type each event type carries.
PAYLOADS: dict[str, type[AlertPayload | ImplausiblePayload | FallPayload | HardSosPayload]] = {
    EventType.SOFT_SOS: AlertPayload,
    EventType.ADVISORY: AlertPayload,
    EventType.ALERT_UPDATED: AlertPayload,
    EventType.ALERT_CLEARED: AlertPayload,
    EventType.RETROSPECTIVE_ALERT: AlertPayload,
    EventType.IMPLAUSIBLE_READING: ImplausiblePayload,
    EventType.UNCONFIRMED_READING: ImplausiblePayload,
    EventType.FALL_DETECTED: FallPayload,
    EventType.HARD_SOS: HardSosPayload,
}


def parse_payload(event_type: str, data: Mapping[str, Any]) -> EventPayload | None:
    """The typed payload of an event type that has one; None for the others."""
    cls = PAYLOADS.get(str(event_type))
    return None if cls is None else cls.from_data(data)


def response_from(d: Mapping[str, Any] | None) -> Response | None:
    """The monitor's decision (gateway/monitor/response.py) back from its wire form."""
    if not d:
        return None
    tier = int(d.get("tier", 0))
    return Response(
        tier=tier if 0 <= tier < len(LEVELS) else len(LEVELS) - 1,
        tell_wearer=bool(d.get("tell_wearer")),
        ask=bool(d.get("ask")),
        contacts_now=bool(d.get("contacts_now")),
        clinician_now=bool(d.get("clinician_now")),
        on_no_answer=_on_no_answer(d.get("on_no_answer")),
    )


def _on_no_answer(v: Any) -> OnNoAnswer:
    # Only the monitor writes it (response.py); anything else reads as "ask the contacts":
    # a person who did not answer is never left with nobody told.
    if v == "hard_sos":
        return "hard_sos"
    if v in (None, "none"):
        return "none"
    return "contacts"


def _opt_float(v: Any) -> float | None:
    return None if v is None or isinstance(v, bool) else float(v)


def _opt_str(v: Any) -> str | None:
    return None if v is None else str(v)
