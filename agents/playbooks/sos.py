"""Hard SOS, End SOS and Soft SOS: fixed playbooks run by deterministic code (never a model).

Every step is journaled durably (`sos_runs`) before the next one starts. Each step is a pure
function of the run's inputs and the observations recorded so far, so a run interrupted by a
crash is resumed by replaying the journal: completed steps are reused, the next one is rebuilt
identically, and texts carry keys derived from (run, step, recipient) that the durable
TextQueue deduplicates. Texts are exactly-once; user notifications (MQTT) at-least-once.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal, Protocol
from zoneinfo import ZoneInfo

from agents.playbooks.soft_texts import (
    clinician_text,
    family_text,
    soft_message,
    soft_user_turn,
    unanswered_text,
)
from agents.tools.registry import ToolContext, ToolError, ToolRegistry
from agents.trajectory import ToolCall, Trajectory
from gateway.clock import Clock
from gateway.contract import EventType, NotifyKind
from gateway.db import Database
from gateway.errors import HealthGWError
from gateway.household import Household, Person
from gateway.model import Event

log = logging.getLogger(__name__)

ACTOR = "sos_playbook"
Kind = Literal["hard", "end", "soft"]
Status = Literal["running", "completed", "failed"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS sos_runs (
    run_id          TEXT PRIMARY KEY,
    person          TEXT NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('hard', 'end', 'soft')),
    trigger         TEXT NOT NULL,
    device          TEXT,
    state           TEXT NOT NULL CHECK (state IN ('open', 'closed')),
    status          TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
    step            INTEGER NOT NULL DEFAULT 0,
    location        TEXT,
    ambulance_id    TEXT,
    ambulance_phone TEXT,
    ends_run        TEXT,
    params          TEXT NOT NULL DEFAULT '{}',
    trajectory      TEXT NOT NULL,
    started_at      REAL NOT NULL,
    updated_at      REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS sos_runs_status ON sos_runs (status);
-- At most one open hard SOS per person, whatever the code above does.
CREATE UNIQUE INDEX IF NOT EXISTS sos_runs_one_open
    ON sos_runs (person) WHERE kind = 'hard' AND state = 'open';
"""


class SosError(HealthGWError):
    """An SOS request that cannot be acted on (unknown person, journal out of step)."""


class TrajectorySink(Protocol):
    """Store.save_trajectory fits (an awaitable return is awaited)."""

    def __call__(
        self,
        run_id: str,
        *,
        person: str,
        category: str,
        trajectory: dict[str, Any],
        status: str,
        started_at: float,
        updated_at: float,
    ) -> object: ...


