"""Open conversations survive a restart (agents/assistant/conversations.py with agents/assistant/conversation_store.py):
the real assistant, policy, triage and tools over a SQLite file; a "restart" is a second
Conversations and Assistant built over the same file."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agents.assistant.conversation_store import ConversationStore, OpenConversation
from agents.assistant.conversations import Conversations
from agents.assistant.memory import LongTermMemory
from agents.assistant.run_state import RunState
from agents.assistant.runner import Assistant
from agents.eval.scenarios import EVAL_NOW, _build
from agents.triage.classifier import Triage
from agents.triage.lazy import LazyTriage
from gateway.base.clock import ManualClock
from gateway.base.db import Database
from tests.harness import TRIAGE_CACHE

pytestmark = pytest.mark.usefixtures("trained_triage")

WHO = "evaluser"
OPENER = "I get chest pain when I climb the stairs"
BOOKING_TOOLS = [
    "retrieve_past_complaints", "get_input_from_user", "get_available_specialists",
    "get_input_from_user", "confirm_appointment", "save_appointment_history",
    "store_symptoms", "notify_user",
]  # fmt: skip


class Wire:
    """The reply topic, as a recorder. For each question it also notes what the store held
    at the moment it was sent (the write-ahead rule: the question is saved first)."""

    def __init__(self, store: ConversationStore) -> None:
        self.store = store
        self.sent: list[dict[str, Any]] = []
        self.saved_when_asked: list[str | None] = []
        self.changed = asyncio.Event()

    async def publish(
        self, topic: str, payload: Any, *, qos: int = 1, retain: bool = False
    ) -> None:
        if payload.get("expects_answer"):
            rows, _ = self.store.load()
            mine = [r for r in rows if r.session_id == payload["session_id"]]
            pending = mine[0].state.get("pending") if mine and mine[0].state else None
            self.saved_when_asked.append(pending["params"]["questions"] if pending else None)
        self.sent.append(payload)
        self.changed.set()

    async def wait(self, pred: Any, within: float = 20.0) -> Any:
        async def loop() -> Any:
            while not (got := pred()):
                self.changed.clear()
                await self.changed.wait()
            return got

        return await asyncio.wait_for(loop(), within)

    async def question(self, after: int = 0) -> dict[str, Any]:
        got = await self.wait(lambda: [p for p in self.sent[after:] if p.get("expects_answer")])
        return dict(got[0])


class Hub:
    """One 'process': an assistant and its conversations over the data folder."""

    def __init__(self, data: Path, clock: ManualClock, idle_timeout_s: float = 300.0) -> None:
        self.assistant: Assistant = _build(LazyTriage(TRIAGE_CACHE), None, data, clock)
        self.db = Database(data / "eval.db")
        self.store = ConversationStore(self.db)
        self.wire = Wire(self.store)
        self.conv = Conversations(
            self.assistant, self.wire, clock, idle_timeout_s=idle_timeout_s, store=self.store
        )
        self.memory = LongTermMemory(self.db, clock_now=clock.now)

    async def finished(self, sid: str) -> Any:
        s = self.conv.session(sid)
        assert s is not None and s.task is not None
        await asyncio.wait_for(asyncio.shield(s.task), 20)
        return s.outcome


def _tools(trajectory: dict[str, Any]) -> list[str]:
    states = trajectory["interaction_trajectory"]
    return [st["value"]["tool"] for st in states if st["from"] == "caller"]


async def test_a_stopped_conversation_goes_on_to_a_booking_after_the_restart(
    tmp_path: Path, trained_triage: Triage
) -> None:
    clock = ManualClock(EVAL_NOW.timestamp())
    first = Hub(tmp_path, clock)
    sid = await first.conv.say(WHO, OPENER)
    q1 = await first.wire.question()
    await first.conv.say(WHO, "Tuesday morning", sid)
    offer = await first.wire.question(len(first.wire.sent))
    assert offer["answer_type"] == "yes_no"
    # Each question was in the store before it went out.
    assert first.wire.saved_when_asked == [q1["text"], offer["text"]]
    await first.conv.stop()

    rows, _ = first.store.load()
    assert [r.session_id for r in rows] == [sid]
    saved = RunState.from_dict(rows[0].state or {})
    assert saved.pending is not None and saved.pending["params"]["questions"] == offer["text"]

    second = Hub(tmp_path, clock)
    assert await second.conv.resume() == [sid]
    assert second.conv.session_open(sid)
    # The watch has no session id: the bare answer goes to the resumed session.
    assert await second.conv.say(WHO, "yes please") == sid
    out = await second.finished(sid)
    assert out.booked and out.run_id == saved.run_id and out.specialization == "cardiologist"
    assert _tools(out.trajectory) == BOOKING_TOOLS
    questions = [
        st["value"]["parameters"]["questions"]
        for st in out.trajectory["interaction_trajectory"]
        if st["from"] == "caller" and st["value"]["tool"] == "get_input_from_user"
    ]
    assert questions == [q1["text"], offer["text"]]  # the same trajectory, nothing re-asked
    assert not any(p.get("expects_answer") for p in second.wire.sent)
    assert any("booked" in p["text"] for p in second.wire.sent)
    confirm = [
        st["value"]["parameters"] for st in out.trajectory["interaction_trajectory"]
        if st["from"] == "caller" and st["value"]["tool"] == "confirm_appointment"
    ]  # fmt: skip
    booked = second.memory.bookings(WHO)
    assert [b["specialist_id"] for b in booked] == [confirm[0]["specialist_id"]]
    assert second.store.load() == ([], 0)  # finished: its row is gone
    await second.conv.stop()


async def test_an_answer_is_in_the_store_before_the_assistant_acts_on_it(
    tmp_path: Path, trained_triage: Triage
) -> None:
    clock = ManualClock(EVAL_NOW.timestamp())
    hub = Hub(tmp_path, clock)
    sid = await hub.conv.say(WHO, OPENER)
    await hub.wire.question()
    clock.advance(42)
    await hub.conv.say(WHO, "Tuesday morning")
    # say() returned without the assistant running in between: the answer is kept first.
    (row,), _ = hub.store.load()
    assert (row.session_id, row.answer, row.turns) == (sid, "Tuesday morning", 2)
    assert row.last_activity == clock.now()
    offer = await hub.wire.question(1)
    assert offer["answer_type"] == "yes_no"
    (row,), _ = hub.store.load()
    assert row.answer is None  # now in the saved trajectory instead
    state = RunState.from_dict(row.state or {})
    answers = [s["value"]["result"] for s in state.trajectory["interaction_trajectory"]
               if s["from"] == "observation"]  # fmt: skip
    assert "Tuesday morning" in answers
    await hub.conv.stop()


async def test_an_answer_kept_before_a_crash_is_acted_on_without_the_user(
    tmp_path: Path, trained_triage: Triage
) -> None:
    clock = ManualClock(EVAL_NOW.timestamp())
    first = Hub(tmp_path, clock)
    sid = await first.conv.say(WHO, OPENER)
    await first.wire.question()
    # What the gateway writes on receiving the answer; the crash comes before it is acted on.
    first.store.save_answer(sid, "Tuesday morning", turns=2, now=clock.now())
    await first.conv.stop()

    second = Hub(tmp_path, clock)
    await second.conv.resume()
    offer = await second.wire.question()
    assert offer["session_id"] == sid and "Tuesday" in offer["text"]
    await second.conv.say(WHO, "no thanks")
    out = await second.finished(sid)
    assert not out.booked and out.category == "negative"
    await second.conv.stop()


async def test_idle_past_the_timeout_while_down_is_closed_at_start_and_not_resumed(
    tmp_path: Path, trained_triage: Triage
) -> None:
    clock = ManualClock(EVAL_NOW.timestamp())
    first = Hub(tmp_path, clock)
    sid = await first.conv.say(WHO, OPENER)
    await first.wire.question()
    await first.conv.stop()

    clock.advance(301)  # the gateway was down longer than the idle timeout
    second = Hub(tmp_path, clock)
    assert await second.conv.resume() == [sid]
    # Not resumed: the person's next message, even while the old one closes, is a new one.
    new = await second.conv.say(WHO, "I have an itchy rash on my arm")
    assert new != sid
    out = await second.finished(sid)
    # Closed the usual way: the user is told, the symptoms kept, nothing booked.
    assert not out.booked
    assert [p["session_id"] for p in second.wire.sent if "did not hear" in p["text"]] == [sid]
    assert "chest" in second.memory.complaints(WHO)[0]["symptoms"]
    assert second.conv.counters["expired_while_down"] == 1
    assert second.conv.counters["timeouts"] == 1
    assert (await second.wire.question())["session_id"] == new
    assert [r.session_id for r in second.store.load()[0]] == [new]
    await second.conv.stop()


async def test_the_idle_time_before_the_restart_still_counts(
    tmp_path: Path, trained_triage: Triage
) -> None:
    clock = ManualClock(EVAL_NOW.timestamp())
    first = Hub(tmp_path, clock)
    sid = await first.conv.say(WHO, OPENER)
    await first.wire.question()
    await first.conv.stop()

    clock.advance(299.5)  # half a second of the 300 s left
    second = Hub(tmp_path, clock)
    await second.conv.resume()
    assert second.conv.session_open(sid)  # resumed: the user could still answer
    await second.finished(sid)  # ... but nobody does, and the rest of the timeout runs out
    assert second.conv.counters["timeouts"] == 1
    assert second.conv.counters["expired_while_down"] == 0
    assert any("did not hear" in p["text"] for p in second.wire.sent)
    await second.conv.stop()


async def test_an_opener_saved_before_the_first_step_starts_over_from_it(
    tmp_path: Path, trained_triage: Triage
) -> None:
    clock = ManualClock(EVAL_NOW.timestamp())
    store = ConversationStore(Database(tmp_path / "eval.db"))
    now = clock.now()
    store.open(OpenConversation("s-early", WHO, OPENER, 1, now, now), now)
    hub = Hub(tmp_path, clock)
    assert await hub.conv.resume() == ["s-early"]
    q = await hub.wire.question()
    assert q["session_id"] == "s-early" and "time" in q["text"].lower()
    await hub.conv.stop()


async def test_rows_that_cannot_be_resumed_are_dropped(
    tmp_path: Path, trained_triage: Triage
) -> None:
    clock = ManualClock(EVAL_NOW.timestamp())
    store = ConversationStore(Database(tmp_path / "eval.db"))
    now = clock.now()
    store.open(OpenConversation("gone", "nobody-here", "hello", 1, now, now), now)
    store.open(OpenConversation("older", WHO, OPENER, 1, now - 5, now - 5), now)
    store.open(OpenConversation("broken", WHO, OPENER, 1, now - 9, now - 9), now)
    store.save_state("broken", {"run_id": 7}, turns=1, last_activity=now, now=now, durable=False)
    store.open(OpenConversation("newest", WHO, OPENER, 1, now, now), now)
    hub = Hub(tmp_path, clock)
    # An unknown person's, an unreadable one and an older one of the same person: removed.
    assert await hub.conv.resume() == ["newest"]
    assert [r.session_id for r in store.load()[0]] == ["newest"]
    await hub.conv.stop()


async def test_a_superseded_conversation_leaves_no_row(
    tmp_path: Path, trained_triage: Triage
) -> None:
    clock = ManualClock(EVAL_NOW.timestamp())
    hub = Hub(tmp_path, clock)
    old = await hub.conv.say(WHO, OPENER)
    await hub.wire.question()
    new = await hub.conv.say(WHO, "My knee hurts", "another-session")
    assert new == "another-session"
    assert [r.session_id for r in hub.store.load()[0]] == [new]
    assert old != new
    await hub.conv.stop()


def test_run_state_round_trip_and_refusals() -> None:
    st = RunState("r1", WHO, 1.0, {"interaction_trajectory": []}, plans=[["t", "past", None]])
    assert RunState.from_dict(st.to_dict()) == st
    for bad in ({}, {"run_id": 1}, {**st.to_dict(), "plans": [["x"]]},
                {**st.to_dict(), "pending": {"tool": "x"}}):  # fmt: skip
        with pytest.raises(ValueError):
            RunState.from_dict(bad)


async def test_a_message_redelivered_after_a_crash_is_not_taken_as_the_next_answer(
    tmp_path: Path, trained_triage: Triage
) -> None:
    """The broker redelivers an intent the gateway acted on but had not yet acknowledged (a
    kill -9 between the two): "Tuesday morning" again, as the link comes back, must not answer
    "Shall I book it?". The person's own "yes" then books; a later repeat is an answer again."""
    clock = ManualClock(EVAL_NOW.timestamp())
    first = Hub(tmp_path, clock)
    sid = await first.conv.say(WHO, OPENER)
    await first.wire.question()
    await first.conv.say(WHO, "Tuesday morning", sid)
    offer = await first.wire.question(len(first.wire.sent))
    await first.conv.stop()

    second = Hub(tmp_path, clock)
    assert await second.conv.resume() == [sid]
    assert await second.conv.say(WHO, "Tuesday morning", sid) == sid  # the broker's copy
    assert second.conv.counters["redelivered"] == 1
    assert await second.conv.say(WHO, "yes", sid) == sid
    out = await second.finished(sid)
    assert out.booked, "the redelivered answer was taken as the answer to the offer"
    assert not any(p.get("expects_answer") for p in second.wire.sent)  # nothing re-asked
    assert offer["answer_type"] == "yes_no"
    await second.conv.stop()


def test_the_last_message_a_run_acted_on() -> None:
    state = RunState.from_dict({
        "run_id": "r", "person": WHO, "started": 0.0, "plans": [], "step_ms": [], "pending": None,
        "trajectory": {"interaction_trajectory": [
            {"from": "system", "value": "s"}, {"from": "user", "value": "opener"},
            {"from": "planner", "value": {}},
            {"from": "caller", "value": {"tool": "get_input_from_user", "parameters": {}}},
            {"from": "observation", "value": {"result": "Tuesday morning"}},
        ]},
    })  # fmt: skip
    assert state.last_message("opener") == "Tuesday morning"
    empty = RunState.from_dict({**state.to_dict(), "trajectory": {"interaction_trajectory": []}})
    assert empty.last_message("opener") == "opener"
