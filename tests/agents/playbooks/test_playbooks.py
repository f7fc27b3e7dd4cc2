from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.assistant.trajectory import END, validate_trajectory
from agents.playbooks.journal import SosError, SosJournal
from agents.playbooks.sos import SosRunner
from agents.tools.registry import ToolContext, ToolRegistry
from agents.tools.sos_tools import SosToolDeps, build_sos_registry, text_key
from gateway.base.clock import ManualClock
from gateway.base.db import Database
from gateway.contract.topics import EventType
from gateway.contract.values import Event
from gateway.contract.vital_words import leaks
from gateway.contract.vitals import VITALS
from gateway.household.model import Household
from tests.agents import (
    ALICE_CONTACTS,
    AMB_NORTH,
    AMB_WEST,
    HOME,
    HOUSEHOLD_DATA,
    FakeTextQueue,
    RecordingPublisher,
    household,
)

HARD_TOOLS = [
    "notify_user", "get_location", "search_ambulance", "send_message", "send_message",
    "notify_user",
]  # fmt: skip
END_TOOLS = [
    "notify_user", "get_assigned_ambulance", "send_message", "send_message", "notify_user"
]  # fmt: skip
MAPS_HOME = f"https://maps.google.com/?q={HOME[0]:.5f},{HOME[1]:.5f}"


class Crash(BaseException):
    """The process dying: nothing in the runner may catch it."""


class Gateway:
    """One gateway process: a runner on a database file. The text queue is shared across
    'restarts' because the real one is durable."""

    def __init__(
        self,
        db_path: Path,
        texts: FakeTextQueue,
        hh: Household | None = None,
        clock: ManualClock | None = None,
    ) -> None:
        self.clock = clock or ManualClock()
        self.hh = hh or household()
        self.db = Database(db_path)
        self.publisher = RecordingPublisher()
        self.texts = texts
        self.events: list[Event] = []
        self.bus_open = asyncio.Event()  # cleared: emit_event blocks, like a full bus
        self.bus_open.set()
        self.saved: list[dict[str, Any]] = []
        self.audit: list[dict[str, Any]] = []
        self.latest: dict[str, tuple[float, float]] = {}
        self.journal = SosJournal(self.db, save_trajectory=self._save)
        self.registry: ToolRegistry = build_sos_registry(
            SosToolDeps(
                publisher=self.publisher,
                texts=texts,
                household=self.hh,
                location_lookup=self.latest.get,
                journal=self.journal,
                audit=self.audit.append,
                clock=self.clock,
            )
        )
        self.runner = SosRunner(self.registry, self.journal, self.hh, self._emit, self.clock)

    def _save(self, run_id: str, **kw: Any) -> None:
        self.saved.append({"run_id": run_id, **kw})

    async def _emit(self, event: Event) -> None:
        await self.bus_open.wait()
        self.events.append(event)

    async def emitted(self) -> list[Event]:
        await self.runner.drain()
        return self.events

    def crash_at(self, k: int, *, after_effect: bool) -> None:
        """Die at the k-th tool call (0-based), before it runs or after it acted."""
        real = self.registry.call
        n = 0

        async def call(name: str, params: Any, *, ctx: ToolContext, allowed: Any = None) -> Any:
            nonlocal n
            n += 1
            if n - 1 == k and not after_effect:
                raise Crash
            out = await real(name, params, ctx=ctx, allowed=allowed)
            if n - 1 == k:
                raise Crash
            return out

        self.registry.call = call  # type: ignore[method-assign]

    def trajectory(self, run_id: str) -> dict[str, Any]:
        run = self.journal.get(run_id)
        assert run is not None
        return dict(run.trajectory)

    def close(self) -> None:
        self.db.close()


def tools_of(traj: dict[str, Any]) -> list[str]:
    return [s["value"]["tool"] for s in traj["interaction_trajectory"] if s["from"] == "caller"]


def callers(traj: dict[str, Any]) -> list[dict[str, Any]]:
    return [s["value"] for s in traj["interaction_trajectory"] if s["from"] == "caller"]


@pytest.fixture
def texts() -> FakeTextQueue:
    return FakeTextQueue()


@pytest.fixture
def gw(tmp_path: Path, texts: FakeTextQueue) -> Iterator[Gateway]:
    g = Gateway(tmp_path / "gw.db", texts)
    yield g
    g.close()


