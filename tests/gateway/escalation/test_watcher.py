"""The escalation watcher on its own: durable prompts, deadlines on a hand-moved clock, who
is covered by which question, and what an answer does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gateway.base.clock import ManualClock
from gateway.base.db import Database
from gateway.contract.values import Event
from gateway.escalation.watcher import UNARMED_TTL_S, EscalationWatcher


class Recorder:
    def __init__(self) -> None:
        self.published: list[tuple[str, Any]] = []
        self.events: list[Event] = []
        self.sos: list[tuple[str, str]] = []
        self.texted: list[tuple[str, str]] = []

    async def publish(
        self, topic: str, payload: Any, *, qos: int = 1, retain: bool = False
    ) -> None:
        self.published.append((topic, payload))

    async def emit(self, e: Event) -> None:
        self.events.append(e)

    async def start(self, person: str, *, device: str | None, location: Any, trigger: str) -> bool:
        self.sos.append((person, trigger))
        return True

    async def end(self, person: str, *, device: str | None, trigger: str) -> bool:
        return False

    async def unanswered(self, person: str, *, prompt_id: str, reason: str, summary: str) -> bool:
        self.texted.append((person, summary))
        return True


def make(tmp_path: Path, clock: ManualClock, rec: Recorder) -> EscalationWatcher:
    return EscalationWatcher(Database(tmp_path / "safety.db"), rec, rec, rec.emit, clock,
                             contacts=rec, window_s=60)  # fmt: skip


async def test_deadline_survives_a_new_watcher_on_the_same_database(tmp_path: Path) -> None:
    clock, rec = ManualClock(), Recorder()
    w = make(tmp_path, clock, rec)
    pid = await w.on_implausible("dad", device="watch", what="heart rate as 0 bpm",
                                 on_no_answer="hard_sos")  # fmt: skip
    assert rec.published[0][1]["prompt_id"] == pid and rec.published[0][1]["kind"] == "prompt"
    clock.advance(30)
    w2 = make(tmp_path, clock, rec)  # a restart
    assert [p["prompt_id"] for p in w2.pending("dad")] == [pid]
    await w2.tick()
    assert rec.sos == []
    clock.advance(30)
    await w2.tick()
    assert rec.sos == [("dad", "implausible_unanswered")]
    await w2.tick()
    assert len(rec.sos) == 1 and w2.pending() == []
    assert make(tmp_path, clock, rec).pending() == []  # escalated is final, after a restart too


async def test_unanswered_alert_texts_the_contacts(tmp_path: Path) -> None:
    clock, rec = ManualClock(), Recorder()
    w = make(tmp_path, clock, rec)
    await w.on_alert("dad", alert_ids=["a1"], on_no_answer="contacts", summary="oxygen 91 %")
    assert "text your emergency contacts" in rec.published[0][1]["text"]
    clock.advance(61)
    await w.tick()
    assert rec.texted == [("dad", "oxygen 91 %")] and rec.sos == []
    assert [e.type for e in rec.events] == ["alert_escalated"]


async def test_a_pending_question_covers_a_milder_one_and_one_ok_answers_both(
    tmp_path: Path,
) -> None:
    clock, rec = ManualClock(), Recorder()
    w = make(tmp_path, clock, rec)
    p1 = await w.on_alert("dad", alert_ids=["a1"], on_no_answer="contacts", summary="")
    p2 = await w.on_alert("dad", alert_ids=["a2"], on_no_answer="none", summary="")
    assert p1 == p2 and len(rec.published) == 1
    p3 = await w.on_alert("dad", alert_ids=["a3"], on_no_answer="hard_sos", summary="")
    assert p3 != p1 and len(w.pending("dad")) == 2  # a stronger one asks again
    ids = await w.on_ack("dad", ok=True, prompt_id=None, device="watch")
    assert ids == ["a1", "a2", "a3"] and w.pending() == []
    clock.advance(600)
    await w.tick()
    assert rec.sos == [] and rec.texted == []


async def test_not_ok_is_a_hard_sos_at_once(tmp_path: Path) -> None:
    clock, rec = ManualClock(), Recorder()
    w = make(tmp_path, clock, rec)
    await w.on_alert("dad", alert_ids=["a1"], on_no_answer="none", summary="")
    await w.on_ack("dad", ok=False, prompt_id=None, device="watch")
    assert rec.sos == [("dad", "user_not_ok")]


async def test_an_unarmed_question_expires_quietly(tmp_path: Path) -> None:
    clock, rec = ManualClock(), Recorder()
    w = make(tmp_path, clock, rec)
    await w.on_alert("dad", alert_ids=["a1"], on_no_answer="none", summary="")
    clock.advance(UNARMED_TTL_S + 1)
    await w.tick()
    assert w.pending() == [] and rec.sos == [] and rec.texted == []


async def test_a_hard_sos_resolves_and_movement_ends_a_fall_check(tmp_path: Path) -> None:
    clock, rec = ManualClock(), Recorder()
    w = make(tmp_path, clock, rec)
    await w.on_fall("dad", "watch")
    w.on_movement("dad")
    await w.on_alert("dad", alert_ids=["a1"], on_no_answer="hard_sos", summary="")
    assert w.resolve("dad") == 1
    clock.advance(120)
    await w.tick()
    assert rec.sos == [] and w.pending() == []


async def test_a_cleared_alert_resolves_or_downgrades_its_question(tmp_path: Path) -> None:
    clock, rec = ManualClock(), Recorder()
    w = make(tmp_path, clock, rec)
    await w.on_alert("dad", alert_ids=["a1", "a2"], on_no_answer="hard_sos", summary="")
    w.on_cleared("dad", "a1")  # the intervention value cleared; a milder alert is still open
    assert w.pending("dad")[0]["on_no_answer"] == "contacts"
    w.on_cleared("dad", "a2")
    assert w.pending() == []
    clock.advance(120)
    await w.tick()
    assert rec.sos == [] and rec.texted == []


async def test_an_escalation_a_crash_interrupted_runs_again(tmp_path: Path) -> None:
    clock, rec = ManualClock(), Recorder()
    w = make(tmp_path, clock, rec)
    pid = await w.on_alert("dad", alert_ids=["a1"], on_no_answer="hard_sos", summary="")
    p = w._pending[pid]
    w._write(p, "escalating")  # what the tick journals before it starts the SOS
    w2 = make(tmp_path, clock, rec)  # the crash, then a restart before the deadline
    await w2.tick()
    assert rec.sos == [("dad", "soft_sos_unanswered")]


async def test_a_still_wearer_upgrades_the_vanished_pulse_question(tmp_path: Path) -> None:
    clock, rec = ManualClock(), Recorder()
    w = make(tmp_path, clock, rec)
    p1 = await w.on_implausible(
        "dad", device="w", what="heart rate as 0 bpm", on_no_answer="contacts"
    )
    p2 = await w.on_implausible(
        "dad", device="w", what="heart rate as 0 bpm", on_no_answer="hard_sos"
    )
    assert p1 == p2 and len(rec.published) == 1
    assert make(tmp_path, clock, rec).pending("dad")[0]["on_no_answer"] == "hard_sos"  # durable
    clock.advance(61)
    await w.tick()
    assert rec.sos == [("dad", "implausible_unanswered")]


async def test_nobody_to_text_becomes_a_hard_sos(tmp_path: Path) -> None:
    clock, rec = ManualClock(), Recorder()

    async def nobody(person: str, *, prompt_id: str, reason: str, summary: str) -> bool:
        return False

    rec.unanswered = nobody  # type: ignore[method-assign]
    w = make(tmp_path, clock, rec)
    await w.on_alert("dad", alert_ids=["a1"], on_no_answer="contacts", summary="")
    clock.advance(61)
    await w.tick()
    assert rec.sos == [("dad", "soft_sos_unanswered")]


async def test_not_ok_with_nothing_pending_is_a_hard_sos(tmp_path: Path) -> None:
    clock, rec = ManualClock(), Recorder()
    w = make(tmp_path, clock, rec)
    assert await w.on_ack("dad", ok=False, prompt_id=None, device="w") is None
    await w.not_ok("dad", device="w")
    assert rec.sos == [("dad", "user_not_ok")]
