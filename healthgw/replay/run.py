"""`healthgw replay TRACE --household FILE`: what the gateway would have done with a trace.

The trace (healthgw/replay/trace.py) is fed to a `VirtualHub` (the same assembled parts as
`healthgw run`) in arrival order on a virtual clock. The result is the timeline of what
people would have seen (events, "are you OK?" prompts, soft SOS notices, texts by role) and
the burden per person: prompts, soft SOS, texts to the family, the clinician and the
ambulance, and hard SOS, with the person-days the trace covers. A care home runs this on its
residents' recorded days before switching alarms on."""

from __future__ import annotations

import itertools
import os
import statistics
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.contract.topics import EventType
from gateway.household.model import Household, load_household
from healthgw.replay.hub import VirtualHub, offline_settings
from healthgw.replay.trace import TraceAck, TraceItem, TraceReading, read_trace

ROLES = ("family", "clinician", "ambulance")
# Events the timeline leaves out: the text queue's own bookkeeping (the texts are listed).
_QUIET = frozenset(
    {
        EventType.NOTIFICATION_SENT,
        EventType.NOTIFICATION_PENDING,
        EventType.NOTIFICATION_FAILED,
    }
)


_OPENING = frozenset({"opened", "reopened", "recurred"})


@dataclass
class Burden:
    days: float = 0.0
    prompts: int = 0
    soft_sos: int = 0
    texts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROLES, 0))
    hard_sos: int = 0
    # Alerts that woke nobody: low priority (shown on the console and in the report), and
    # mild values inside the person's own usual range (information, baseline.py).
    low: int = 0
    usual: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "days": self.days,
            "prompts": self.prompts,
            "soft_sos": self.soft_sos,
            "texts": dict(self.texts),
            "hard_sos": self.hard_sos,
            "low_priority": self.low,
            "usual": self.usual,
        }


@dataclass
class ReplayResult:
    persons: dict[str, Burden]
    timeline: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "persons": {p: b.to_dict() for p, b in self.persons.items()},
            "timeline": self.timeline,
        }


def role_of(household: Household, person: str, phone: str) -> str:
    """Who a text went to, from the household file: family, clinician, ambulance (or other)."""
    p = household.person(person)
    if p is not None and any(c.phone == phone for c in p.emergency_contacts):
        return "family"
    if p is not None and p.clinician is not None and p.clinician.phone == phone:
        return "clinician"
    if any(a.phone == phone for a in household.ambulances):
        return "ambulance"
    return "other"


def person_days(items: Sequence[TraceItem]) -> dict[str, float]:
    """Days each person's readings cover: first to last, plus their usual gap (a day of
    1,440 minute readings is 1.0), at least one hour."""
    times: dict[str, list[float]] = {}
    for it in items:
        if isinstance(it, TraceReading):
            times.setdefault(it.person, []).append(it.ts)
    out = {}
    for person, ts in times.items():
        ts.sort()
        gaps = [b - a for a, b in itertools.pairwise(ts) if b > a]
        gap = statistics.median(gaps) if gaps else 60.0
        out[person] = round(max(ts[-1] - ts[0] + gap, 3600.0) / 86400.0, 2)
    return out


async def replay(
    items: Sequence[TraceItem],
    household_path: Path,
    household: Household,
    *,
    data_dir: Path | None = None,
) -> ReplayResult:
    """Run the trace through a virtual hub; `data_dir` (default: a temporary folder that is
    removed afterwards) receives the gateway's databases."""
    with tempfile.TemporaryDirectory(prefix="healthgw-replay-", dir=_memory_dir()) as tmp:
        settings = offline_settings(household_path, data_dir or Path(tmp) / "data")
        hub = VirtualHub(settings, items[0].arrival)
        await hub.start()
        try:
            for it in items:
                await hub.advance_to(it.arrival)
                if isinstance(it, TraceReading):
                    await hub.reading(it.person, it.device, it.body)
                elif isinstance(it, TraceAck):
                    await hub.ack(it.person, it.device, it.ok, it.prompt_id)
            # Let the last countdowns run out (an unanswered question's window and more).
            await hub.advance_to(items[-1].arrival + settings.escalation_window_s * 3)
        finally:
            texts = await hub.stop()
    return _result(hub, texts, household, person_days(items))


def _result(
    hub: VirtualHub, texts: list[dict[str, Any]], hh: Household, days: dict[str, float]
) -> ReplayResult:
    persons = {p.id: Burden(days=days.get(p.id, 0.0)) for p in hh.persons if p.id in days}
    timeline: list[dict[str, Any]] = []

    def burden(person: str) -> Burden:
        return persons.setdefault(person, Burden())

    for t, e in hub.events:
        if e.type in _QUIET or not e.person:
            continue
        entry: dict[str, Any] = {"t": t, "person": e.person, "kind": "event", "type": str(e.type)}
        for key in ("priority", "why", "transition", "condition", "reason", "trigger"):
            if isinstance(e.data.get(key), str):
                entry[key] = e.data[key]
        timeline.append(entry)
        if e.type == EventType.HARD_SOS:
            burden(e.person).hard_sos += 1
        elif e.type == EventType.ADVISORY and e.data.get("transition") in _OPENING:
            if e.data.get("priority") == "information":
                burden(e.person).usual += 1
            else:
                burden(e.person).low += 1
    for t, topic, payload in hub.published:
        if not topic.endswith("/notify") or not isinstance(payload, dict):
            continue
        person = topic.split("/")[1]
        kind = payload.get("kind")
        if kind == "prompt":
            burden(person).prompts += 1
            timeline.append({"t": t, "person": person, "kind": "prompt",
                             "text": str(payload.get("text", ""))})  # fmt: skip
        elif kind == "soft_sos":
            burden(person).soft_sos += 1
            timeline.append({"t": t, "person": person, "kind": "told",
                             "text": str(payload.get("text", ""))})  # fmt: skip
    for row in texts:
        person = str(row.get("person") or "")
        role = role_of(hh, person, str(row.get("to_phone") or ""))
        if role in ROLES:
            burden(person).texts[role] += 1
        timeline.append({"t": float(row.get("created_at") or 0.0), "person": person,
                         "kind": "text", "role": role,
                         "purpose": str(row.get("purpose") or "")})  # fmt: skip
    timeline.sort(key=lambda x: (x["t"], x["kind"]))
    return ReplayResult(persons, timeline)


def _memory_dir() -> str | None:
    """A RAM-backed folder for the throwaway databases when the system has one (a day's
    replay writes its state and queue many times; the disk would only slow it down)."""
    shm = Path("/dev/shm")  # nosec B108 # a private mkdtemp() is made inside it
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def load(trace: Path, household: Path) -> tuple[list[TraceItem], Household]:
    hh = load_household(household)
    return read_trace(trace, hh), hh