def assert_one_text_each(texts: FakeTextQueue, phones: tuple[str, ...]) -> None:
    assert sorted(t.to for t in texts.sent) == sorted(phones)


# --- hard SOS ----------------------------------------------------------------------------------


async def test_hard_sos_sequence_parameters_and_texts(gw: Gateway) -> None:
    assert await gw.runner.start("alice", device="watch-alice", location=None, trigger="button")

    run = gw.runner.open_sos("alice")
    assert run is not None
    assert (run["status"], run["state"], run["ambulance_id"]) == ("completed", "open", "AMB-west")
    assert run["location"] == {"latitude": HOME[0], "longitude": HOME[1]}
    traj = run["trajectory"]
    validate_trajectory(traj)
    assert traj["category"] == "hard_sos"
    states = traj["interaction_trajectory"]
    assert states[0]["value"]["user_details"] == {
        "user_id": "alice",
        "name": "Alice Moreau",
        "timestamp": "2026-09-21T15:13:20",  # ManualClock start, Europe/London summer time
    }
    assert states[1] == {"from": "user", "value": "SOS button pressed"}
    assert tools_of(traj) == HARD_TOOLS
    c = callers(traj)
    assert c[0]["parameters"]["user_id"] == "alice"
    assert c[1]["parameters"] == {}
    assert c[2]["parameters"] == {"location": {"latitude": HOME[0], "longitude": HOME[1]}}
    assert c[3]["parameters"]["phone_no"] == AMB_WEST
    assert set(c[3]["parameters"]) == {"text", "phone_no"}
    assert c[4]["parameters"]["to_emergency_contacts"] is True
    assert "phone_no" not in c[4]["parameters"]
    assert "AMB-west" in c[5]["parameters"]["message"]
    # No names: the summary must follow from the trajectory alone (teacher-forced replay).
    assert "emergency contacts have been texted" in c[5]["parameters"]["message"]
    observations = [s["value"] for s in states if s["from"] == "observation"]
    assert observations[2] == {"result": {"ambulance_id": "AMB-west", "phone_no": AMB_WEST}}
    assert all(
        s["value"]["reason"] and s["value"]["action"] for s in states if s["from"] == "planner"
    )
    assert states[-1]["value"]["action"] == END

    # Texts: the ambulance gets name, id, coordinates and a maps link; each contact one text.
    [to_amb] = gw.texts.to(AMB_WEST)
    for needle in ("Alice Moreau", "alice", f"{HOME[0]:.5f}", f"{HOME[1]:.5f}", MAPS_HOME):
        assert needle in to_amb.body
    assert to_amb.key == text_key(run["run_id"], 3, AMB_WEST)
    assert to_amb.purpose == "sos:direct"
    for phone in ALICE_CONTACTS:
        [t] = gw.texts.to(phone)
        assert "Alice Moreau" in t.body and MAPS_HOME in t.body and "AMB-west" in t.body
        assert t.key == text_key(run["run_id"], 4, phone)
        assert t.purpose == "sos:contact"
    assert_one_text_each(gw.texts, (AMB_WEST, *ALICE_CONTACTS))

    # The user heard twice, as sos notifications.
    assert [m.payload["kind"] for m in gw.publisher.messages] == ["sos", "sos"]
    assert all(m.topic == "health/alice/notify" for m in gw.publisher.messages)

    # One hard_sos event, with the ambulance, emitted before the texts.
    [ev] = await gw.emitted()
    assert ev.type == EventType.HARD_SOS
    assert dict(ev.data) == {
        "run_id": run["run_id"], "trigger": "button", "device": "watch-alice",
        "ambulance_id": "AMB-west",
    }  # fmt: skip

    # The trajectory was saved at open and after every step: running ... completed.
    mine = [s for s in gw.saved if s["run_id"] == run["run_id"]]
    assert [s["status"] for s in mine] == ["running"] * 7 + ["completed"]
    assert [len(s["trajectory"]["interaction_trajectory"]) for s in mine] == [
        2, 5, 8, 11, 14, 17, 20, 21
    ]  # fmt: skip
    assert mine[-1]["category"] == "hard_sos" and mine[-1]["person"] == "alice"

    # Audit: one record per tool call, tagged with the run, texts redacted.
    assert [a["tool"] for a in gw.audit] == HARD_TOOLS
    assert {a["run_id"] for a in gw.audit} == {run["run_id"]}
    assert "Alice" not in repr(gw.audit)


