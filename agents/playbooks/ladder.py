"""SOS escalation until someone acknowledges.

After a hard SOS has texted the ambulance and every emergency contact, the ladder waits
`window_s` for an acknowledgement (SMS reply keyword, API or MQTT). Without one it climbs,
one level per window:

1. each emergency contact again, one at a time, in the household file's order;
2. then every contact at once;
3. then the ambulance again;

and then reports the SOS as unacknowledged. An acknowledgement or the end of the SOS stops it.

The ladder is deterministic code over a durable table (`sos_ladder` in safety.db): each level
is a timestamp, not a sleeping task, so a restart resumes where it was. Texts go through the
audited `send_message` tool with keys derived from (run, level, recipient), so a level
replayed after a crash never texts twice (a power cut between a text and the level's fsync
may send it again: gateway/notify/text_submit.py).

Its writes are fsynced, but never on the event loop (`_off_loop`): an fsync on a disk busy
with readings can take hundreds of ms, and another person's SOS press must not wait for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from agents.tools.registry import ToolContext, ToolError, ToolRegistry
from gateway.base.clock import Clock
from gateway.base.db import Database
from gateway.base.loop_health import TickHealth, run_ticks
from gateway.contract.events import HardSosPayload
from gateway.contract.topics import EventType
from gateway.contract.values import Event
from gateway.household.model import Household, Person
from gateway.notify.ack import is_ack

log = logging.getLogger(__name__)

ACTOR = "sos_ladder"
STEP_BASE = 100  # tool steps of the ladder, apart from the playbook's own (0-9)

SCHEMA = """
CREATE TABLE IF NOT EXISTS sos_ladder (
    run_id      TEXT PRIMARY KEY,
    person      TEXT NOT NULL,
    level       INTEGER NOT NULL DEFAULT 0,
    next_at     REAL NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('waiting', 'acked', 'ended', 'exhausted')),
    acked_by    TEXT,
    acked_at    REAL,
    created_at  REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS sos_ladder_waiting ON sos_ladder (state, next_at);
