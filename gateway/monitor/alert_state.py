"""The alert tracker's values: transitions, open-alert views, per-condition state, and the
JSON snapshot that carries them across a restart (all or nothing)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, cast

from gateway.base.files import write_durable

log = logging.getLogger(__name__)

TransitionKind = Literal["opened", "reopened", "updated", "recurred", "persisting", "cleared"]
SNAPSHOT_VERSION = 2


def _fields(value: Any) -> dict[str, Any]:
    """A frozen value as JSON-able fields (evidence copied into a plain dict)."""
    out = {f.name: getattr(value, f.name) for f in fields(value)}
    out["evidence"] = dict(out["evidence"])
    return out


@dataclass(frozen=True, slots=True)
class Transition:
    """Something happened to an alert that the family or the playbooks may need to hear."""

    kind: TransitionKind
    person: str
    condition: str
    alert_id: str  # stable for the life of one open alert
    severity: str  # of the observation that caused this transition
    peak_severity: str  # worst severity of this alert so far
    evidence: Mapping[str, Any]  # latest evidence
    opened_at: float
    notify: bool
    at: float  # when this transition happened (reading time; wall time from tick)

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class Alert:
    """A view of one open alert."""

    person: str
    condition: str
    alert_id: str
    severity: str  # latest abnormal observation
    peak_severity: str
    evidence: Mapping[str, Any]
    opened_at: float
    updated_at: float  # last abnormal observation
    reopened: bool  # opened inside the cooldown of a previous alert
    notified: bool  # anything about this alert was notified
    dormant: bool = False  # normal on incomplete evidence: cannot clear, recurs loudly
    snoozed_until: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = _fields(self)
        out["state"] = "recovering" if out.pop("dormant") else "active"
        return out


@dataclass(slots=True)
class OpenAlert:
    alert_id: str
    severity: str
    peak: str
    evidence: dict[str, Any]
    opened_at: float
    updated_at: float
    reopened: bool
    notified: bool
    told: str  # highest severity people have been told about (the notify baseline)
    recovering: int = 0  # consecutive "recovering" observations
    dormant: bool = False
    last_status: str = "abnormal"
    snoozed_until: float | None = None  # wall clock

    def view(self, person: str, condition: str) -> Alert:
        return Alert(
            person=person,
            condition=condition,
            alert_id=self.alert_id,
            severity=self.severity,
            peak_severity=self.peak,
            evidence=dict(self.evidence),
            opened_at=self.opened_at,
            updated_at=self.updated_at,
            reopened=self.reopened,
            notified=self.notified,
            dormant=self.dormant,
            snoozed_until=self.snoozed_until,
        )

    def transition(
        self, kind: TransitionKind, key: tuple[str, str], notify: bool, at: float
    ) -> Transition:
        """What this alert's change tells the caller (`key`: person, condition)."""
        return Transition(
            kind=kind,
            person=key[0],
            condition=key[1],
            alert_id=self.alert_id,
            severity=self.severity,
            peak_severity=self.peak,
            evidence=dict(self.evidence),
            opened_at=self.opened_at,
            notify=notify,
            at=at,
        )


@dataclass(slots=True)
class State:
    opening: int = 0  # abnormal observations counted towards opening
    pending_peak: str | None = None  # worst severity among them
    pending_first_ts: float | None = None  # reading time of the first of them
    pending_first_recv: float | None = None  # wall time it arrived (None: late data)
    pending_evidence: dict[str, Any] | None = None
    clearing: int = 0  # cleared observations counted towards clearing
    alert: OpenAlert | None = None
    last_cleared_at: float | None = None
    last_told: str | None = None
    sources: dict[str, float] = field(default_factory=dict)  # device -> last abnormal ts

    def reset_pending(self) -> None:
        self.opening = 0
        self.pending_peak = None
        self.pending_first_ts = None
        self.pending_first_recv = None
        self.pending_evidence = None

    def is_idle(self) -> bool:
        return (
            self.alert is None
            and self.opening == 0
            and self.clearing == 0
            and self.last_cleared_at is None
        )