async def test_press_location_and_escalation_trigger(gw: Gateway) -> None:
    gw.latest["alice"] = (51.0, 0.0)  # an older device fix loses to the press's own
    assert await gw.runner.start(
        "alice", device=None, location=(51.56, -0.14), trigger="escalation"
    )
    run = gw.runner.open_sos("alice")
    assert run is not None
    states = run["trajectory"]["interaction_trajectory"]
    assert states[1]["value"] == "Soft SOS unanswered: escalated to hard SOS"
    assert run["ambulance_id"] == "AMB-north"
    [t] = gw.texts.to(AMB_NORTH)
    assert "51.56000, -0.14000" in t.body and "did not answer" in t.body


@pytest.mark.parametrize(
    ("trigger", "turn", "told"),
    [
        ("button", "SOS button pressed", "pressed SOS"),
        ("api", "SOS requested through the gateway", "SOS raised at the home gateway"),
        ("soft_sos_unanswered", "Soft SOS unanswered: escalated to hard SOS", "did not answer"),
        ("fall_no_movement", "Fall detected and unanswered: escalated to hard SOS", "fell"),
        (
            "user_not_ok",
            "User answered not OK to a soft SOS: escalated to hard SOS",
            "not being OK",
        ),
        ("something-new", "SOS button pressed", "pressed SOS"),
    ],
)
async def test_trigger_sets_user_turn_and_texts(
    gw: Gateway, trigger: str, turn: str, told: str
) -> None:
    assert await gw.runner.start("alice", device=None, location=None, trigger=trigger)
    run = gw.runner.open_sos("alice")
    assert run is not None and run["trigger"] == trigger
    assert run["trajectory"]["interaction_trajectory"][1]["value"] == turn
    assert tools_of(run["trajectory"]) == HARD_TOOLS
    assert all(told in t.body for t in gw.texts.sent)


async def test_second_press_does_not_resend(gw: Gateway) -> None:
    assert await gw.runner.start("alice", device="watch-alice", location=None, trigger="button")
    before = list(gw.texts.submits)
    assert not await gw.runner.start("alice", device="watch-alice", location=None, trigger="button")
    assert gw.texts.submits == before
    last = gw.publisher.messages[-1].payload
    assert last["kind"] == "sos"
    assert "already active" in last["text"] and "AMB-west" in last["text"]
    assert len(await gw.emitted()) == 1


async def test_a_blocked_event_bus_never_delays_the_texts(gw: Gateway) -> None:
    gw.bus_open.clear()
    assert await gw.runner.start("alice", device=None, location=None, trigger="button")
    assert await gw.runner.end("alice", device=None, trigger="button")  # the lock was released
    assert len(gw.texts.to(AMB_WEST)) == 2
    assert gw.events == []
    gw.bus_open.set()
    assert [e.type for e in await gw.emitted()] == [EventType.HARD_SOS, EventType.SOS_END]


async def test_concurrent_presses_are_serialised(gw: Gateway) -> None:
    results = await asyncio.gather(
        *(gw.runner.start("alice", device=None, location=None, trigger="button") for _ in range(3)),
        gw.runner.start("bob", device=None, location=None, trigger="button"),
    )
    assert sorted(results[:3]) == [False, False, True]
    assert results[3] is True
    assert len(gw.texts.to(AMB_WEST)) == 2  # one per person
    assert len(gw.texts.to(ALICE_CONTACTS[0])) == 2  # Ana is a contact of both
    assert len(gw.texts.to(ALICE_CONTACTS[1])) == 1


async def test_no_ambulance_still_texts_contacts(tmp_path: Path, texts: FakeTextQueue) -> None:
    gw = Gateway(tmp_path / "gw.db", texts, hh=household(ambulances=[]))
    assert await gw.runner.start("alice", device=None, location=None, trigger="button")
    run = gw.runner.open_sos("alice")
    assert run is not None
    assert run["status"] == "failed" and run["state"] == "open"
    traj = run["trajectory"]
    validate_trajectory(traj)
    # The ambulance text is skipped; contacts are told to call emergency services.
    assert tools_of(traj) == ["notify_user", "get_location", "search_ambulance", "send_message",
                              "notify_user"]  # fmt: skip
    obs = [s["value"] for s in traj["interaction_trajectory"] if s["from"] == "observation"]
    assert obs[2]["error"]["type"] == "NoAmbulanceError"
    assert_one_text_each(texts, ALICE_CONTACTS)
    assert all("call emergency services" in t.body for t in texts.sent)
    assert "Call emergency services now" in gw.publisher.texts()[-1]
    assert (await gw.emitted())[0].data["ambulance_id"] is None
    # A second press is honest about it.
    assert not await gw.runner.start("alice", device=None, location=None, trigger="button")
    assert "no ambulance could be texted" in gw.publisher.texts()[-1]
    gw.close()


