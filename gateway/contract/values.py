"""Typed, frozen values that flow through the gateway after edge validation."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.contract.topics import EventType, VitalsPayload, format_ts
from gateway.contract.vitals import SCALAR_VITALS

# What Reading.vitals() reports: the measured values, in the contract's order (sleep is added
# on its own, as a dict).
_VALUE_FIELDS = SCALAR_VITALS


@dataclass(frozen=True, slots=True)
class Reading:
    """One validated vitals reading from one device."""

    person: str
    device: str
    ts: float
    seq: int | None = None
    heart_rate: float | None = None
    spo2: float | None = None
    systolic_bp: float | None = None
    diastolic_bp: float | None = None
    temperature_c: float | None = None
    respiratory_rate: float | None = None
    steps: int | None = None
    on_supplemental_o2: bool | None = None
    consciousness: str | None = None
    sleep: Mapping[str, float] | None = None
    fall_detected: bool | None = None
    battery: float | None = None
    latitude: float | None = None
    longitude: float | None = None
    received_at: float = 0.0

    @classmethod
    def from_payload(
        cls, person: str, device: str, p: VitalsPayload, received_at: float
    ) -> Reading:
        return cls(
            person=person,
            device=device,
            ts=p.ts,
            seq=p.seq,
            heart_rate=p.heart_rate,
            spo2=p.spo2,
            systolic_bp=p.systolic_bp,
            diastolic_bp=p.diastolic_bp,
            temperature_c=p.temperature_c,
            respiratory_rate=p.respiratory_rate,
            steps=p.steps,
            on_supplemental_o2=p.on_supplemental_o2,
            consciousness=p.consciousness,
            sleep=p.sleep.model_dump() if p.sleep else None,
            fall_detected=p.fall_detected,
            battery=p.battery,
            latitude=p.location.latitude if p.location else None,
            longitude=p.location.longitude if p.location else None,
            received_at=received_at,
        )

    def vitals(self) -> dict[str, Any]:
        """The measured values present in this reading (no ids, no timing)."""
        out: dict[str, Any] = {}
        for name in _VALUE_FIELDS:
            v = getattr(self, name)
            if v is not None:
                out[name] = v
        if self.sleep is not None:
            out["sleep"] = dict(self.sleep)
        return out


@dataclass(frozen=True, slots=True)
class Event:
    """Something the family, the playbooks or the store must know about."""

    type: EventType
    person: str
    ts: float
    data: Mapping[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def to_payload(self) -> dict[str, Any]:
        """The JSON body published on health/{person}/events."""
        return {
            "type": str(self.type),
            "ts": format_ts(self.ts),
            "person": self.person,
            "id": self.id,
            **dict(self.data),
        }