def to_snapshot(states: Mapping[tuple[str, str], State]) -> dict[str, Any]:
    out = []
    for (person, condition), st in states.items():
        if st.is_idle():
            continue
        a = st.alert
        out.append(
            {
                "person": person,
                "condition": condition,
                "opening": st.opening,
                "pending_peak": st.pending_peak,
                "pending_first_ts": st.pending_first_ts,
                "pending_first_recv": st.pending_first_recv,
                "pending_evidence": st.pending_evidence,
                "clearing": st.clearing,
                "last_cleared_at": st.last_cleared_at,
                "last_told": st.last_told,
                "alert": None
                if a is None
                else {
                    "alert_id": a.alert_id,
                    "severity": a.severity,
                    "peak": a.peak,
                    "evidence": dict(a.evidence),
                    "opened_at": a.opened_at,
                    "updated_at": a.updated_at,
                    "reopened": a.reopened,
                    "notified": a.notified,
                    "told": a.told,
                    "recovering": a.recovering,
                    "dormant": a.dormant,
                    "last_status": a.last_status,
                    "snoozed_until": a.snoozed_until,
                },
            }
        )
    return {"version": SNAPSHOT_VERSION, "states": out}


def from_snapshot(data: Mapping[str, Any]) -> dict[tuple[str, str], State]:
    """Version 1 snapshots (before time debounce and snoozes) load with the new fields at
    their defaults."""
    if not data:
        return {}
    if data.get("version") not in (1, SNAPSHOT_VERSION):
        raise ValueError("unsupported alert snapshot version")
    states: dict[tuple[str, str], State] = {}
    for item in data["states"]:
        key = (_str(item["person"]), _str(item["condition"]))
        raw = item["alert"]
        alert = None
        if raw is not None:
            alert = OpenAlert(
                alert_id=_str(raw["alert_id"]),
                severity=_str(raw["severity"]),
                peak=_str(raw["peak"]),
                evidence=dict(_mapping(raw["evidence"])),
                opened_at=_num(raw["opened_at"]),
                updated_at=_num(raw["updated_at"]),
                reopened=bool(raw["reopened"]),
                notified=bool(raw["notified"]),
                told=_str(raw["told"]),
                recovering=_count(raw.get("recovering", 0)),
                dormant=bool(raw.get("dormant", False)),
                last_status=_str(raw.get("last_status", "abnormal")),
                snoozed_until=_opt_num(raw.get("snoozed_until")),
            )
        pending = item.get("pending_evidence")
        states[key] = State(
            opening=_count(item["opening"]),
            pending_peak=_opt_str(item["pending_peak"]),
            pending_first_ts=_opt_num(item.get("pending_first_ts")),
            pending_first_recv=_opt_num(item.get("pending_first_recv")),
            pending_evidence=None if pending is None else dict(_mapping(pending)),
            clearing=_count(item["clearing"]),
            alert=alert,
            last_cleared_at=_opt_num(item["last_cleared_at"]),
            last_told=_opt_str(item["last_told"]),
        )
    return states


def _str(v: object) -> str:
    if not isinstance(v, str):
        raise TypeError("expected a string in the alert snapshot")
    return v


def _opt_str(v: object) -> str | None:
    return None if v is None else _str(v)


def _num(v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise TypeError("expected a number in the alert snapshot")
    return float(v)


def _opt_num(v: object) -> float | None:
    return None if v is None else _num(v)


def _count(v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError("expected a non-negative count in the alert snapshot")
    return v


def _mapping(v: object) -> Mapping[str, Any]:
    if not isinstance(v, Mapping):
        raise TypeError("expected an object in the alert snapshot")
    return cast(Mapping[str, Any], v)


def write_atomic(path: Path, blob: str) -> None:
    """Replace the state file durably (gateway/base/files.py): a crash or power cut leaves the old
    state or the new, never an empty file that would forget the open alerts. A disk that
    refuses is logged, not raised: the monitor keeps running and writes again on the next
    change."""
    try:
        write_durable(path, blob)
    except OSError:
        log.exception("could not save monitor state")


def read_state(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        log.warning("monitor state unreadable; starting with no open alerts")
        return {}
    return data if isinstance(data, dict) else {}