async def test_person_without_contacts(gw: Gateway) -> None:
    assert await gw.runner.start("carol", device=None, location=None, trigger="button")
    run = gw.runner.open_sos("carol")
    assert run is not None and run["status"] == "failed"
    assert tools_of(run["trajectory"]) == HARD_TOOLS
    assert_one_text_each(gw.texts, (AMB_WEST,))
    assert "could not be texted" in gw.publisher.texts()[-1]


async def test_broker_down_does_not_stop_the_texts(gw: Gateway) -> None:
    async def down(topic: str, payload: Any, **kw: Any) -> None:
        raise ConnectionError("broker unreachable")

    gw.publisher.publish = down  # type: ignore[method-assign]
    assert await gw.runner.start("alice", device=None, location=None, trigger="button")
    assert_one_text_each(gw.texts, (AMB_WEST, *ALICE_CONTACTS))
    run = gw.runner.open_sos("alice")
    assert run is not None and run["status"] == "failed"  # the notifications are recorded as failed
    obs = [
        s["value"]
        for s in run["trajectory"]["interaction_trajectory"]
        if s["from"] == "observation"
    ]
    assert obs[0]["error"]["type"] == "ToolUpstreamError"


async def test_repeated_cycles_are_never_rate_limited(gw: Gateway) -> None:
    # More start/end cycles than send_message's per-person limit (20 a minute) allows.
    for _ in range(6):
        assert await gw.runner.start("alice", device=None, location=None, trigger="button")
        assert await gw.runner.end("alice", device=None, trigger="button")
    assert len(gw.texts.to(AMB_WEST)) == 12
    assert not any(a["error"] for a in gw.audit)


async def test_unknown_person_is_refused(gw: Gateway) -> None:
    with pytest.raises(SosError):
        await gw.runner.start("zed", device=None, location=None, trigger="button")
    assert gw.texts.submits == []


# --- end SOS -----------------------------------------------------------------------------------


async def test_end_sos(gw: Gateway) -> None:
    assert not await gw.runner.end("alice", device=None, trigger="button")  # none open
    assert await gw.runner.start("alice", device="watch-alice", location=None, trigger="button")
    hard_id = gw.runner.open_sos("alice")["run_id"]  # type: ignore[index]
    n_texts = len(gw.texts.sent)

    assert await gw.runner.end("alice", device="watch-alice", trigger="button")
    assert gw.runner.open_sos("alice") is None
    end_saved = [s for s in gw.saved if s["run_id"] != hard_id]
    end_id = end_saved[-1]["run_id"]
    traj = gw.trajectory(end_id)
    validate_trajectory(traj)
    assert traj["category"] == "end_sos"
    assert traj["interaction_trajectory"][1]["value"] == "End SOS button pressed"
    assert tools_of(traj) == END_TOOLS
    c = callers(traj)
    assert c[1]["parameters"] == {"user_id": "alice"}
    assert c[2]["parameters"]["phone_no"] == AMB_WEST
    assert c[3]["parameters"]["to_emergency_contacts"] is True
    assert end_saved[-1]["status"] == "completed"

    new = gw.texts.sent[n_texts:]
    assert sorted(t.to for t in new) == sorted((AMB_WEST, *ALICE_CONTACTS))
    assert "no longer needs an ambulance" in next(t.body for t in new if t.to == AMB_WEST)
    assert all("emergency is over" in t.body for t in new if t.to in ALICE_CONTACTS)
    assert all(t.purpose.startswith("sos_end:") for t in new)
    assert [m.payload["kind"] for m in gw.publisher.messages[-2:]] == ["sos_end", "sos_end"]
    assert "AMB-west was told" in gw.publisher.texts()[-1]

    ev = (await gw.emitted())[-1]
    assert ev.type == EventType.SOS_END
    assert dict(ev.data) == {
        "run_id": hard_id, "end_run_id": end_id, "trigger": "button",
        "device": "watch-alice", "ambulance_id": "AMB-west",
    }  # fmt: skip
    hard = gw.journal.get(hard_id)
    assert hard is not None and hard.state == "closed"

    # Nothing open any more: a second end does nothing; a new press opens a new SOS.
    assert not await gw.runner.end("alice", device=None, trigger="button")
    assert await gw.runner.start("alice", device=None, location=None, trigger="button")
    assert gw.runner.open_sos("alice")["run_id"] != hard_id  # type: ignore[index]


