"""Stateful fuzzing of MQTT message sequences through the real gateway, in-process.

A hypothesis state machine feeds `Gateway.on_message` (the real topic table, edge validation,
dedupe, monitor, escalation, SOS playbooks and ladder, durable text queue) on a hand-moved
clock, reusing tests/clinical_runner.py's Runner: readings normal and abnormal, valid and
malformed, duplicates and reorders, SOS start/end, acks, device status, clock advances. After
every step: nothing escaped, at most one open SOS per person, every SOS that opened texted each
emergency contact exactly once, and the gateway's counters add up to what was sent.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from agents.playbooks.ladder import STEP_BASE
from gateway.contract.topics import ack_topic, sos_topic, status_topic, vitals_topic
from tests.clinical_runner import CONTACTS, TICK_S, Runner, household

pytestmark = pytest.mark.fuzz

SECOND_CONTACT = "+447700900203"
# person -> devices; pat has two contacts (tests/clinical_runner.py), kim one.
DEVICES = {"pat": ("watch", "cuff"), "kim": ("band",)}
PHONES = {"pat": CONTACTS, "kim": (SECOND_CONTACT,)}
PAIRS = [(p, d) for p, ds in DEVICES.items() for d in ds]

NORMAL = {"heart_rate": 72, "spo2": 97, "respiratory_rate": 14, "temperature_c": 36.8}
ABNORMAL = [
    {"heart_rate": 150, "spo2": 86},
    {"heart_rate": 35},
    {"respiratory_rate": 32, "spo2": 88, "systolic_bp": 85},
    {"temperature_c": 40.2, "heart_rate": 125},
    {"fall_detected": True},
]
# Payloads the edge must reject whatever the state: (topic kind, bytes or a ts -> bytes maker).
MALFORMED: list[tuple[str, Any]] = [
    ("vitals", b"not json"),
    ("vitals", b"\xff\xfe\x00"),
    ("vitals", b"[]"),
    ("vitals", lambda ts: json.dumps({"ts": ts}).encode()),  # no vital at all
    ("vitals", lambda ts: json.dumps({"ts": ts, "heart_rate": "fast"}).encode()),
    ("vitals", lambda ts: b'{"ts": %f, "heart_rate": NaN}' % ts),
    ("vitals", lambda ts: json.dumps({"ts": ts + 3600, "heart_rate": 70}).encode()),
    ("vitals", lambda ts: json.dumps({"ts": ts, "heart_rate": -5}).encode()),
    ("vitals", lambda ts: json.dumps({"ts": ts, "spo2": 97, "extra": 1}).encode()),
    ("vitals", b"x" * 70_000),
    ("sos", lambda ts: json.dumps({"action": "pause", "ts": ts}).encode()),
    ("sos", lambda ts: json.dumps({"action": "start"}).encode()),
    ("ack", lambda ts: json.dumps({"prompt_id": "sos"}).encode()),
    ("ack", lambda ts: json.dumps({"ok": "perhaps"}).encode()),
    ("status", b"maybe"),
    ("unknown_device", lambda ts: json.dumps({"ts": ts, "heart_rate": 70}).encode()),
    ("unknown_topic", lambda ts: json.dumps({"ts": ts, "heart_rate": 70}).encode()),
]


STATS: Counter[str] = Counter()  # what the runs exercised, printed at the end


class Capture(logging.Handler):
    """ERROR records from the gateway: a swallowed crash is a failure too."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(f"{record.name}: {record.getMessage()}")


