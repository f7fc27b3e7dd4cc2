"""Follow-ups stored by `follow_up_with_user`, sent on their day through the scheduler.

The tool keeps the follow-up in long-term memory (`follow_ups`, with its due day) and hands it
here: one apscheduler job (`followup:{person}:{id}`, a DateTrigger at `FOLLOW_UP_AT` (10:00)
local time on the due day) in the gateway's SQLite job store, so it survives a restart like the
reminders; a run missed while the hub was down still goes out within `grace_s`. At start,
follow-ups due from yesterday on that have no job and were never sent get one (stored while
the scheduler was not bound, or by an older version).

When it fires the person is asked on the assistant's question channel,
`health/{person}/reply` (session `fu-<id>`, a free-text question), and chat listeners see it
too. Sending is recorded (`follow_up_sent`), so a job firing twice asks once. The answer is a
chat message like any other (agents.assistant.chat_router): "much better" closes it; anything else
starts an appointment conversation with the remembered symptoms.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.date import DateTrigger

from agents.scheduling.replies import say_reply
from gateway.base.clock import Clock
from gateway.base.db import Database
from gateway.base.ports import Publisher

log = logging.getLogger(__name__)

FOLLOW_UP_AT = time(10, 0)  # late morning: awake, and a doctor's day still ahead
SESSION_PREFIX = "fu-"
SCHEMA = """
CREATE TABLE IF NOT EXISTS follow_up_sent (
    id        TEXT PRIMARY KEY,   -- follow_ups.id
    person    TEXT NOT NULL,
    sent_at   REAL NOT NULL,
    answered  INTEGER NOT NULL DEFAULT 0
);
"""

# Jobs are pickled by reference to fire_follow_up; it finds the running service here.
_RUNNING: dict[str, FollowUps] = {}


async def fire_follow_up(key: str, follow_up_id: str) -> None:
    svc = _RUNNING.get(key)
    if svc is None:
        log.warning("follow-up fired with no follow-up service running")
        return
    await svc.fire(follow_up_id)


_BETTER = re.compile(
    r"\b(better|fine|good|great|gone|recovered|all clear|no more|resolved|ok|okay|well)\b"
)
_WORSE = re.compile(r"\b(not|no|still|worse|again|hurts?|bad|pain)\b")


def reads_better(answer: str) -> bool:
    """'Much better, thanks' closes the follow-up; 'not better', 'still bad' do not."""
    t = " ".join(answer.casefold().replace("’", "'").split())
    return bool(_BETTER.search(t)) and not _WORSE.search(t)


def session_for(follow_up_id: str) -> str:
    return f"{SESSION_PREFIX}{follow_up_id[:16]}"


class FollowUps:
    def __init__(
        self,
        db: Database,
        publisher: Publisher,
        clock: Clock,
        tz: ZoneInfo,
        *,
        key: str = "default",
        grace_s: float = 86_400.0,
        answer_window_s: float = 86_400.0,
        at: time = FOLLOW_UP_AT,
    ) -> None:
        self._db = db
        self._pub = publisher
        self._clock = clock
        self.tz = tz
        self.key = key
        self.grace_s = grace_s
        self.answer_window_s = answer_window_s
        self.at = at
        self._scheduler: BaseScheduler | None = None
        # Set by the chat router: chat listeners (REST, WebSocket) see the question too.
        self.on_reply: Callable[[str, dict[str, Any]], None] | None = None
        db.ensure_schema(SCHEMA)

    # --- lifecycle ----------------------------------------------------------------------------

    def use(self, scheduler: BaseScheduler) -> None:
        """The scheduler whose job store keeps the jobs (the medication service's)."""
        self._scheduler = scheduler

    def start(self) -> None:
        _RUNNING[self.key] = self
        today = datetime.fromtimestamp(self._clock.now(), self.tz).date()
        rows = self._db.conn().execute(
            "SELECT f.id, f.person, f.due FROM follow_ups f LEFT JOIN follow_up_sent s"
            " ON s.id = f.id WHERE s.id IS NULL AND f.due >= ?",
            ((today - timedelta(days=1)).isoformat(),),
        )
        for r in rows.fetchall():
            if self._scheduler is not None and self._scheduler.get_job(
                _job_id(r["person"], r["id"])
            ):
                continue
            self.schedule(r["id"], r["person"], date.fromisoformat(r["due"]))

    def stop(self) -> None:
        _RUNNING.pop(self.key, None)

    # --- scheduling ---------------------------------------------------------------------------

    def schedule(self, follow_up_id: str, person: str, due: date) -> str | None:
        """The job for one stored follow-up; its id, or None with no scheduler bound."""
        if self._scheduler is None:
            log.warning("follow-up stored but no scheduler is bound; it is sent at next start")
            return None
        when = datetime.combine(due, self.at, self.tz)
        job = self._scheduler.add_job(
            fire_follow_up,
            DateTrigger(run_date=when, timezone=self.tz),
            args=[self.key, follow_up_id],
            id=_job_id(person, follow_up_id),
            replace_existing=True,
            misfire_grace_time=int(self.grace_s),
            coalesce=True,
        )
        return str(job.id)

    # --- sending ------------------------------------------------------------------------------

    async def fire(self, follow_up_id: str) -> bool:
        """Ask the person how they are. False when it is unknown or was already sent."""
        conn = self._db.conn()
        row = conn.execute(
            "SELECT person, symptoms, next_steps, created_at FROM follow_ups WHERE id = ?",
            (follow_up_id,),
        ).fetchone()
        if row is None:
            return False
        with self._db.tx() as c:
            cur = c.execute(
                "INSERT OR IGNORE INTO follow_up_sent (id, person, sent_at) VALUES (?, ?, ?)",
                (follow_up_id, row["person"], self._clock.now()),
            )
        if cur.rowcount == 0:
            return False  # a second firing of the same job (restart, misfire)
        said = datetime.fromtimestamp(row["created_at"], self.tz)
        text = (
            f"Checking in as promised: on {said:%A} you told me about {row['symptoms']}. "
            "How are you feeling now? If it still bothers you, tell me and I can find you a "
            "doctor."
        )
        await self._say(row["person"], session_for(follow_up_id), text[:2000], expects_answer=True)
        return True

    # --- answers ------------------------------------------------------------------------------

    def open_for(self, person: str, session_id: str | None = None) -> tuple[str, str] | None:
        """(session id, remembered symptoms) of the person's newest follow-up sent within
        `answer_window_s` and not answered yet; with `session_id`, only that one."""
        rows = self._db.conn().execute(
            "SELECT s.id, f.symptoms FROM follow_up_sent s JOIN follow_ups f ON f.id = s.id"
            " WHERE s.person = ? AND s.answered = 0 AND s.sent_at >= ? ORDER BY s.sent_at DESC",
            (person, self._clock.now() - self.answer_window_s),
        )
        for r in rows:
            sid = session_for(r["id"])
            if session_id is None or session_id == sid:
                return sid, str(r["symptoms"])
        return None

    def answered(self, person: str, session_id: str) -> None:
        with self._db.tx() as c:
            c.execute(
                "UPDATE follow_up_sent SET answered = 1 WHERE person = ? AND substr(id, 1, 16) = ?",
                (person, session_id.removeprefix(SESSION_PREFIX)),
            )

    async def close(self, person: str, session_id: str, text: str) -> None:
        """The last word on a follow-up the person answered with "better"."""
        await self._say(person, session_id, text, expects_answer=False)

    async def _say(self, person: str, session_id: str, text: str, *, expects_answer: bool) -> None:
        await say_reply(self._pub, self._clock, self.on_reply, person, session_id, text,
                        answer_type="free_text" if expects_answer else None)  # fmt: skip


def _job_id(person: str, follow_up_id: str) -> str:
    return f"followup:{person}:{follow_up_id}"