# --- soft SOS ----------------------------------------------------------------------------------

ABNORMAL = {
    "spo2": {"value": 87.0, "unit": "%", "range": [94, 100], "class": "low"},
    "heart_rate": {"value": 124, "unit": "bpm", "range": [50, 100], "class": "high"},
    "respiratory_rate": {"value": 25, "unit": "/min", "range": [12, 20], "class": "high"},
}


async def test_soft_sos_lists_every_abnormal_vital(gw: Gateway) -> None:
    advice = "If you feel unwell, call emergency services or book an appointment."
    run_id = await gw.runner.soft("alice", ABNORMAL, advice, severity="medium", alert_id="al-1")
    traj = gw.trajectory(run_id)
    validate_trajectory(traj)
    assert traj["category"] == "soft_sos"
    states = traj["interaction_trajectory"]
    # The same shape and words as the brief's example.
    assert states[1]["value"] == (
        "Soft SOS triggered. Abnormal Vitals: {'spo2': 87, 'heart_rate': 124, 'respiratory_rate': 25}"
    )
    assert states[2]["value"] == {
        "reason": "Vitals are abnormal; the user must be told which ones and what to do.",
        "action": "Call notify_user with the abnormal vitals and advice.",
    }
    assert states[4]["value"] == {"result": True}
    assert states[5]["value"] == {"reason": "The user has been informed.", "action": END}
    msg = states[3]["value"]["parameters"]["message"]
    for part in ("oxygen saturation 87% (low, normal 94-100)",
                 "heart rate 124 bpm (high, normal 50-100)",
                 "breathing rate 25 per minute (high, normal 12-20)", advice):  # fmt: skip
        assert part in msg
    assert msg.startswith("Soft SOS: your oxygen saturation 87% (low, normal 94-100), ")
    assert msg.endswith(f"all outside your normal range. {advice}")
    [m] = gw.publisher.messages
    assert (m.payload["kind"], m.payload["text"]) == ("soft_sos", msg)
    # No prompt_id: the escalation watcher asks "are you OK?" with its own prompt ids.
    assert "prompt_id" not in m.payload
    assert gw.journal.get(run_id).params["alert_id"] == "al-1"  # type: ignore[union-attr]
    assert gw.texts.submits == []  # a soft SOS never texts anyone
    assert gw.runner.open_sos("alice") is None
    assert gw.saved[-1]["status"] == "completed"


async def test_soft_sos_from_monitor_evidence(gw: Gateway) -> None:
    # gateway.monitor's evidence: `normal` holds the range, and in-range vitals ride along.
    evidence = {
        "spo2": {"value": 84.0, "unit": "%", "class": "critical_low",
                 "normal": [92.0, 100.0], "critical": [85.0, 100.0]},
        "heart_rate": {"value": 72.0, "unit": "bpm", "class": "normal",
                       "normal": [50.0, 100.0], "critical": [40.0, 130.0]},
    }  # fmt: skip
    advice = "Call emergency services now, or press SOS on your watch."
    run_id = await gw.runner.soft("alice", evidence, advice, severity="high", alert_id="a1")
    states = gw.trajectory(run_id)["interaction_trajectory"]
    assert states[1]["value"] == "Soft SOS triggered. Abnormal Vitals: {'spo2': 84}"
    msg = states[3]["value"]["parameters"]["message"]
    assert msg == (
        "Soft SOS: your oxygen saturation 84% (critical low, normal 92-100), outside your "
        "normal range. " + advice
    )  # the heart rate is in range, and the urgent advice is not repeated


