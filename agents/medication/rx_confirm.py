"""The person's yes/no to a proposed prescription, by chat or from the watch.

A proposal (`MedicationService.propose`) is asked once on both channels with one id,
`rx-<prescription id>`:
- the watch: `health/{person}/notify` `{"kind": "confirm", "prompt_id": "rx-..."}`, answered
  on `health/{person}/{device}/ack` (`answer` "yes"/"no", or only `ok` true/false);
- the chat: `health/{person}/reply` with `session_id` "rx-...", `answer_type` "yes_no",
  answered as an intent (agents.assistant.chat_router reads the yes or no).
The first answer decides: yes schedules the reminders (`confirm`, with every safety check),
no stops the proposal. No answer schedules nothing; the family or admin can still confirm
through the API, which closes the question. After `answer_window_s` the person's answer is
no longer taken (a "yes" days later may not be about this schedule any more).

A confirm prompt is never an "are you OK?" prompt: its ack is consumed here, so an `ok: false`
(a "no") can never escalate to an SOS.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from agents.assistant.language import read_yes_no
from agents.scheduling.replies import say_reply
from gateway.base.clock import Clock
from gateway.base.db import Database
from gateway.base.errors import HealthGWError
from gateway.base.ports import Publisher
from gateway.contract.topics import (
    CONFIRM_PROMPT_PREFIX,
    NotifyPayload,
    format_ts,
    notify_topic,
)

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS rx_prompts (
    id          TEXT PRIMARY KEY,   -- rx-<prescription id>
    person      TEXT NOT NULL,
    rx_id       TEXT NOT NULL,
    asked_at    REAL NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('open', 'confirmed', 'declined', 'closed')),
    by          TEXT,               -- watch | chat | api
    answered_at REAL
);
CREATE INDEX IF NOT EXISTS rx_prompts_person ON rx_prompts (person, status);
"""

Outcome = Literal["confirmed", "declined", "closed"]
# The service's confirm (all checks, then the jobs) and decline (nothing scheduled).
Confirm = Callable[[str, str], Awaitable[dict[str, Any]]]
Decline = Callable[[str, str], bool]
ReplyHook = Callable[[str, dict[str, Any]], None]


def prompt_id_for(rx_id: str) -> str:
    return f"{CONFIRM_PROMPT_PREFIX}{rx_id}"


def is_confirm_prompt(prompt_id: str | None) -> bool:
    return prompt_id is not None and prompt_id.startswith(CONFIRM_PROMPT_PREFIX)


def watch_yes(answer: str | None, ok: bool | None) -> bool | None:
    """A watch's ack to a confirm prompt: its `answer` when it reads as yes or no, else `ok`."""
    said = read_yes_no(answer) if answer else "unclear"
    if said != "unclear":
        return said == "yes"
    return ok


@dataclass(frozen=True, slots=True)
class RxPrompt:
    id: str
    person: str
    rx_id: str
    asked_at: float
    status: str