EmitEvent = Callable[[Event], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class SosRun:
    run_id: str
    person: str
    kind: Kind
    trigger: str
    device: str | None
    state: Literal["open", "closed"]
    status: Status
    step: int  # index of the next playbook step
    location: tuple[float, float] | None  # the press's fix, then the resolved one
    ambulance_id: str | None
    ambulance_phone: str | None
    ends_run: str | None  # an end run: the hard run it closes
    params: Mapping[str, Any]  # playbook inputs (soft: abnormal, advice, severity, alert_id)
    trajectory: Mapping[str, Any]
    started_at: float
    updated_at: float

    def as_dict(self) -> dict[str, Any]:
        loc = self.location
        return {
            "run_id": self.run_id,
            "person": self.person,
            "kind": self.kind,
            "trigger": self.trigger,
            "device": self.device,
            "state": self.state,
            "status": self.status,
            "step": self.step,
            "location": {"latitude": loc[0], "longitude": loc[1]} if loc else None,
            "ambulance_id": self.ambulance_id,
            "ambulance_phone": self.ambulance_phone,
            "ends_run": self.ends_run,
            "trajectory": json.loads(json.dumps(self.trajectory)),
            "started_at": self.started_at,
            "updated_at": self.updated_at,
        }


# --- journal ---------------------------------------------------------------------------------


class SosJournal:
    """The `sos_runs` table. Every write is durable (fsync) and followed by the trajectory
    sink, so the Store's copy is never behind a step the texts already acted on."""

    _COLS = (
        "run_id, person, kind, trigger, device, state, status, step, location, ambulance_id,"
        " ambulance_phone, ends_run, params, trajectory, started_at, updated_at"
    )

    def __init__(self, db: Database, *, save_trajectory: TrajectorySink | None = None) -> None:
        self._db = db
        self._sink = save_trajectory
        db.ensure_schema(SCHEMA)

    async def create(self, run: SosRun) -> None:
        with self._db.tx(durable=True) as c:
            c.execute(
                f"INSERT INTO sos_runs ({self._COLS}) VALUES ({','.join('?' * 16)})", _row(run)
            )
        await self._publish(run)

    async def save(self, run: SosRun) -> None:
        with self._db.tx(durable=True) as c:
            self._update(c, run)
        await self._publish(run)

    async def finish_end(self, end_run: SosRun) -> None:
        """Complete an end run and close the hard run it ends, in one transaction."""
        with self._db.tx(durable=True) as c:
            self._update(c, end_run)
            c.execute(
                "UPDATE sos_runs SET state = 'closed', updated_at = ? WHERE run_id = ?",
                (end_run.updated_at, end_run.ends_run),
            )
        await self._publish(end_run)

    def get(self, run_id: str) -> SosRun | None:
        return self._one("SELECT * FROM sos_runs WHERE run_id = ?", (run_id,))

    def open_hard(self, person: str) -> SosRun | None:
        return self._one(
            "SELECT * FROM sos_runs WHERE person = ? AND kind = 'hard' AND state = 'open'",
            (person,),
        )

    def running_end(self, hard_run_id: str) -> SosRun | None:
        return self._one(
            "SELECT * FROM sos_runs WHERE kind = 'end' AND ends_run = ? AND status = 'running'",
            (hard_run_id,),
        )

    def unfinished(self) -> list[SosRun]:
        rows = self._db.conn().execute(
            "SELECT * FROM sos_runs WHERE status = 'running' ORDER BY started_at, rowid"
        )
        return [_from_row(r) for r in rows]

    def assigned_ambulance(self, person: str) -> tuple[str, str] | None:
        run = self.open_hard(person)
        if run is None or run.ambulance_id is None or run.ambulance_phone is None:
            return None
        return run.ambulance_id, run.ambulance_phone

    def _one(self, sql: str, args: tuple[Any, ...]) -> SosRun | None:
        row = self._db.conn().execute(sql, args).fetchone()
        return _from_row(row) if row is not None else None

    @staticmethod
    def _update(c: Any, run: SosRun) -> None:
        row = _row(run)
        sets = ", ".join(f"{col.strip()} = ?" for col in SosJournal._COLS.split(",")[1:])
        c.execute(f"UPDATE sos_runs SET {sets} WHERE run_id = ?", (*row[1:], run.run_id))

    async def _publish(self, run: SosRun) -> None:
        if self._sink is None:
            return
        try:
            out = self._sink(
                run.run_id,
                person=run.person,
                category=_PLAYBOOKS[run.kind].category,
                trajectory=dict(run.trajectory),
                status=run.status,
                started_at=run.started_at,
                updated_at=run.updated_at,
            )
            if inspect.isawaitable(out):
                await out
        except Exception:
            # The journal row is the source of truth; the Store copy catches up next step.
            log.exception("saving trajectory of sos run %s failed", run.run_id)


def _row(run: SosRun) -> tuple[Any, ...]:
    loc = json.dumps(list(run.location)) if run.location else None
    return (
        run.run_id, run.person, run.kind, run.trigger, run.device, run.state, run.status,
        run.step, loc, run.ambulance_id, run.ambulance_phone, run.ends_run,
        json.dumps(run.params), json.dumps(run.trajectory), run.started_at, run.updated_at,
    )  # fmt: skip


def _from_row(r: Any) -> SosRun:
    loc = json.loads(r["location"]) if r["location"] else None
    return SosRun(
        run_id=r["run_id"],
        person=r["person"],
        kind=r["kind"],
        trigger=r["trigger"],
        device=r["device"],
        state=r["state"],
        status=r["status"],
        step=r["step"],
        location=(float(loc[0]), float(loc[1])) if loc else None,
        ambulance_id=r["ambulance_id"],
        ambulance_phone=r["ambulance_phone"],
        ends_run=r["ends_run"],
        params=json.loads(r["params"]),
        trajectory=json.loads(r["trajectory"]),
        started_at=r["started_at"],
        updated_at=r["updated_at"],
    )


# --- playbooks -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    reason: str
    action: str
    tool: str
    params: dict[str, Any]


# (run, person, completed calls before this step) -> the step, or None to skip it.
Builder = Callable[[SosRun, Person, Sequence[ToolCall]], Step | None]


@dataclass(frozen=True, slots=True)
class Playbook:
    category: str
    notify_kind: NotifyKind
    steps: tuple[Builder, ...]
    end_reason: Callable[[Sequence[ToolCall]], str]


def plan(
    pb: Playbook, run: SosRun, person: Person, done: Sequence[ToolCall]
) -> tuple[int, Step] | None:
    """The next (playbook index, step) after `done`, or None when only <END> is left.
    Replays the builders over the recorded calls, so a resumed run rebuilds the same step."""
    j = 0
    for i, build in enumerate(pb.steps):
        step = build(run, person, done[:j])
        if step is None:
            continue
        if j < len(done):
            if done[j].tool != step.tool:
                raise SosError(f"run {run.run_id}: journal does not match the playbook")
            j += 1
            continue
        return i, step
    return None


def _ok(done: Sequence[ToolCall], tool: str, **params: Any) -> Any:
    """The result of the last successful `tool` call whose parameters include `params`."""
    for c in reversed(done):
        if c.tool == tool and c.ok and all(c.parameters.get(k) == v for k, v in params.items()):
            return c.result
    return None


def _tried(done: Sequence[ToolCall], tool: str, **params: Any) -> bool:
    return any(
        c.tool == tool and all(c.parameters.get(k) == v for k, v in params.items()) for c in done
    )


def _maps(loc: tuple[float, float]) -> str:
    return f"{loc[0]:.5f}, {loc[1]:.5f} (https://maps.google.com/?q={loc[0]:.5f},{loc[1]:.5f})"


def _where(person: Person, done: Sequence[ToolCall]) -> tuple[float, float]:
    loc = _ok(done, "get_location")
    if isinstance(loc, Mapping):
        return float(loc["latitude"]), float(loc["longitude"])
    return person.location.latitude, person.location.longitude  # home, if lookup failed


@dataclass(frozen=True, slots=True)
class _Trigger:
    user_turn: str  # the trajectory's user state
    reason: str  # the first planner reason
    opening: str  # the first message to the user
    what: str  # what happened, as told to the ambulance and contacts


_PRESSED = _Trigger(
    "SOS button pressed",
    "The user pressed SOS; tell them help is being arranged.",
    "SOS received. I am texting the nearest ambulance and your emergency contacts now.",
    "pressed SOS",
)
_OPENING = "I am texting the nearest ambulance and your emergency contacts now."
_UNANSWERED = _Trigger(
    "Soft SOS unanswered: escalated to hard SOS",
    "The health alert went unanswered; tell the user help is being arranged.",
    f"You did not answer the health alert, so {_OPENING}",
    "did not answer a health alert",
)
_FALL = _Trigger(
    "Fall detected and unanswered: escalated to hard SOS",
    "A fall went unanswered; tell the user help is being arranged.",
    f"You did not answer after a fall, so {_OPENING}",
    "fell and did not answer",
)
# The triggers gateway/app.py and gateway/escalation.py pass; any other reads as a press.
_TRIGGERS: dict[str, _Trigger] = {
    "button": _PRESSED,
    "api": _Trigger(
        "SOS requested through the gateway",
        "An SOS was raised for the user; tell them help is being arranged.",
        f"An SOS was raised for you. {_OPENING}",
        "needs help (SOS raised at the home gateway)",
    ),
    "soft_sos_unanswered": _UNANSWERED,
    "escalation": _UNANSWERED,
    "fall_no_movement": _FALL,
    "implausible_unanswered": _Trigger(
        "Vital sign unreadable and unanswered: escalated to hard SOS",
        "The device lost a vital sign and the user did not answer; tell them help is coming.",
        f"You did not answer after your device lost your vital signs, so {_OPENING}",
        "did not answer after their device stopped reading a vital sign (possible collapse)",
    ),
    "fall": _FALL,
    "user_not_ok": _Trigger(
        "User answered not OK to a soft SOS: escalated to hard SOS",
        "The user said they are not OK; tell them help is being arranged.",
        f"You said you are not OK, so {_OPENING}",
        "reported not being OK after a health alert",
    ),
}


def _trigger(run: SosRun) -> _Trigger:
    return _TRIGGERS.get(run.trigger, _PRESSED)


def _hard_notify(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    t = _trigger(run)
    return Step(
        t.reason,
        "Call notify_user to tell the user help is on the way.",
        "notify_user",
        {"user_id": p.id, "message": t.opening},
    )


def _hard_location(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    return Step(
        "The ambulance needs to know where the user is.",
        "Call get_location.",
        "get_location",
        {},
    )


def _hard_search(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    lat, lon = _where(p, done)
    return Step(
        "Location known; find the nearest ambulance.",
        "Call search_ambulance with the user's location.",
        "search_ambulance",
        {"location": {"latitude": lat, "longitude": lon}},
    )


def _hard_text_ambulance(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step | None:
    amb = _ok(done, "search_ambulance")
    if amb is None:
        return None  # nothing to text; the contacts step says so
    what = _trigger(run).what
    return Step(
        f"Ambulance {amb['ambulance_id']} is nearest; text it the user's name, id and location.",
        "Call send_message to the ambulance.",
        "send_message",
        {
            "text": f"EMERGENCY: {p.name} (user ID {p.id}) {what} and needs an ambulance. "
            f"Location: {_maps(_where(p, done))}",
            "phone_no": amb["phone_no"],
        },
    )


def _hard_text_contacts(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    amb = _ok(done, "search_ambulance")
    texted = amb is not None and _ok(done, "send_message", phone_no=amb["phone_no"]) is True
    what = _trigger(run).what
    if texted:
        reason = "The ambulance has been texted; the emergency contacts must know too."
        help_ = f"Ambulance {amb['ambulance_id']} has been texted and is on its way."
    else:
        reason = "No ambulance could be texted; the emergency contacts must call for help."
        help_ = "No ambulance could be texted automatically: please call emergency services."
    return Step(
        reason,
        "Call send_message to all emergency contacts.",
        "send_message",
        {
            "text": f"SOS: {p.name} (user ID {p.id}) {what}. Location: {_maps(_where(p, done))}. "
            + help_,
            "to_emergency_contacts": True,
        },
    )


def _hard_summary(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    amb = _ok(done, "search_ambulance")
    parts: list[str] = []
    if amb is not None and _ok(done, "send_message", phone_no=amb["phone_no"]) is True:
        parts.append(f"Ambulance {amb['ambulance_id']} has been texted your location.")
    else:
        parts.append("No ambulance could be texted automatically. Call emergency services now.")
    if _ok(done, "send_message", to_emergency_contacts=True) is True:
        # No names: the message must follow from the trajectory alone (replayable).
        parts.append("Your emergency contacts have been texted.")
    else:
        parts.append("Your emergency contacts could not be texted.")
    return Step(
        "Texts are sent; tell the user what was done.",
        "Call notify_user with what was done.",
        "notify_user",
        {"user_id": p.id, "message": " ".join(parts)},
    )


def _end_notify(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    return Step(
        "The user ended the SOS; tell them it is being called off.",
        "Call notify_user to say the SOS is being ended.",
        "notify_user",
        {
            "user_id": p.id,
            "message": "Ending your SOS: I am telling the ambulance and your emergency contacts "
            "that help is no longer needed.",
        },
    )


def _end_assigned(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    return Step(
        "Find the ambulance that was sent so it can stand down.",
        "Call get_assigned_ambulance.",
        "get_assigned_ambulance",
        {"user_id": p.id},
    )


def _end_text_ambulance(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step | None:
    amb = _ok(done, "get_assigned_ambulance")
    if amb is None:
        return None
    return Step(
        f"Ambulance {amb['ambulance_id']} was assigned; tell it help is no longer needed.",
        "Call send_message to the ambulance.",
        "send_message",
        {
            "text": f"SOS CANCELLED: {p.name} (user ID {p.id}) no longer needs an ambulance. "
            "Please stand down.",
            "phone_no": amb["phone_no"],
        },
    )


def _end_text_contacts(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    amb = _ok(done, "get_assigned_ambulance")
    told = amb is not None and _ok(done, "send_message", phone_no=amb["phone_no"]) is True
    extra = " The ambulance has been told it is no longer needed." if told else ""
    return Step(
        "Tell the emergency contacts the emergency is over.",
        "Call send_message to all emergency contacts.",
        "send_message",
        {
            "text": f"{p.name} (user ID {p.id}) has ended the SOS: the emergency is over." + extra,
            "to_emergency_contacts": True,
        },
    )


def _end_summary(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step:
    amb = _ok(done, "get_assigned_ambulance")
    parts = ["Your SOS has ended."]
    if amb is not None and _ok(done, "send_message", phone_no=amb["phone_no"]) is True:
        parts.append(f"Ambulance {amb['ambulance_id']} was told it is no longer needed.")
    elif _tried(done, "get_assigned_ambulance"):
        parts.append("No ambulance could be told; call emergency services to cancel if needed.")
    if _ok(done, "send_message", to_emergency_contacts=True) is True:
        parts.append("Your emergency contacts were told the emergency is over.")
    else:
        parts.append("Your emergency contacts could not be texted.")
    return Step(
        "Texts are sent; tell the user the SOS is over.",
        "Call notify_user with what was done.",
        "notify_user",
        {"user_id": p.id, "message": " ".join(parts)},
    )


def _end_reason(done: Sequence[ToolCall]) -> str:
    if all(c.ok for c in done):
        return "Everything is done and the user has been told."
    return "Done; the steps that failed are recorded above."


# --- soft SOS ----------------------------------------------------------------------------------
# The monitor decided who is told (params["response"]); these steps only carry it out. A run in
# "unanswered" mode texts the contacts that the wearer did not answer "are you OK?".


def _response(run: SosRun) -> Mapping[str, Any]:
    r = run.params.get("response")
    return r if isinstance(r, Mapping) else {"tell_wearer": True}


def _soft_notify(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step | None:
    prm = run.params
    if prm.get("mode") == "unanswered" or not _response(run).get("tell_wearer", True):
        return None
    return Step(
        "Vitals are abnormal; the user must be told which ones and what to do.",
        "Call notify_user with the abnormal vitals and advice.",
        "notify_user",
        {
            "user_id": p.id,
            "message": soft_message(prm["abnormal"], str(prm["advice"]), str(prm["severity"])),
        },
    )


def _soft_contacts(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step | None:
    """The family; with no emergency contacts, the care line stands in (someone must be told)."""
    prm = run.params
    if p.emergency_contacts:
        to: dict[str, Any] = {"to_emergency_contacts": True}
        who = "the emergency contacts"
    elif p.clinician is not None:
        to, who = {"phone_no": p.clinician.phone}, "the care line (no emergency contacts)"
    else:
        return None
    if prm.get("mode") == "unanswered":
        return Step(
            f"The user did not answer the health alert; {who} must check on them.",
            f"Call send_message to {who}.",
            "send_message",
            {"text": unanswered_text(p, prm), **to},
        )
    response = _response(run)
    if not response.get("contacts_now"):
        return None
    if not p.emergency_contacts and response.get("clinician_now"):
        return None  # the care line is texted by the next step
    return Step(
        "The vitals call for the family now, not only the user.",
        f"Call send_message to {who}.",
        "send_message",
        {"text": family_text(p, prm), **to},
    )


def _soft_clinician(run: SosRun, p: Person, done: Sequence[ToolCall]) -> Step | None:
    if run.params.get("mode") == "unanswered" or p.clinician is None:
        return None
    if not _response(run).get("clinician_now"):
        return None
    return Step(
        "The values are in the intervention range: hand over to the user's clinician.",
        "Call send_message to the care line.",
        "send_message",
        {"text": clinician_text(p, run.params), "phone_no": p.clinician.phone},
    )


def _soft_end(done: Sequence[ToolCall]) -> str:
    if not done:
        return "Nobody could be told: there are no emergency contacts and no care line."
    if not all(c.ok for c in done):
        return _end_reason(done)
    told = [c.tool for c in done]
    if told == ["notify_user"]:
        return "The user has been informed."  # the paper's wording for the plain case
    if "notify_user" not in told:
        return "The emergency contacts have been told."
    return "The user and the people who must know have been told."


_PLAYBOOKS: dict[str, Playbook] = {
    "hard": Playbook(
        "hard_sos",
        "sos",
        (
            _hard_notify,
            _hard_location,
            _hard_search,
            _hard_text_ambulance,
            _hard_text_contacts,
            _hard_summary,
        ),
        _end_reason,
    ),
    "end": Playbook(
        "end_sos",
        "sos_end",
        (_end_notify, _end_assigned, _end_text_ambulance, _end_text_contacts, _end_summary),
        _end_reason,
    ),
    "soft": Playbook(
        "soft_sos",
        "soft_sos",
        (_soft_notify, _soft_contacts, _soft_clinician),
        _soft_end,
    ),
}


def trigger_for_turn(user_turn: str) -> str:
    """The trigger whose user state is `user_turn` (what a recorded trajectory shows)."""
    for key, t in _TRIGGERS.items():
        if t.user_turn.casefold() == user_turn.strip().casefold():
            return key
    return "button"


def replay_step(
    kind: Kind,
    person: Person,
    done: Sequence[ToolCall],
    *,
    trigger: str = "button",
    params: Mapping[str, Any] | None = None,
) -> Step | None:
    """The playbook's next step after `done` (None: only <END> is left), for a run that is not
    in the journal (teacher-forced evaluation). A history that left the playbook's path is
    matched by tool only as far as it agrees."""
    now = 0.0
    run = SosRun(
        run_id="replay", person=person.id, kind=kind, trigger=trigger, device=None,
        state="open", status="running", step=0, location=None, ambulance_id=None,
        ambulance_phone=None, ends_run=None, params=dict(params or {}), trajectory={},
        started_at=now, updated_at=now,
    )  # fmt: skip
    pb = _PLAYBOOKS[kind]
    try:
        got = plan(pb, run, person, done)
    except SosError:
        return None
    return None if got is None else got[1]


# --- runner ----------------------------------------------------------------------------------


class SosRunner:
    """gateway.ports.SosHandler, plus soft SOS and crash recovery."""

    def __init__(
        self,
        registry: ToolRegistry,
        journal: SosJournal,
        household: Household,
        emit_event: EmitEvent,
        clock: Clock,
    ) -> None:
        self._registry = registry
        self._journal = journal
        self._household = household
        self._emit_event = emit_event
        self._clock = clock
        self._locks: dict[str, asyncio.Lock] = {}
        self._emits: set[asyncio.Task[None]] = set()

    async def start(
        self, person: str, *, device: str | None, location: tuple[float, float] | None, trigger: str
    ) -> bool:
        """Open a hard SOS and run it. False when one is already open: nothing is re-texted and
        the user is told help is already on the way."""
        p = self._person(person)
        async with self._lock(person):
            current = self._read(lambda: self._journal.open_hard(person))
            if current is not None:
                if current.status == "running":  # interrupted and not yet resumed
                    await self._drive(current)
                else:
                    await self._tell_already_open(p, current)
                return False
            user_turn = _TRIGGERS.get(trigger, _PRESSED).user_turn
            run = self._new_run(p, "hard", trigger, device, user_turn, location=location)
            await self._create(run)
            await self._drive(run)
            return True

    async def end(self, person: str, *, device: str | None, trigger: str) -> bool:
        """Run End SOS for the open hard SOS. False when none is open."""
        p = self._person(person)
        async with self._lock(person):
            hard = self._read(lambda: self._journal.open_hard(person))
            if hard is None:
                return False
            if hard.status == "running":  # finish what was interrupted before standing down
                hard = await self._drive(hard)
            run = self._read(lambda: self._journal.running_end(hard.run_id))
            if run is None:
                turn = "End SOS button pressed" if trigger == "button" else "End SOS requested"
                run = self._new_run(p, "end", trigger, device, turn, ends_run=hard.run_id)
                await self._create(run)
            await self._drive(run)
            return True

    async def soft(
        self,
        person: str,
        abnormal: Mapping[str, Mapping[str, Any]],
        advice: str,
        *,
        severity: str,
        alert_id: str | None,
        response: Mapping[str, Any] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> str:
        """Tell the user which vitals are abnormal and what to do. Returns the run id.
        `abnormal`: vital -> {value, unit, class, range (or normal): [low, high]}; entries of
        class "normal" are left out of the list. `alert_id` is recorded with the run only: the
        notification carries no prompt_id, because the escalation watcher owns the "are you
        OK?" prompt and matches acks by its own prompt ids."""
        p = self._person(person)
        plain = json.loads(json.dumps({k: dict(v) for k, v in abnormal.items()}, default=str))
        params = {"abnormal": plain, "advice": advice, "severity": severity, "alert_id": alert_id,
                  "response": dict(response or {"tell_wearer": True}),
                  **json.loads(json.dumps(dict(extra or {}), default=str))}  # fmt: skip
        async with self._lock(person):
            run = self._new_run(p, "soft", "monitor", None, soft_user_turn(plain), params=params)
            await self._create(run)
            await self._drive(run)
            return run.run_id

    async def unanswered(self, person: str, *, prompt_id: str, reason: str, summary: str) -> bool:
        """The wearer did not answer "are you OK?": text the emergency contacts (the
        escalation watcher's ContactNotifier). Journaled like any run: exactly once."""
        p = self._person(person)
        params = {"mode": "unanswered", "prompt_id": prompt_id, "reason": reason,
                  "summary": summary, "abnormal": {}, "advice": "", "severity": "urgent"}  # fmt: skip
        async with self._lock(person):
            turn = "Soft SOS unanswered: texting the emergency contacts"
            run = self._new_run(p, "soft", "unanswered", None, turn, params=params)
            await self._create(run)
            run = await self._drive(run)
            # True only if someone was texted: otherwise the watcher sends an ambulance.
            done = Trajectory.from_dict(run.trajectory).calls()
            return any(c.tool == "send_message" and c.ok for c in done)

    async def resume(self) -> list[str]:
        """Continue every run a crash interrupted (per person in start order; persons in
        parallel). Returns the run ids resumed."""
        by_person: dict[str, list[str]] = {}
        for run in self._journal.unfinished():
            by_person.setdefault(run.person, []).append(run.run_id)
        resumed: list[str] = []

        async def one(person: str, run_ids: list[str]) -> None:
            async with self._lock(person):
                for run_id in run_ids:
                    run = self._journal.get(run_id)  # a press may have finished it meanwhile
                    if run is not None and run.status == "running":
                        log.info("resuming sos run %s at step %d", run_id, run.step)
                        await self._drive(run)
                        resumed.append(run_id)

        results = await asyncio.gather(
            *(one(p, ids) for p, ids in by_person.items()), return_exceptions=True
        )
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, Exception):
                raise r
            if isinstance(r, Exception):
                log.error("resuming sos runs failed: %s", type(r).__name__)
        return resumed

    async def drain(self) -> None:
        """Wait for the events already handed to emit_event (call on shutdown)."""
        while self._emits:
            await asyncio.gather(*list(self._emits), return_exceptions=True)

    def open_sos(self, person: str) -> dict[str, Any] | None:
        run = self._journal.open_hard(person)
        return run.as_dict() if run is not None else None

    # --- internals --------------------------------------------------------------------------

    def _person(self, person: str) -> Person:
        p = self._household.person(person)
        if p is None:
            raise SosError("unknown person")
        return p

    def _lock(self, person: str) -> asyncio.Lock:
        return self._locks.setdefault(person, asyncio.Lock())

    def _new_run(
        self,
        p: Person,
        kind: Kind,
        trigger: str,
        device: str | None,
        user_turn: str,
        *,
        location: tuple[float, float] | None = None,
        ends_run: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> SosRun:
        now = self._clock.now()
        stamp = (
            datetime.fromtimestamp(now, ZoneInfo(self._household.timezone))
            .replace(tzinfo=None)
            .isoformat(timespec="seconds")
        )
        traj = Trajectory(p.id, p.name, stamp, category=_PLAYBOOKS[kind].category)
        traj.user(user_turn)
        return SosRun(
            run_id=uuid.uuid4().hex,
            person=p.id,
            kind=kind,
            trigger=trigger,
            device=device,
            state="open",
            status="running",
            step=0,
            location=location,
            ambulance_id=None,
            ambulance_phone=None,
            ends_run=ends_run,
            params=dict(params or {}),
            trajectory=traj.to_dict(),
            started_at=now,
            updated_at=now,
        )

    async def _drive(self, run: SosRun) -> SosRun:
        """Run `run` from its next step to <END>. Tool errors become observations and the run
        goes on (contacts are still texted when no ambulance was found). Cancellation and
        crashes propagate untouched: the journal then holds the run for resume()."""
        pb = _PLAYBOOKS[run.kind]
        person = self._household.person(run.person)
        try:
            if person is None:
                raise SosError("person no longer in the household")
            traj = Trajectory.from_dict(run.trajectory)
            if run.kind == "hard" and _tried(traj.calls(), "search_ambulance"):
                await self._emit_hard(run)  # it may have been lost in the crash (stable id)
            while (nxt := plan(pb, run, person, traj.calls())) is not None:
                index, step = nxt
                run = await self._execute(run, pb, traj, index, step)
                if run.kind == "hard" and step.tool == "search_ambulance":
                    await self._emit_hard(run)
            return await self._finish(run, pb, traj)
        except Exception as exc:
            log.error("sos run %s failed: %s", run.run_id, type(exc).__name__)
            run = replace(run, status="failed", updated_at=self._clock.now())
            await self._save(run)
            return run

    async def _execute(
        self, run: SosRun, pb: Playbook, traj: Trajectory, index: int, step: Step
    ) -> SosRun:
        ctx = ToolContext(
            actor=ACTOR,
            person=run.person,
            run_id=run.run_id,
            step=index,
            notify_kind=pb.notify_kind,
            location=run.location,
            rate_limited=False,  # see ToolContext.rate_limited
        )
        try:
            result = await self._registry.call(
                step.tool, step.params, ctx=ctx, allowed=(step.tool,)
            )
            traj.step(step.reason, step.action, step.tool, step.params, result)
        except ToolError as exc:
            log.warning(
                "sos run %s step %d (%s): %s", run.run_id, index, step.tool, type(exc).__name__
            )
            error = {"type": type(exc).__name__, "message": str(exc)}
            traj.step(step.reason, step.action, step.tool, step.params, None, error=error)
            result = None
        changes: dict[str, Any] = {}
        if step.tool == "get_location" and isinstance(result, Mapping):
            changes["location"] = (float(result["latitude"]), float(result["longitude"]))
        if step.tool in ("search_ambulance", "get_assigned_ambulance") and isinstance(
            result, Mapping
        ):
            changes["ambulance_id"] = result["ambulance_id"]
            changes["ambulance_phone"] = result["phone_no"]
        run = replace(
            run,
            step=index + 1,
            trajectory=traj.to_dict(),
            updated_at=self._clock.now(),
            **changes,
        )
        await self._save(run)
        return run

    async def _finish(self, run: SosRun, pb: Playbook, traj: Trajectory) -> SosRun:
        done = traj.calls()
        traj.end(pb.end_reason(done))
        run = replace(
            run,
            status="completed" if all(c.ok for c in done) else "failed",
            trajectory=traj.to_dict(),
            updated_at=self._clock.now(),
            # The hard SOS stays open (its ambulance remembered) until End SOS closes it.
            state="open" if run.kind == "hard" else "closed",
        )
        if run.kind == "end":
            try:
                await self._journal.finish_end(run)
            except Exception:
                log.exception("closing sos run %s failed", run.ends_run)
            await self._emit(
                Event(
                    EventType.SOS_END,
                    run.person,
                    self._clock.now(),
                    {
                        "run_id": run.ends_run,
                        "end_run_id": run.run_id,
                        "trigger": run.trigger,
                        "device": run.device,
                        "ambulance_id": run.ambulance_id,
                    },
                    id=f"{run.run_id}:sos_end",
                )
            )
        else:
            await self._save(run)
        return run

    async def _tell_already_open(self, p: Person, run: SosRun) -> None:
        if run.ambulance_id is not None:
            msg = (
                f"Your SOS is already active: ambulance {run.ambulance_id} has been texted and "
                "help is on the way. Press End SOS if you no longer need help."
            )
        else:
            msg = (
                "Your SOS is already active, but no ambulance could be texted automatically. "
                "Call emergency services now."
            )
        ctx = ToolContext(
            actor=ACTOR, person=p.id, run_id=run.run_id, notify_kind="sos", rate_limited=False
        )
        try:
            await self._registry.call(
                "notify_user", {"user_id": p.id, "message": msg}, ctx=ctx, allowed=("notify_user",)
            )
        except ToolError as exc:
            log.warning(
                "sos run %s: repeat-press notice failed: %s", run.run_id, type(exc).__name__
            )

    async def _emit_hard(self, run: SosRun) -> None:
        # Right after search_ambulance (in memory, microseconds), so it carries the ambulance
        # and goes out before the texts are queued.
        await self._emit(
            Event(
                EventType.HARD_SOS,
                run.person,
                self._clock.now(),
                {
                    "run_id": run.run_id,
                    "trigger": run.trigger,
                    "device": run.device,
                    "ambulance_id": run.ambulance_id,
                },
                id=f"{run.run_id}:hard_sos",
            )
        )

    async def _emit(self, event: Event) -> None:
        # In the background: the bus applies backpressure, and a stuck subscriber must never
        # hold up a text or the person's lock. Ids are stable, so a re-emit after resume dedupes.
        task = asyncio.create_task(self._emit_now(event), name=f"sos-event:{event.id}")
        self._emits.add(task)
        task.add_done_callback(self._emits.discard)

    async def _emit_now(self, event: Event) -> None:
        try:
            await self._emit_event(event)
        except Exception:
            log.exception("emitting %s failed", event.type)

    def _read(self, fn: Callable[[], SosRun | None]) -> SosRun | None:
        try:
            return fn()
        except Exception:
            # A broken journal must not stop an SOS: proceeding may re-text, never go silent.
            log.exception("reading the sos journal failed")
            return None

    async def _create(self, run: SosRun) -> None:
        try:
            await self._journal.create(run)
        except Exception:
            log.exception("journaling sos run %s failed; running it unjournaled", run.run_id)

    async def _save(self, run: SosRun) -> None:
        try:
            await self._journal.save(run)
        except Exception:
            log.exception("journaling sos run %s failed", run.run_id)
