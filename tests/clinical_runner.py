"""Run a clinical scenario (tests/data/clinical_scenarios.yaml) through the real gateway.

Everything is the product's own code, driven by the replay's `VirtualHub`
(healthgw/replay/hub.py): the household file is written and loaded, readings go through
`Gateway.on_message` (edge validation included), the monitor, the event bus, the escalation
watcher, the SOS and soft-SOS playbooks, the audited tools and the durable text queue. Only
two things are replaced: the broker link's `publish` is recorded instead of sent, and time is a
hand-moved clock (so a 15-minute snooze or a day of late data takes milliseconds), stepped
every 5 s. Texts go to the offline outbox; the text queue is read back to see who was texted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as dtime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import yaml

from gateway.base.clock import ManualClock
from gateway.contract.values import Event
from healthgw.assembly.hub import Assembly
from healthgw.replay.hub import VirtualHub, offline_settings

# Today at local noon: ages come from birth dates relative to today, the monitor reads the
# date from its clock, and the night-time rules (a device that reports no sleep is taken as
# asleep at night, docs/clinical.md §2) must not depend on when the suite runs.
T0 = datetime.combine(
    datetime.now(ZoneInfo("Europe/London")).date(), dtime(12, 0), ZoneInfo("Europe/London")
).timestamp()
PERSON = "pat"
CONTACTS = ("+447700900201", "+447700900202")
CLINICIAN = "+447700900301"
AMBULANCES = ("+447700900901", "+447700900902")
TICK_S = 5.0


def birth_date(age: dict[str, int] | int) -> date:
    today = datetime.now(UTC).date()
    if isinstance(age, int):
        age = {"years": age}
    if "years" in age:
        y = today.year - age["years"]
        day = min(today.day, 28)
        # A month before the birthday in `y`: exactly `years` old today, whatever the date.
        return date(y, today.month, day) - timedelta(days=31)
    if "months" in age:
        return today - timedelta(days=30 * age["months"] + 5)
    return today - timedelta(days=age["days"])


def household(case: dict[str, Any]) -> dict[str, Any]:
    p = case.get("person", {})
    person: dict[str, Any] = {
        "id": PERSON,
        "name": "Pat Doe",
        "birth_date": birth_date(p.get("age", 45)).isoformat(),
        "sex": p.get("sex", "male"),
        "phone": "+447700900101",
        "location": {"latitude": 51.5072, "longitude": -0.1276},
        "conditions": p.get("conditions", []),
        "medications": p.get("medications", []),
        "devices": case.get("devices", [{"id": "watch", "interval_s": 5}]),
        "emergency_contacts": [
            {"name": "Ana Doe", "phone": CONTACTS[0], "relation": "daughter"},
            {"name": "Tom Doe", "phone": CONTACTS[1], "relation": "son"},
        ]
        if p.get("contacts", True)
        else [],
    }
    if p.get("clinician", True):
        person["clinician"] = {"name": "Dr Lee (GP)", "phone": CLINICIAN}
    if "ranges" in p:
        person["ranges"] = p["ranges"]
    if p.get("pregnant"):
        person["pregnant"] = True
    return {
        "timezone": "Europe/London",
        "persons": [person],
        "ambulances": [
            {"id": "AMB-1", "phone": AMBULANCES[0],
             "location": {"latitude": 51.5155, "longitude": -0.0922}},
            {"id": "AMB-2", "phone": AMBULANCES[1],
             "location": {"latitude": 51.4975, "longitude": -0.1357}},
        ],
    }  # fmt: skip


@dataclass
class Result:
    events: list[tuple[float, Event]] = field(default_factory=list)  # (clock time, event)
    published: list[tuple[float, str, Any]] = field(default_factory=list)
    texts: list[dict[str, Any]] = field(default_factory=list)

    def of(self, type_: str) -> list[Event]:
        return [e for _, e in self.events if e.type == type_]

    def notes(self, kind: str) -> list[dict[str, Any]]:
        return [
            p
            for _, t, p in self.published
            if t.endswith("/notify") and isinstance(p, dict) and p.get("kind") == kind
        ]

    def texted(self, role: str) -> list[dict[str, Any]]:
        phones = {"contacts": CONTACTS, "clinician": (CLINICIAN,), "ambulance": AMBULANCES}[role]
        return [t for t in self.texts if t["to_phone"] in phones]


class Runner:
    def __init__(self, case: dict[str, Any], workdir: Path) -> None:
        self.case = case
        self.dir = workdir
        (workdir / "household.yaml").write_text(yaml.safe_dump(household(case)))
        settings = offline_settings(
            workdir / "household.yaml",
            workdir / "data",
            api_token="scenario-admin-token-0123456789",
            gateway_id="scenario",
            **case.get("settings", {}),
        )
        # The gateway as `healthgw run` builds it, on a hand-moved clock (healthgw/replay/hub.py).
        self.hub = VirtualHub(settings, T0)
        self._texts: list[dict[str, Any]] = []
        self.seq = 0

    @property
    def now(self) -> float:
        return self.hub.now() - T0

    @property
    def result(self) -> Result:
        """What happened so far, in seconds from the start of the case (as the expectations
        are written); the texts as of the last stop."""
        return Result(
            [(t - T0, e) for t, e in self.hub.events],
            [(t - T0, top, p) for t, top, p in self.hub.published],
            list(self._texts),
        )

    # The hub's parts, for tests that drive the gateway beside the steps.
    @property
    def asm(self) -> Assembly | None:
        return self.hub.asm

    @property
    def clock(self) -> ManualClock:
        return self.hub.clock

    async def settle(self) -> None:
        await self.hub.settle()

    async def start(self) -> None:
        await self.hub.start()

    async def stop(self) -> None:
        self._texts = await self.hub.stop()

    async def advance_to(self, t: float) -> None:
        """Move the clock to T0 + t, ticking every TICK_S on the way."""
        await self.hub.walk_to(T0 + t, TICK_S)

    async def reading(self, device: str, vitals: dict[str, Any], ts: float) -> None:
        self.seq += 1
        # A list cycles through its values, one per reading (real pulses vary).
        values = {k: v[self.seq % len(v)] if isinstance(v, list) else v for k, v in vitals.items()}
        body = json.dumps({"ts": T0 + ts, "seq": self.seq, **values}).encode()
        await self.hub.reading(PERSON, device, body)

    async def run(self) -> Result:
        await self.start()
        try:
            for step in self.case["steps"]:
                await self.step(step)
        finally:
            if self.hub.asm is not None:
                await self.stop()
        return self.result

    async def step(self, s: dict[str, Any]) -> None:
        device = s.get("device", self._first_device())
        if "stream" in s:
            st = s["stream"]
            # `each`: several devices reporting at the same moments (a watch and an oximeter).
            each = s.get("each") or [{"device": device, "vitals": s["vitals"]}]
            t = float(st["from"])
            while t < float(st["to"]):
                await self.advance_to(t)
                for e in each:
                    await self.reading(e.get("device", device), e["vitals"], t)
                t += float(st["every"])
            return
        if "sync" in s:  # a burst of old readings, all arriving now
            sy = s["sync"]
            await self.advance_to(float(sy["at"]))
            start = float(sy["at"]) - float(sy["span"])
            n = int((float(sy["span"]) - float(sy.get("end_ago", 0))) // float(sy["every"]))
            for i in range(n):
                await self.reading(device, s["vitals"], start + i * float(sy["every"]))
            return
        await self.advance_to(float(s.get("at", s.get("until", self.now))))
        if "vitals" in s:
            await self.reading(device, s["vitals"], self.now - float(s.get("late", 0)))
        if "ack" in s:
            await self.hub.ack(PERSON, device, bool(s["ack"]))
        if s.get("restart"):
            await self.stop()
            if "down_for" in s:
                self.hub.clock.advance(float(s["down_for"]))
            await self.start()
            await self.advance_to(self.now)
        if s.get("all_clear"):
            await self.hub.gateway.api.clear_alerts(PERSON, "scenario")
            await self.hub.settle()

    def _first_device(self) -> str:
        return str(self.case.get("devices", [{"id": "watch"}])[0]["id"])


# --- expectations --------------------------------------------------------------------------------

_SPEC = re.compile(r"^\s*(>=|<=)?\s*(\d+)\s*(?:\.\.\s*(\d+))?\s*$")


def count_ok(n: int, spec: int | str) -> bool:
    if isinstance(spec, bool):
        return (n > 0) == spec
    if isinstance(spec, int):
        return n == spec
    m = _SPEC.match(spec)
    if not m:
        raise ValueError(f"bad count spec {spec!r}")
    op, a, b = m.group(1), int(m.group(2)), m.group(3)
    if b is not None:
        return a <= n <= int(b)
    return n >= a if op == ">=" else n <= a if op == "<=" else n == a


def alerts(r: Result) -> list[Event]:
    return r.of("soft_sos") + r.of("advisory") + r.of("alert_updated")


def check(case: dict[str, Any], r: Result) -> list[str]:
    """Every expectation that failed, as readable lines (empty: the case passed)."""
    exp = case["expect"]
    bad: list[str] = []
    for type_, spec in (exp.get("events") or {}).items():
        n = len(r.of(type_))
        if not count_ok(n, spec):
            bad.append(f"events {type_}: {n}, expected {spec}")
    for key, kind in (("prompts", "prompt"), ("told", "soft_sos")):
        if key in exp and not count_ok(len(r.notes(kind)), exp[key]):
            bad.append(f"{key}: {len(r.notes(kind))}, expected {exp[key]}")
    for role, spec in (exp.get("texts") or {}).items():
        n = len(r.texted(role))
        if not count_ok(n, spec):
            bad.append(f"texts to {role}: {n}, expected {spec}")
    # Low-priority alerts (advisory) open too: recorded and shown, nobody told.
    opened = {c for e in r.of("soft_sos") + r.of("advisory") for c in e.data.get("conditions", [])}
    for c in exp.get("opened", []):
        if c not in opened:
            bad.append(f"condition {c} never opened (opened: {sorted(opened)})")
    for c in exp.get("not_opened", []):
        if c in opened:
            bad.append(f"condition {c} opened")
    cleared = {e.data.get("condition") for e in r.of("alert_cleared")}
    for c in exp.get("cleared", []):
        if c not in cleared:
            bad.append(f"condition {c} never cleared (cleared: {sorted(map(str, cleared))})")
    for c in exp.get("not_cleared", []):
        if c in cleared:
            bad.append(f"condition {c} cleared")
    if "tier" in exp:
        tiers = [e.data["response"]["tier"] for e in alerts(r)
                 if e.data.get("notify") or e.type == "advisory"]  # fmt: skip
        got = max(tiers, default=0)
        if got != exp["tier"]:
            bad.append(f"highest response tier {got}, expected {exp['tier']}")
    if "alarm_within" in exp:
        after, within = exp["alarm_within"]["after"], exp["alarm_within"]["within"]
        # The first alert of any priority (a low-priority one is recorded, not told).
        times = [t for t, e in r.events if e.type in ("soft_sos", "advisory") and t >= after]
        if not times or times[0] - after > within:
            bad.append(f"first soft_sos after {after}s at {times[:1]}, expected within {within}s")
    if "why_contains" in exp:
        whys = " | ".join(str(e.data.get("why", "")) for e in alerts(r))
        if exp["why_contains"] not in whys:
            bad.append(f"no alert says {exp['why_contains']!r} (why: {whys[:300]!r})")
    if exp.get("no_news2") and any(e.data.get("news2") for e in alerts(r)):
        bad.append("an alert carried a NEWS2 score")
    return bad