"""

T = TypeVar("T")
AssignedAmbulance = Callable[[str], "tuple[str, str] | None"]


@dataclass(frozen=True, slots=True)
class Rung:
    phones: tuple[str, ...]
    text: str
    what: str  # for the audit and the event: "contact 1", "all contacts", "ambulance"


class SosLadder:
    def __init__(
        self,
        db: Database,
        registry: ToolRegistry,
        household: Household,
        clock: Clock,
        emit: Callable[[Event], Awaitable[None]],
        assigned_ambulance: AssignedAmbulance,
        *,
        deliveries: Callable[[str], list[dict[str, Any]]] | None = None,
        window_s: float = 300.0,
        poll_s: float = 1.0,
    ) -> None:
        self._db = db
        self._reg = registry
        self._hh = household
        self._clock = clock
        self._emit = emit
        self._ambulance = assigned_ambulance
        self._deliveries = deliveries
        self.window_s = window_s
        self.poll_s = poll_s
        self._task: asyncio.Task[None] | None = None
        # Its loop retries a failing tick; three in a row show it down (a critical watch).
        self.health = TickHealth("sos ladder")
        db.ensure_schema(SCHEMA)

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Also the watch's restart hook: a new loop only if the last one ended (a running
        loop retries its failing tick by itself)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._loop(), name="sos-ladder")

    def alive(self) -> bool:
        """Its loop runs and its ticks succeed: what the `sos_ladder` watch checks."""
        return self._task is not None and not self._task.done() and self.health.healthy()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def on_event(self, event: Event) -> None:
        if event.type == EventType.HARD_SOS:
            sos = HardSosPayload.from_data(event.data)
            if sos.run_id:
                await _off_loop(self.open, sos.run_id, event.person)
        elif event.type == EventType.SOS_END:
            await _off_loop(self.close, event.person, "ended")

    # --- state --------------------------------------------------------------------------------

    def open(self, run_id: str, person: str) -> None:
        now = self._clock.now()
        with self._db.tx(durable=True) as c:
            c.execute(
                "INSERT OR IGNORE INTO sos_ladder (run_id, person, next_at, state, created_at)"
                " VALUES (?, ?, ?, 'waiting', ?)",
                (run_id, person, now + self.window_s, now),
            )

    def close(self, person: str, state: str) -> int:
        with self._db.tx(durable=True) as c:
            cur = c.execute(
                "UPDATE sos_ladder SET state = ? WHERE person = ? AND state = 'waiting'",
                (state, person),
            )
        return cur.rowcount

    async def ack(self, person: str, by: str) -> bool:
        """Someone is helping: stop the ladder. False when nothing was waiting."""
        now = self._clock.now()
        acked = await _off_loop(self._acked, person, by, now)
        if acked:
            await self._emit(Event(EventType.SOS_ACKNOWLEDGED, person, now, {"by": by}))
        return acked

    def _acked(self, person: str, by: str, now: float) -> bool:
        with self._db.tx(durable=True) as c:
            cur = c.execute(
                "UPDATE sos_ladder SET state = 'acked', acked_by = ?, acked_at = ?"
                " WHERE person = ? AND state = 'waiting'",
                (by, now, person),
            )
        return bool(cur.rowcount)

    async def ack_by_sms(self, phone: str, body: str) -> str | None:
        """An SMS reply: a contact of a person with a waiting ladder saying OK. Returns the
        person acknowledged for, or None. Only an explicit "I'm helping" counts (is_ack):
        "ok but I can't come" must not stop the ladder."""
        if not is_ack(body):
            return None
        waiting = {r["person"] for r in self.waiting()}
        for p in self._hh.persons:
            if p.id in waiting and any(c.phone == phone for c in p.emergency_contacts):
                name = next(c.name for c in p.emergency_contacts if c.phone == phone)
                if await self.ack(p.id, f"sms:{name}"):
                    return p.id
        return None

    def waiting(self) -> list[dict[str, Any]]:
        rows = self._db.conn().execute("SELECT * FROM sos_ladder WHERE state = 'waiting'")
        return [dict(r) for r in rows]

    def status(self, person: str) -> dict[str, Any] | None:
        row = (
            self._db.conn()
            .execute(
                "SELECT * FROM sos_ladder WHERE person = ? ORDER BY created_at DESC LIMIT 1",
                (person,),
            )
            .fetchone()
        )
        if row is None:
            return None
        out = dict(row)
        if self._deliveries is not None:
            # Every text of the run (the playbook's and the ladder's), per recipient.
            out["texts"] = self._deliveries(f"{row['run_id']}:")
        return out

    # --- climbing -----------------------------------------------------------------------------

    def rungs(self, p: Person) -> list[Rung]:
        where = f"Home: {p.location.latitude:.5f}, {p.location.longitude:.5f}."
        head = f"URGENT: {p.name} (user ID {p.id}) pressed SOS and nobody has acknowledged yet."
        ask = "Reply OK if you are helping."
        out = [
            Rung((c.phone,), f"{head} {ask} {where}", f"contact {i + 1}")
            for i, c in enumerate(p.emergency_contacts)
        ]
        if len(p.emergency_contacts) > 1:  # with one contact, "everyone" is the same text again
            out.append(
                Rung(
                    tuple(c.phone for c in p.emergency_contacts),
                    f"STILL UNACKNOWLEDGED: {head} {ask} {where}",
                    "all contacts",
                )
            )
        amb = self._ambulance(p.id)
        if amb is not None:
            out.append(
                Rung(
                    (amb[1],),
                    f"REPEAT EMERGENCY: {p.name} (user ID {p.id}) still needs an ambulance and "
                    f"nobody has acknowledged. {where}",
                    "ambulance",
                )
            )
        return out

    async def tick(self) -> None:
        now = self._clock.now()
        rows = (
            self._db.conn()
            .execute("SELECT * FROM sos_ladder WHERE state = 'waiting' AND next_at <= ?", (now,))
            .fetchall()
        )
        for r in rows:
            await self._climb(dict(r))

    async def _climb(self, row: dict[str, Any]) -> None:
        p = self._hh.person(row["person"])
        if p is None:
            await _off_loop(self.close, row["person"], "exhausted")
            return
        rungs = self.rungs(p)
        level = int(row["level"])
        if level >= len(rungs):
            await _off_loop(
                self._write,
                "UPDATE sos_ladder SET state = 'exhausted' WHERE run_id = ? AND state = 'waiting'",
                (row["run_id"],),
            )
            await self._emit(
                Event(EventType.SOS_UNACKNOWLEDGED, p.id, self._clock.now(),
                      {"run_id": row["run_id"], "level": "exhausted", "acknowledged": False})
            )  # fmt: skip
            return
        rung = rungs[level]
        for i, phone in enumerate(rung.phones):
            ctx = ToolContext(
                actor=ACTOR,
                person=p.id,
                run_id=row["run_id"],
                step=STEP_BASE + level * 10 + i,
                notify_kind="sos",
                rate_limited=False,
            )
            try:
                await self._reg.call(
                    "send_message", {"text": rung.text, "phone_no": phone}, ctx=ctx,
                    allowed=("send_message",),
                )  # fmt: skip
            except ToolError as exc:
                log.warning("sos ladder: %s (%s)", rung.what, type(exc).__name__)
        # Fsynced with the level: this rung's text rows too (same file, written before).
        await _off_loop(
            self._write,
            "UPDATE sos_ladder SET level = ?, next_at = ? WHERE run_id = ? AND state = 'waiting'",
            (level + 1, self._clock.now() + self.window_s, row["run_id"]),
        )
        await self._emit(
            Event(EventType.SOS_UNACKNOWLEDGED, p.id, self._clock.now(),
                  {"run_id": row["run_id"], "level": rung.what, "acknowledged": False})
        )  # fmt: skip

    def _write(self, sql: str, args: tuple[Any, ...]) -> None:
        with self._db.tx(durable=True) as c:
            c.execute(sql, args)

    async def _loop(self) -> None:
        # A failing tick is counted (self.health, shown by the watch) and retried next poll;
        # logged as its class and code location only (the texts quote names and phones).
        await run_ticks(lambda: self.tick(), self.health, lambda: self.poll_s)


async def _off_loop(fn: Callable[..., T], *args: Any) -> T:
    """A durable write on a worker thread: its fsync holds no SQLite lock (gateway/base/db.py), so
    neither the loop nor the SOS journal's commits wait for it."""
    return await asyncio.to_thread(fn, *args)
