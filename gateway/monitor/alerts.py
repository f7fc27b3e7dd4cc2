"""Alert state machine: debounce, hysteresis, one open alert per condition, cooldown.

Pure logic with injected time (``now`` floats): no clocks, no sleeps, no I/O.

Per (person, condition) the caller feeds one observation each time that condition was
evaluated (sparse vitals: only when the vital was present), saying whether the value is
``abnormal`` (outside the normal range) or ``cleared`` (back inside it by the hysteresis
margin). Neither means "in the hysteresis band".

Rules
-----
* **Debounce.** An alert opens after ``debounce`` abnormal observations with no *cleared*
  observation in between. Its peak severity is the worst of those observations.
* **Hysteresis band is neutral.** A band observation (neither abnormal nor cleared) neither
  counts nor resets either counter. So a value bouncing between the band and abnormal keeps
  counting towards an alert (it never went clearly back to normal: that is a sustained
  borderline-abnormal value, not a one-off spike, and silence there would be a lost alert),
  and a value bouncing between the band and cleared keeps counting towards clearing. Only a
  *cleared* observation resets the opening count and only an *abnormal* one resets the
  clearing count. Together with the margin this is what prevents flapping: an open alert
  can only close after ``clear`` cleared observations and can only re-open after
  ``debounce`` more abnormal ones.
* **One open alert per condition.** While open, abnormal observations update the alert's
  current severity and latest evidence silently; only a rise above the peak severity
  returns an ``updated`` transition (the alert keeps the worst severity as its peak).
* **Clear** after ``clear`` cleared observations with no abnormal one in between.
* **Cooldown.** If the condition opens again within ``cooldown_s`` of the last clear, the
  transition is ``reopened`` and does not notify unless its severity is higher than what
  people were last told for that condition (the previous alert's peak; for a chain of silent
  reopenings, the highest severity notified in the chain). Later rises of a silent alert
  notify by the same rule. Outside the cooldown it is a normal ``opened`` with ``notify``.
* ``cleared`` transitions notify iff something about that alert was notified (whoever was
  told it started is told it ended).
* An observation that is both abnormal and cleared (a caller bug) counts as abnormal:
  the safe side.

Severity ranks: ``low`` < ``low-medium`` < ``medium`` = ``abnormal`` < ``high`` = ``critical``
(NEWS2 levels and range classes live on one scale; a condition only ever uses one of them).
An unknown severity ranks as the highest, so a typo can never silence an alert.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

log = logging.getLogger(__name__)

SEVERITY_RANK: Mapping[str, int] = {
    "low": 0,
    "low-medium": 1,
    "medium": 2,
    "abnormal": 2,
    "high": 3,
    "critical": 3,
}
_TOP_RANK = max(SEVERITY_RANK.values())

TransitionKind = Literal["opened", "updated", "reopened", "cleared"]
SNAPSHOT_VERSION = 1


def severity_rank(severity: str) -> int:
    rank = SEVERITY_RANK.get(severity)
    if rank is None:
        log.warning("unknown alert severity; treating it as the highest")
        return _TOP_RANK
    return rank


def _worse(a: str | None, b: str) -> str:
    """The worse of two severities (b wins ties: it is the more recent)."""
    if a is None or severity_rank(b) >= severity_rank(a):
        return b
    return a


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
    at: float  # when this transition happened

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "person": self.person,
            "condition": self.condition,
            "alert_id": self.alert_id,
            "severity": self.severity,
            "peak_severity": self.peak_severity,
            "evidence": dict(self.evidence),
            "opened_at": self.opened_at,
            "notify": self.notify,
            "at": self.at,
        }


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "person": self.person,
            "condition": self.condition,
            "alert_id": self.alert_id,
            "severity": self.severity,
            "peak_severity": self.peak_severity,
            "evidence": dict(self.evidence),
            "opened_at": self.opened_at,
            "updated_at": self.updated_at,
            "reopened": self.reopened,
            "notified": self.notified,
        }


@dataclass(slots=True)
class _Open:
    alert_id: str
    severity: str
    peak: str
    evidence: dict[str, Any]
    opened_at: float
    updated_at: float
    reopened: bool
    notified: bool
    told: str  # highest severity people have been told about (the notify baseline)


@dataclass(slots=True)
class _State:
    opening: int = 0  # abnormal observations counted towards opening
    pending_peak: str | None = None  # worst severity among them
    clearing: int = 0  # cleared observations counted towards clearing
    alert: _Open | None = None
    last_cleared_at: float | None = None
    last_told: str | None = None  # `told` of the last closed alert, for the cooldown rule

    def is_idle(self) -> bool:
        return (
            self.alert is None
            and self.opening == 0
            and self.clearing == 0
            and self.last_cleared_at is None
        )


class AlertTracker:
    def __init__(self, debounce: int = 3, clear: int = 3, cooldown_s: float = 600.0) -> None:
        if debounce < 1 or clear < 1 or cooldown_s < 0:
            raise ValueError("debounce and clear must be >= 1 and cooldown_s >= 0")
        self.debounce = debounce
        self.clear = clear
        self.cooldown_s = cooldown_s
        self._states: dict[tuple[str, str], _State] = {}

    def tracking(self, person: str, condition: str) -> bool:
        """Whether this condition has any state. A healthy, untracked condition needs no
        observation, so the caller may skip building evidence for it (the hot path)."""
        return (person, condition) in self._states

    # --- the state machine ---------------------------------------------------------------
    def observe(
        self,
        person: str,
        condition: str,
        *,
        abnormal: bool,
        cleared: bool,
        severity: str,
        evidence: Mapping[str, Any],
        now: float,
    ) -> Transition | None:
        key = (person, condition)
        st = self._states.get(key)
        if st is None:
            if not abnormal:
                return None  # nothing to count or clear: keep no state for healthy conditions
            st = self._states[key] = _State()
        if st.alert is None:
            return self._observe_closed(key, st, abnormal, cleared, severity, evidence, now)
        return self._observe_open(key, st, abnormal, cleared, severity, evidence, now)

    def _observe_closed(
        self,
        key: tuple[str, str],
        st: _State,
        abnormal: bool,
        cleared: bool,
        severity: str,
        evidence: Mapping[str, Any],
        now: float,
    ) -> Transition | None:
        if not abnormal:
            if cleared:
                st.opening, st.pending_peak = 0, None
            return None
        st.opening += 1
        st.pending_peak = _worse(st.pending_peak, severity)
        if st.opening < self.debounce:
            return None
        peak = st.pending_peak
        in_cooldown = st.last_cleared_at is not None and now - st.last_cleared_at < self.cooldown_s
        if in_cooldown and st.last_told is not None:
            notify = severity_rank(peak) > severity_rank(st.last_told)
            told = peak if notify else _worse(peak, st.last_told)
        else:
            notify, told = True, peak
        st.alert = _Open(
            alert_id=uuid.uuid4().hex,
            severity=severity,
            peak=peak,
            evidence=dict(evidence),
            opened_at=now,
            updated_at=now,
            reopened=in_cooldown,
            notified=notify,
            told=told,
        )
        st.opening, st.pending_peak, st.clearing = 0, None, 0
        return self._transition("reopened" if in_cooldown else "opened", key, st.alert, notify, now)

    def _observe_open(
        self,
        key: tuple[str, str],
        st: _State,
        abnormal: bool,
        cleared: bool,
        severity: str,
        evidence: Mapping[str, Any],
        now: float,
    ) -> Transition | None:
        a = st.alert
        assert a is not None
        if abnormal:
            st.clearing = 0
            a.severity, a.evidence, a.updated_at = severity, dict(evidence), now
            if severity_rank(severity) <= severity_rank(a.peak):
                return None  # still the same alert: no repeat
            a.peak = severity
            notify = severity_rank(severity) > severity_rank(a.told)
            if notify:
                a.told, a.notified = severity, True
            return self._transition("updated", key, a, notify, now)
        if not cleared:
            return None  # hysteresis band: neutral
        st.clearing += 1
        if st.clearing < self.clear:
            return None
        st.alert = None
        st.clearing = 0
        st.last_cleared_at = now
        st.last_told = a.told
        return Transition(
            kind="cleared",
            person=key[0],
            condition=key[1],
            alert_id=a.alert_id,
            severity=severity,
            peak_severity=a.peak,
            evidence=dict(evidence),
            opened_at=a.opened_at,
            notify=a.notified,
            at=now,
        )

    @staticmethod
    def _transition(
        kind: TransitionKind, key: tuple[str, str], a: _Open, notify: bool, now: float
    ) -> Transition:
        return Transition(
            kind=kind,
            person=key[0],
            condition=key[1],
            alert_id=a.alert_id,
            severity=a.severity,
            peak_severity=a.peak,
            evidence=dict(a.evidence),
            opened_at=a.opened_at,
            notify=notify,
            at=now,
        )

    # --- views ---------------------------------------------------------------------------
    def open_alerts(self, person: str | None = None) -> list[Alert]:
        """Open alerts (of one person, or everyone's), oldest first."""
        out = [
            _view(p, c, st.alert)
            for (p, c), st in self._states.items()
            if st.alert is not None and (person is None or p == person)
        ]
        out.sort(key=lambda a: (a.opened_at, a.person, a.condition))
        return out

    def open_count(self, person: str) -> int:
        """How many alerts are open for the person (cheap: no views built; hot path)."""
        return sum(1 for (p, _), st in self._states.items() if p == person and st.alert is not None)

    def alert(self, person: str, condition: str) -> Alert | None:
        st = self._states.get((person, condition))
        if st is None or st.alert is None:
            return None
        return _view(person, condition, st.alert)

    def forget(self, person: str) -> None:
        """Drop all state of a person (removed from the household)."""
        for key in [k for k in self._states if k[0] == person]:
            del self._states[key]

    # --- persistence ---------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """JSON-able state: open alerts, counters in progress and cooldown memory."""
        states = []
        for (person, condition), st in self._states.items():
            if st.is_idle():
                continue
            a = st.alert
            states.append(
                {
                    "person": person,
                    "condition": condition,
                    "opening": st.opening,
                    "pending_peak": st.pending_peak,
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
                    },
                }
            )
        return {"version": SNAPSHOT_VERSION, "states": states}

    def restore(self, data: Mapping[str, Any]) -> None:
        """Replace the state with a ``snapshot()``; ``{}`` means no state.

        Raises ValueError/TypeError/KeyError on a malformed snapshot and then keeps the
        current state (all or nothing).
        """
        if not data:
            self._states = {}
            return
        if data.get("version") != SNAPSHOT_VERSION:
            raise ValueError("unsupported alert snapshot version")
        states: dict[tuple[str, str], _State] = {}
        for item in data["states"]:
            key = (_str(item["person"]), _str(item["condition"]))
            raw = item["alert"]
            alert = None
            if raw is not None:
                alert = _Open(
                    alert_id=_str(raw["alert_id"]),
                    severity=_str(raw["severity"]),
                    peak=_str(raw["peak"]),
                    evidence=dict(_mapping(raw["evidence"])),
                    opened_at=_num(raw["opened_at"]),
                    updated_at=_num(raw["updated_at"]),
                    reopened=bool(raw["reopened"]),
                    notified=bool(raw["notified"]),
                    told=_str(raw["told"]),
                )
            states[key] = _State(
                opening=_count(item["opening"]),
                pending_peak=_opt_str(item["pending_peak"]),
                clearing=_count(item["clearing"]),
                alert=alert,
                last_cleared_at=None
                if item["last_cleared_at"] is None
                else _num(item["last_cleared_at"]),
                last_told=_opt_str(item["last_told"]),
            )
        self._states = states


def _view(person: str, condition: str, a: _Open) -> Alert:
    return Alert(
        person=person,
        condition=condition,
        alert_id=a.alert_id,
        severity=a.severity,
        peak_severity=a.peak,
        evidence=dict(a.evidence),
        opened_at=a.opened_at,
        updated_at=a.updated_at,
        reopened=a.reopened,
        notified=a.notified,
    )


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


def _count(v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError("expected a non-negative count in the alert snapshot")
    return v


def _mapping(v: object) -> Mapping[str, Any]:
    if not isinstance(v, Mapping):
        raise TypeError("expected an object in the alert snapshot")
    return cast(Mapping[str, Any], v)