class RxConfirmations:
    def __init__(
        self,
        db: Database,
        publisher: Publisher,
        clock: Clock,
        *,
        answer_window_s: float = 86_400.0,
    ) -> None:
        self._db = db
        self._pub = publisher
        self._clock = clock
        self.answer_window_s = answer_window_s
        # Set by the chat router: chat listeners (REST, WebSocket) see the question too.
        self.on_reply: ReplyHook | None = None
        self.counters = {"asked": 0, "confirmed": 0, "declined": 0, "stale": 0}
        db.ensure_schema(SCHEMA)

    # --- asking -------------------------------------------------------------------------------

    async def ask(self, person: str, rx_id: str, summary: str, warnings: list[str]) -> str:
        pid = prompt_id_for(rx_id)
        now = self._clock.now()
        with self._db.tx() as c:
            c.execute(
                "INSERT OR REPLACE INTO rx_prompts (id, person, rx_id, asked_at, status)"
                " VALUES (?, ?, ?, ?, 'open')",
                (pid, person, rx_id, now),
            )
        caution = f" Note: {' '.join(warnings)}" if warnings else ""
        text = f"New prescription: {summary}.{caution} Shall I start these reminders? Yes or no."
        self.counters["asked"] += 1
        note = NotifyPayload(text=text, kind="confirm", prompt_id=pid, ts=format_ts(now))
        await self._pub.publish(
            notify_topic(person), note.model_dump_json(exclude_none=True), qos=1
        )
        await self._say(person, pid, text, expects_answer=True)
        return pid

    # --- reading ------------------------------------------------------------------------------

    def get(self, prompt_id: str) -> RxPrompt | None:
        row = (
            self._db.conn()
            .execute("SELECT * FROM rx_prompts WHERE id = ?", (prompt_id,))
            .fetchone()
        )
        return _prompt(row) if row is not None else None

    def is_open(self, prompt_id: str) -> bool:
        p = self.get(prompt_id)
        return p is not None and p.status == "open" and self._fresh(p)

    def open_for(self, person: str) -> RxPrompt | None:
        """The person's newest open question still inside its answer window."""
        row = (
            self._db.conn()
            .execute(
                "SELECT * FROM rx_prompts WHERE person = ? AND status = 'open'"
                " ORDER BY asked_at DESC LIMIT 1",
                (person,),
            )
            .fetchone()
        )
        p = _prompt(row) if row is not None else None
        return p if p is not None and self._fresh(p) else None

    def _fresh(self, p: RxPrompt) -> bool:
        return self._clock.now() - p.asked_at <= self.answer_window_s

    # --- answering ----------------------------------------------------------------------------

    async def answer(
        self, person: str, prompt_id: str, yes: bool, *, by: str,
        confirm: Confirm, decline: Decline,
    ) -> str | None:  # fmt: skip
        """The person's yes or no. Returns what they were told, or None when the question is
        not theirs. A question already settled (or expired) changes nothing."""
        p = self.get(prompt_id)
        if p is None or p.person != person:
            return None
        if p.status != "open" or not self._fresh(p):
            self.counters["stale"] += 1
            text = (
                "That prescription question is already settled."
                if p.status != "open"
                else "That prescription question has expired; your family can still confirm it."
            )
            await self._tell(person, prompt_id, text)
            return text
        if yes:
            try:
                out = await confirm(person, p.rx_id)
            except HealthGWError as exc:
                # Refused by the safety checks now (something changed since the proposal).
                self._settle(prompt_id, "closed", by)
                text = f"I could not start these reminders: {exc}"
                await self._tell(person, prompt_id, text)
                return text
            self._settle(prompt_id, "confirmed", by)
            self.counters["confirmed"] += 1
            nxt = out.get("schedule") or []
            when = f" The first is at {nxt[0][11:16]}." if nxt else ""
            text = f"Done: your reminders are set up.{when}"
        else:
            decline(person, p.rx_id)
            self._settle(prompt_id, "declined", by)
            self.counters["declined"] += 1
            text = "OK, I have not set up these reminders."
        await self._tell(person, prompt_id, text)
        return text

    def settle_rx(self, rx_id: str, outcome: Outcome, by: str) -> None:
        """The API confirmed or stopped the prescription: its open question is closed."""
        self._settle(prompt_id_for(rx_id), outcome, by)

    def _settle(self, prompt_id: str, outcome: Outcome, by: str) -> None:
        with self._db.tx() as c:
            c.execute(
                "UPDATE rx_prompts SET status = ?, by = ?, answered_at = ?"
                " WHERE id = ? AND status = 'open'",
                (outcome, by, self._clock.now(), prompt_id),
            )

    # --- output -------------------------------------------------------------------------------

    async def _tell(self, person: str, prompt_id: str, text: str) -> None:
        now = format_ts(self._clock.now())
        note = NotifyPayload(text=text, kind="info", ts=now)
        await self._pub.publish(
            notify_topic(person), note.model_dump_json(exclude_none=True), qos=1
        )
        await self._say(person, prompt_id, text, expects_answer=False)

    async def _say(self, person: str, session_id: str, text: str, *, expects_answer: bool) -> None:
        await say_reply(self._pub, self._clock, self.on_reply, person, session_id, text,
                        answer_type="yes_no" if expects_answer else None)  # fmt: skip

    async def ask_again(self, person: str, prompt_id: str) -> None:
        """An unclear chat answer to the question's own session: ask for a plain yes or no."""
        await self._say(
            person, prompt_id, "Sorry, I did not get that. Shall I start these reminders? "
            "Please answer yes or no.", expects_answer=True,
        )  # fmt: skip


def _prompt(row: Any) -> RxPrompt:
    return RxPrompt(row["id"], row["person"], row["rx_id"], row["asked_at"], row["status"])