async def test_soft_sos_when_no_single_vital_is_out_of_range(gw: Gateway) -> None:
    evidence = {"respiratory_rate": {"value": 20, "unit": "/min", "class": "normal",
                                     "normal": [12, 20]}}  # fmt: skip
    run_id = await gw.runner.soft("alice", evidence, "", severity="medium", alert_id=None)
    msg = callers(gw.trajectory(run_id))[0]["parameters"]["message"]
    assert "together need attention" in msg and "breathing rate 20 per minute" in msg
    empty = await gw.runner.soft("alice", {}, "", severity="low", alert_id=None)
    assert (
        "your readings need attention" in callers(gw.trajectory(empty))[0]["parameters"]["message"]
    )
    assert len(gw.publisher.messages) == 2  # a soft SOS is never dropped


async def test_soft_sos_high_news2_urges_emergency_services(gw: Gateway) -> None:
    one = {"systolic_bp": {"value": 88, "unit": "mmHg", "range": [100, 140], "class": "low"}}
    run_id = await gw.runner.soft("alice", one, "", severity="high", alert_id=None)
    msg = callers(gw.trajectory(run_id))[0]["parameters"]["message"]
    assert msg.startswith(
        "Soft SOS: your systolic blood pressure 88 mmHg (low, normal 100-140), outside your "
        "normal range. Call emergency services now, or press SOS."
    )


async def test_soft_sos_texts_every_vital_in_words(tmp_path: Path, texts: FakeTextQueue) -> None:
    """The whole soft SOS, wearer, family and care line, with every vital of the table in the
    evidence (sleep as its nested stages, and values no device should send): what reaches
    people is words and units, never a Python dict, None or nan."""
    data = {**HOUSEHOLD_DATA, "persons": [
        {**HOUSEHOLD_DATA["persons"][0],
         "clinician": {"name": "Dr Chen", "phone": "+447700900299"}}]}  # fmt: skip
    g = Gateway(tmp_path / "gw.db", texts, hh=Household.model_validate(data))
    odd = {"sleep": {"deep": 75, "light": 238, "rem": 94, "awake": 44},
           "heart_rate": float("nan"), "spo2": None, "consciousness": "V",
           "temperature_c": "38.9", "steps": [1, 2]}  # fmt: skip
    evidence = {
        v.name: {"value": odd.get(v.name, 91.0), "unit": v.unit, "class": "low",
                 "normal": [94.0, 100.0]}
        for v in VITALS
    }  # fmt: skip
    response = {"tell_wearer": True, "contacts_now": True, "clinician_now": True}
    run_id = await g.runner.soft("alice", evidence, "", severity="high", alert_id="a1",
                                 response=response, extra={"news2": {"total": 9}})  # fmt: skip
    sent = [*g.publisher.texts(), *(t.body for t in texts.sent)]
    # The wearer, two contacts (one send_message to all) and the care line.
    assert tools_of(g.trajectory(run_id)).count("send_message") == 2 and len(sent) == 4
    for text in sent:
        assert leaks(text) == [], (leaks(text), text)
    assert (
        "sleep: 6 h 47 min asleep (deep 1 h 15 min, light 3 h 58 min, REM 1 h 34 min; "
        "awake 44 min)" in sent[0]
    )
    assert "heart rate unreadable" in sent[0] and "temperature 38.9 °C" in sent[0]
    g.close()


# --- crash and resume ----------------------------------------------------------------------------


@pytest.mark.parametrize("after_effect", [False, True], ids=["before", "after"])
@pytest.mark.parametrize("k", range(6))
async def test_hard_sos_resumes_after_crash(
    tmp_path: Path, texts: FakeTextQueue, k: int, after_effect: bool
) -> None:
    clock = ManualClock()
    first = Gateway(tmp_path / "gw.db", texts, clock=clock)
    first.crash_at(k, after_effect=after_effect)
    with pytest.raises(Crash):
        await first.runner.start("alice", device="watch-alice", location=None, trigger="button")
    first.close()

    second = Gateway(tmp_path / "gw.db", texts, clock=clock)  # the restarted gateway
    [run_id] = await second.runner.resume()
    assert await second.runner.resume() == []  # nothing left

    run = second.journal.get(run_id)
    assert run is not None
    assert (run.status, run.state, run.ambulance_id) == ("completed", "open", "AMB-west")
    validate_trajectory(dict(run.trajectory))
    assert tools_of(dict(run.trajectory)) == HARD_TOOLS
    # Exactly one text per recipient, whatever step the crash hit.
    assert_one_text_each(texts, (AMB_WEST, *ALICE_CONTACTS))
    if after_effect and k in (3, 4):
        assert len(texts.submits) > 3  # the repeated submit really happened and was deduped
    # The hard_sos event has one identity across the restart.
    events = await first.emitted() + await second.emitted()
    assert {e.id for e in events} == {f"{run_id}:hard_sos"}
    assert events[-1].data["ambulance_id"] == "AMB-west"
    # The user got the final summary from the resumed run.
    assert "AMB-west has been texted" in second.publisher.texts()[-1]
    second.close()