class MqttSequences(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="mqttseq-"))
        self.loop = asyncio.new_event_loop()
        self.runner = Runner({"steps": []}, self.dir)
        self._write_household()
        self.run(self.runner.start())
        self.log = Capture()
        logging.getLogger().addHandler(self.log)
        self.expect: Counter[str] = Counter()
        self.seq: Counter[str] = Counter()
        self.last_ts: dict[str, float] = {}
        self.sent: list[tuple[str, bytes]] = []  # valid, non-duplicate readings
        self.acked_ladders: dict[str, int] = {}  # run id -> ladder texts when acked

    def _write_household(self) -> None:
        hh = household({})
        pat = hh["persons"][0]
        pat["devices"] = [{"id": d, "interval_s": 5} for d in DEVICES["pat"]]
        # A second person: no care line, one contact (per-person invariants need two).
        kim = {k: v for k, v in pat.items() if k != "clinician"}
        kim |= {
            "id": "kim",
            "name": "Kim Doe",
            "devices": [{"id": "band", "interval_s": 5}],
            "emergency_contacts": [{"name": "Lee Doe", "phone": SECOND_CONTACT}],
        }
        hh["persons"].append(kim)
        (self.dir / "household.yaml").write_text(yaml.safe_dump(hh))

    # --- plumbing ----------------------------------------------------------------------------

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    @property
    def gw(self) -> Any:
        assert self.runner.asm is not None
        return self.runner.asm.gateway

    @property
    def now(self) -> float:
        return self.runner.clock.now()

    def send(self, topic: str, body: bytes) -> None:
        async def go() -> None:
            await self.gw.on_message(topic, body)
            await self.runner.settle()

        self.run(go())
        self.expect["received"] += 1

    def sql(self, query: str, *args: Any) -> list[Any]:
        return list(self.gw.safety_db.conn().execute(query, args).fetchall())

    def open_hard(self, person: str) -> Any:
        rows = self.sql(
            "SELECT run_id FROM sos_runs WHERE person = ? AND kind = 'hard' AND state = 'open'",
            person,
        )
        return rows[0]["run_id"] if rows else None

    def reading_body(self, person: str, device: str, vitals: dict[str, Any], ts: float) -> bytes:
        self.seq[device] += 1
        self.last_ts[device] = max(ts, self.last_ts.get(device, ts))
        return json.dumps({"ts": ts, "seq": self.seq[device], **vitals}).encode()

    # --- rules -------------------------------------------------------------------------------

    @rule(
        pair=st.sampled_from(PAIRS),
        vitals=st.sampled_from([NORMAL]) | st.sampled_from(ABNORMAL),
        lag=st.sampled_from([0.0, 0.0, 2.0, 30.0, 700.0]),
    )
    def reading(self, pair: tuple[str, str], vitals: dict[str, Any], lag: float) -> None:
        person, device = pair
        topic = vitals_topic(person, device)
        body = self.reading_body(person, device, vitals, self.now - lag)
        self.send(topic, body)
        self.sent.append((topic, body))
        self.expect["readings"] += 1

    @rule(pair=st.sampled_from(PAIRS), vitals=st.sampled_from(ABNORMAL), n=st.integers(3, 6))
    def abnormal_episode(self, pair: tuple[str, str], vitals: dict[str, Any], n: int) -> None:
        """Abnormal readings every 10 s: enough for the monitor to open an alert and ask."""
        person, device = pair
        for _ in range(n):
            self._tick_for(10.0)
            body = self.reading_body(person, device, vitals, self.now)
            self.send(vitals_topic(person, device), body)
            self.sent.append((vitals_topic(person, device), body))
            self.expect["readings"] += 1

    @rule(data=st.data())
    def duplicate(self, data: st.DataObject) -> None:
        """A QoS 1 redelivery: the same bytes again."""
        if not self.sent:
            return
        topic, body = data.draw(st.sampled_from(self.sent))
        self.send(topic, body)
        self.expect["duplicates"] += 1

    @rule(pair=st.sampled_from(PAIRS), back=st.sampled_from([1.0, 20.0, 300.0]))
    def reordered(self, pair: tuple[str, str], back: float) -> None:
        """A new reading older than the last one from that device (out of order)."""
        person, device = pair
        ts = self.last_ts.get(device, self.now) - back
        body = self.reading_body(person, device, NORMAL, ts)
        self.send(vitals_topic(person, device), body)
        self.sent.append((vitals_topic(person, device), body))
        self.expect["readings"] += 1

    @rule(pair=st.sampled_from(PAIRS), located=st.booleans())
    def sos_start(self, pair: tuple[str, str], located: bool) -> None:
        person, device = pair
        was_open = self.open_hard(person)
        body: dict[str, Any] = {"action": "start", "ts": self.now}
        if located:
            body["location"] = {"latitude": 51.5, "longitude": -0.12}
        self.send(sos_topic(person, device), json.dumps(body).encode())
        self.expect["sos_start"] += 1
        now_open = self.open_hard(person)
        assert now_open is not None, "an SOS start left no SOS open"
        if was_open is None:
            self.expect["button_runs"] += 1
        else:
            assert now_open == was_open, "a second SOS start replaced the open one"

    @rule(pair=st.sampled_from(PAIRS))
    def sos_end(self, pair: tuple[str, str]) -> None:
        person, device = pair
        was_open = self.open_hard(person)
        self.send(sos_topic(person, device), json.dumps({"action": "end", "ts": self.now}).encode())
        self.expect["sos_end"] += 1
        assert self.open_hard(person) is None, "an SOS end left the SOS open"
        if was_open is not None:
            self.expect["end_runs"] += 1

    @rule(pair=st.sampled_from(PAIRS), ok=st.booleans())
    def ack_sos(self, pair: tuple[str, str], ok: bool) -> None:
        """A family member's "I'm helping" for an open SOS (prompt_id "sos")."""
        person, device = pair
        run_id = self.open_hard(person)
        body = json.dumps({"ok": ok, "prompt_id": "sos", "ts": self.now}).encode()
        self.send(ack_topic(person, device), body)
        self.expect["acks"] += 1
        if run_id is not None and run_id not in self.acked_ladders:
            self.acked_ladders[run_id] = len(self.ladder_texts(run_id))

    @rule(pair=st.sampled_from(PAIRS), ok=st.booleans(), data=st.data())
    def ack_prompt(self, pair: tuple[str, str], ok: bool, data: st.DataObject) -> None:
        """An answer to "are you OK?": a prompt id the gateway sent, a stale/unknown one, or
        none at all."""
        person, device = pair
        asked = [
            p["prompt_id"]
            for _, t, p in self.runner.result.published
            if t == f"health/{person}/notify" and isinstance(p, dict) and p.get("prompt_id")
        ]
        choice = st.sampled_from(asked) if asked else st.just(None)
        prompt_id = data.draw(choice | st.sampled_from([None, "p-unknown"]))
        body: dict[str, Any] = {"ok": ok, "ts": self.now}
        if prompt_id is not None:
            body["prompt_id"] = prompt_id
        self.send(ack_topic(person, device), json.dumps(body).encode())
        self.expect["acks"] += 1

    @rule(pair=st.sampled_from(PAIRS), online=st.booleans())
    def status(self, pair: tuple[str, str], online: bool) -> None:
        person, device = pair
        self.send(status_topic(person, device), b"online" if online else b"offline")
        self.expect["statuses"] += 1

    @rule(pair=st.sampled_from(PAIRS), bad=st.sampled_from(MALFORMED))
    def malformed(self, pair: tuple[str, str], bad: tuple[str, Any]) -> None:
        person, device = pair
        kind, make = bad
        body = make(self.now) if callable(make) else make
        topic = {
            "vitals": vitals_topic(person, device),
            "sos": sos_topic(person, device),
            "ack": ack_topic(person, device),
            "status": status_topic(person, device),
            "unknown_device": vitals_topic(person, "stranger"),
            "unknown_topic": f"health/{person}/{device}/telemetry",
        }[kind]
        self.send(topic, body)
        self.expect["rejected"] += 1

    @rule(seconds=st.sampled_from([1.0, 5.0, 30.0, 61.0, 120.0, 301.0, 900.0]))
    def advance(self, seconds: float) -> None:
        """Time passes: the monitor, escalation watcher and SOS ladder tick on the way."""
        self._tick_for(seconds)

    def _tick_for(self, seconds: float) -> None:
        async def go() -> None:
            end = self.now + seconds
            while self.now < end:
                self.runner.clock.advance(min(TICK_S, end - self.now))
                await self.gw.tick()
                await self.gw.ladder.tick()
                await self.runner.settle()

        self.run(go())

    # --- invariants --------------------------------------------------------------------------

    def ladder_texts(self, run_id: str) -> list[dict[str, Any]]:
        return [
            m
            for m in self.gw.texts.messages()
            if m["key"].startswith(f"{run_id}:") and int(m["key"].split(":")[1]) >= STEP_BASE
        ]

    @invariant()
    def nothing_crashed(self) -> None:
        assert self.log.records == [], self.log.records
        assert self.gw.counters["sos_task_errors"] == 0

    @invariant()
    def at_most_one_open_sos_per_person(self) -> None:
        rows = self.sql(
            "SELECT person, count(*) AS n FROM sos_runs"
            " WHERE kind = 'hard' AND state = 'open' GROUP BY person"
        )
        assert all(r["n"] <= 1 for r in rows), [dict(r) for r in rows]

    @invariant()
    def every_sos_texts_each_contact_exactly_once(self) -> None:
        texts = self.gw.texts.messages()
        runs = self.sql("SELECT run_id, person, kind, trigger, status FROM sos_runs")
        assert all(r["status"] != "running" for r in runs), "a run was left half done"
        for r in runs:
            if r["kind"] == "soft":
                continue
            purpose = "sos:contact" if r["kind"] == "hard" else "sos_end:contact"
            # The playbook's own steps (the ladder's re-texts have steps from STEP_BASE on).
            got = Counter(
                m["to_phone"]
                for m in texts
                if m["key"].startswith(f"{r['run_id']}:")
                and int(m["key"].split(":")[1]) < STEP_BASE
                and m["purpose"] == purpose
            )
            assert got == Counter(PHONES[r["person"]]), (dict(r), got)
        # No SOS text outside a journaled run (a playbook step or a ladder rung of one).
        run_ids = {r["run_id"] for r in runs}
        for m in texts:
            if m["purpose"].startswith(("sos:", "sos_end:")):
                assert m["key"].split(":")[0] in run_ids, m["key"]
        button = sum(1 for r in runs if r["kind"] == "hard" and r["trigger"] == "button")
        assert button == self.expect["button_runs"]
        assert sum(1 for r in runs if r["kind"] == "end") == self.expect["end_runs"]

    @invariant()
    def an_acknowledged_sos_is_not_chased(self) -> None:
        for run_id, n in self.acked_ladders.items():
            assert len(self.ladder_texts(run_id)) == n, f"ladder texted after the ack of {run_id}"

    @invariant()
    def counters_add_up(self) -> None:
        c = self.gw.counters
        for k in ("received", "rejected", "duplicates", "readings", "sos_start", "sos_end"):
            assert c[k] == self.expect[k], (k, c[k], self.expect[k])
        assert c["acks"] == self.expect["acks"]
        handled = sum(
            c[k] for k in ("rejected", "duplicates", "readings", "sos_start", "sos_end", "acks")
        )
        assert c["received"] == handled + self.expect["statuses"] + c["intents"]
        assert sum(self.gw.rejects.values()) == c["rejected"]

    def teardown(self) -> None:
        logging.getLogger().removeHandler(self.log)
        STATS.update(self.gw.counters)
        STATS.update({f"expect_{k}": v for k, v in self.expect.items()})
        STATS["texts"] += len(self.gw.texts.messages())
        try:
            if self.runner.asm is not None:
                self.run(self.runner.stop())
            # Delivery reports hop onto this loop from the dispatcher's threads: let them land.
            self.run(asyncio.sleep(0.01))
        finally:
            self.loop.close()
            shutil.rmtree(self.dir, ignore_errors=True)


def test_mqtt_message_sequences() -> None:
    run_state_machine_as_test(
        MqttSequences,
        settings=settings(
            max_examples=60,
            stateful_step_count=40,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
    print("exercised:", dict(sorted(STATS.items())))