@pytest.mark.parametrize("k", range(5))
async def test_end_sos_resumes_after_crash(tmp_path: Path, texts: FakeTextQueue, k: int) -> None:
    first = Gateway(tmp_path / "gw.db", texts)
    assert await first.runner.start("alice", device=None, location=None, trigger="button")
    hard_texts = len(texts.sent)
    first.crash_at(k, after_effect=True)
    with pytest.raises(Crash):
        await first.runner.end("alice", device=None, trigger="button")
    assert first.runner.open_sos("alice") is not None  # still open until End completes
    first.close()

    second = Gateway(tmp_path / "gw.db", texts)
    [end_id] = await second.runner.resume()
    assert second.runner.open_sos("alice") is None
    traj = second.trajectory(end_id)
    validate_trajectory(traj)
    assert tools_of(traj) == END_TOOLS
    new = texts.sent[hard_texts:]
    assert sorted(t.to for t in new) == sorted((AMB_WEST, *ALICE_CONTACTS))
    assert [e.type for e in await second.emitted()] == [EventType.SOS_END]
    second.close()


async def test_press_after_crash_finishes_the_open_run(
    tmp_path: Path, texts: FakeTextQueue
) -> None:
    first = Gateway(tmp_path / "gw.db", texts)
    first.crash_at(3, after_effect=False)
    with pytest.raises(Crash):
        await first.runner.start("alice", device=None, location=None, trigger="button")
    first.close()

    second = Gateway(tmp_path / "gw.db", texts)
    # Pressed again before resume() ran: the interrupted run is finished, not duplicated.
    assert not await second.runner.start("alice", device=None, location=None, trigger="button")
    assert_one_text_each(texts, (AMB_WEST, *ALICE_CONTACTS))
    assert await second.runner.resume() == []
    second.close()


async def test_cancelled_run_resumes_without_resending(
    tmp_path: Path, texts: FakeTextQueue
) -> None:
    first = Gateway(tmp_path / "gw.db", texts)
    blocked = asyncio.Event()
    real_publish = first.publisher.publish

    async def publish(topic: str, payload: Any, **kw: Any) -> None:
        if len(first.publisher.messages) == 1:  # the final summary: hang until cancelled
            blocked.set()
            await asyncio.Event().wait()
        await real_publish(topic, payload, **kw)

    first.publisher.publish = publish  # type: ignore[method-assign]
    task = asyncio.create_task(
        first.runner.start("alice", device=None, location=None, trigger="button")
    )
    await blocked.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_one_text_each(texts, (AMB_WEST, *ALICE_CONTACTS))
    first.close()

    second = Gateway(tmp_path / "gw.db", texts)
    [run_id] = await second.runner.resume()
    assert_one_text_each(texts, (AMB_WEST, *ALICE_CONTACTS))
    assert second.journal.get(run_id).status == "completed"  # type: ignore[union-attr]
    assert len(second.publisher.messages) == 1  # only the summary was redone
    second.close()


async def test_soft_sos_resumes_after_crash(tmp_path: Path, texts: FakeTextQueue) -> None:
    first = Gateway(tmp_path / "gw.db", texts)
    first.crash_at(0, after_effect=False)
    with pytest.raises(Crash):
        await first.runner.soft("alice", ABNORMAL, "", severity="low", alert_id="al-2")
    first.close()
    second = Gateway(tmp_path / "gw.db", texts)
    [run_id] = await second.runner.resume()
    [m] = second.publisher.messages
    assert m.payload["kind"] == "soft_sos" and "oxygen saturation 87%" in m.payload["text"]
    validate_trajectory(second.trajectory(run_id))
    second.close()
