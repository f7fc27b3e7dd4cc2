"""TextDispatcher: durable, idempotent, retrying, crash-reconciling. Real SDK → local sink."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from gateway.base.db import Database
from gateway.base.errors import NotificationError
from gateway.base.ports import SmsSender
from gateway.notify.dispatcher import TextDispatcher, marker_for, text_with_marker
from gateway.notify.sms import OutboxSender, TwilioSender
from simulators.sms_sink import SmsSink

SID = "AC" + "e5" * 16
TOKEN = "tok"
FROM = "+15005550006"
AMBULANCE = "+447700900111"
CONTACT = "+447700900122"
BODY = "SOS: Ana Silva needs help at 51.5007,-0.1246"
FAST = (0.01, 0.02)


class Events:
    """Thread-safe recorder for on_event (called from worker threads)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.items: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, kind: str, data: Mapping[str, Any]) -> None:
        with self._cond:
            self.items.append((kind, dict(data)))
            self._cond.notify_all()

    def kinds(self) -> list[str]:
        with self._cond:
            return [k for k, _ in self.items]

    def wait(self, kind: str, timeout: float = 10.0) -> dict[str, Any]:
        with self._cond:
            ok = self._cond.wait_for(lambda: any(k == kind for k, _ in self.items), timeout)
            assert ok, f"no {kind} event; got {[k for k, _ in self.items]}"
            return next(d for k, d in self.items if k == kind)


@pytest.fixture
def sink() -> Iterator[SmsSink]:
    with SmsSink(account_sid=SID, auth_token=TOKEN) as s:
        yield s


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "gw.db"


Factory = Callable[..., TextDispatcher]


@pytest.fixture
def make(sink: SmsSink, db_path: Path) -> Iterator[Factory]:
    """Build dispatchers on the shared DB file; each gets its own Database (like a restart)."""
    made: list[tuple[TextDispatcher, Database]] = []

    def build(
        sender: SmsSender | None = None,
        *,
        events: Callable[[str, Mapping[str, Any]], None] | None = None,
        start: bool = True,
        backoff: tuple[float, ...] = FAST,
    ) -> TextDispatcher:
        db = Database(db_path)
        d = TextDispatcher(
            db,
            sender or TwilioSender(SID, TOKEN, FROM, sink.url, timeout=5),
            on_event=events,
            backoff=backoff,
        )
        made.append((d, db))
        if start:
            d.start()
        return d

    yield build
    for d, db in made:
        d.stop(timeout=5)
        db.close()


def submit(d: TextDispatcher, key: str = "sos-1", to: str = AMBULANCE, body: str = BODY) -> str:
    return d.submit(to=to, body=body, key=key, person="ana", purpose="sos:ambulance")


def row(db_path: Path, msg_id: str) -> dict[str, Any]:
    db = Database(db_path)
    try:
        r = db.conn().execute("SELECT * FROM messages WHERE id = ?", (msg_id,)).fetchone()
        return dict(r)
    finally:
        db.close()


def test_submit_delivers_with_marker(make: Factory, sink: SmsSink, db_path: Path) -> None:
    events = Events()
    d = make(events=events)
    msg_id = submit(d)
    [m] = sink.wait_for(1)
    assert (m.to, m.from_) == (AMBULANCE, FROM)
    assert re.fullmatch(re.escape(BODY) + r" \[ref [0-9A-F]{6}\]", m.body)
    assert m.body == text_with_marker(BODY, marker_for(msg_id))
    sent = events.wait("notification_sent")
    assert d.wait_idle(5)
    r = row(db_path, msg_id)
    assert (r["state"], r["attempts"], r["provider_id"], r["body"]) == ("sent", 1, m.sid, BODY)
    assert r["marker"] == f"ref {msg_id[:6].upper()}"
    assert sent == {
        "message_id": msg_id,
        "person": "ana",
        "purpose": "sos:ambulance",
        "to_masked": "+44…11",
        "attempts": 1,
        "provider_id": m.sid,
        "reconciled": False,
        "error_code": None,
    }


@pytest.mark.parametrize("purpose", ["sos:ambulance", "medication_missed:contact"])
def test_submit_is_committed_before_it_returns(make: Factory, db_path: Path, purpose: str) -> None:
    # Committed either way (a killed process keeps it); an SOS text's row is fsynced later,
    # off the submitting thread (tests/gateway/notify/test_sos_texts.py), any other before it returns.
    d = make(start=False)
    msg_id = d.submit(to=AMBULANCE, body=BODY, key="sos-1", person="ana", purpose=purpose)
    r = row(db_path, msg_id)  # a separate connection sees the committed row
    assert (r["to_phone"], r["body"], r["state"], r["attempts"]) == (AMBULANCE, BODY, "sending", 0)
    assert (r["person"], r["purpose"], r["key"]) == ("ana", purpose, "sos-1")


def test_same_key_twice_sends_once(make: Factory, sink: SmsSink) -> None:
    d = make()
    first = submit(d, key="run-7:step-3:+447700900111")
    assert d.wait_idle(5)
    second = submit(d, key="run-7:step-3:+447700900111", body="a different body")
    assert first == second
    assert d.wait_idle(5)
    assert len(sink.wait_for(2, timeout=0.3)) == 1
    assert len(d.messages()) == 1


def test_texts_go_out_in_parallel(make: Factory) -> None:
    # Each send blocks until three sends are in progress at once: only parallel workers pass.
    barrier = threading.Barrier(3, timeout=5)
    sent: list[str] = []

    class Parallel:
        name = "parallel"

        def send(self, to: str, body: str) -> str:
            barrier.wait()
            sent.append(to)
            return "P" + to

        def was_sent(self, to: str, marker: str, since: float) -> bool | None:
            return None

    d = make(Parallel())
    for i, to in enumerate((AMBULANCE, CONTACT, "+447700900133")):
        submit(d, key=f"k{i}", to=to)
    assert d.wait_idle(10)
    assert sorted(sent) == sorted([AMBULANCE, CONTACT, "+447700900133"])
    assert d.stats() == {"sent": 3, "failed": 0, "pending": 0, "retried": 0}


def test_transient_failures_retried_then_delivered_once(
    make: Factory, sink: SmsSink, db_path: Path
) -> None:
    events = Events()
    sink.fail_next(2, status=500, code=20500)
    d = make(events=events)
    msg_id = submit(d)
    events.wait("notification_sent")
    assert d.wait_idle(5)
    assert [m.to for m in sink.messages] == [AMBULANCE]
    r = row(db_path, msg_id)
    assert (r["state"], r["attempts"], r["last_error_code"]) == ("sent", 3, "20500")
    assert events.kinds() == ["notification_pending", "notification_sent"]
    pending = events.items[0][1]
    assert (pending["attempts"], pending["error_code"], pending["to_masked"]) == (
        1,
        "20500",
        "+44…11",
    )
    assert d.stats()["retried"] == 1


def test_failed_event_after_three_transient_attempts(make: Factory, sink: SmsSink) -> None:
    events = Events()
    sink.fail_next(4, status=503, code=20503)
    d = make(events=events)
    msg_id = submit(d)
    events.wait("notification_sent")
    assert events.kinds() == ["notification_pending", "notification_failed", "notification_sent"]
    failed = events.items[1][1]
    assert (failed["message_id"], failed["attempts"], failed["permanent"]) == (msg_id, 3, False)
    assert len(sink.messages) == 1


def test_retries_forever_capped_at_last_delay(make: Factory, sink: SmsSink) -> None:
    events = Events()
    sink.fail_next(12, status=500)
    d = make(events=events, backoff=(0.001, 0.01))
    submit(d)
    events.wait("notification_sent")
    assert len(sink.messages) == 1
    assert d.messages()[0]["attempts"] == 13


def test_permanent_failure_not_retried(make: Factory, sink: SmsSink, db_path: Path) -> None:
    events = Events()
    bad = "+15005550001"
    sink.fail_always_for(bad, status=400, code=21211)
    d = make(events=events)
    msg_id = submit(d, to=bad)
    failed = events.wait("notification_failed")
    assert d.wait_idle(5)
    assert failed["permanent"] is True and failed["error_code"] == "21211"
    assert failed["to_masked"] == "+15…01"
    r = row(db_path, msg_id)
    assert (r["state"], r["attempts"], r["last_error_code"]) == ("failed", 1, "21211")
    assert sink.requests == 1 and sink.messages == []
    assert d.stats() == {"sent": 0, "failed": 1, "pending": 0, "retried": 0}


def test_events_carry_no_number_or_body(make: Factory, sink: SmsSink) -> None:
    events = Events()
    sink.fail_next(1)
    d = make(events=events)
    submit(d)
    events.wait("notification_sent")
    dump = repr(events.items)
    assert AMBULANCE.lstrip("+") not in dump and "Ana Silva" not in dump


def test_pending_text_survives_restart(make: Factory, sink: SmsSink, db_path: Path) -> None:
    events = Events()
    sink.fail_next(10_000, status=500)  # the provider is down
    a = make(events=events, backoff=(0.05,))
    msg_id = submit(a)
    events.wait("notification_pending")
    assert a.stop(timeout=5)
    assert [p["id"] for p in a.pending()] == [msg_id]
    sink.clear()  # the provider is back
    b = make()
    assert b.wait_idle(10)
    assert [m.to for m in sink.wait_for(2, timeout=0.3)] == [AMBULANCE]
    assert row(db_path, msg_id)["state"] == "sent"
    assert b.pending() == []


def test_never_started_queue_is_sent_by_next_process(
    make: Factory, sink: SmsSink, db_path: Path
) -> None:
    a = make(start=False)
    ids = [submit(a, key="k1"), submit(a, key="k2", to=CONTACT)]
    a.stop()
    b = make()
    assert b.wait_idle(10)
    assert sorted(m.to for m in sink.wait_for(3, timeout=0.3)) == [AMBULANCE, CONTACT]
    assert [row(db_path, i)["state"] for i in ids] == ["sent", "sent"]


def test_submit_before_start_same_instance_sends_once(make: Factory, sink: SmsSink) -> None:
    # start() reloads the row that submit() already queued in memory: one text, not two.
    d = make(start=False)
    submit(d)
    d.start()
    assert d.wait_idle(5)
    assert len(sink.wait_for(2, timeout=0.3)) == 1
    assert d.stats()["sent"] == 1


def test_crash_after_send_is_reconciled_without_duplicate(
    make: Factory, sink: SmsSink, db_path: Path
) -> None:
    events = Events()
    a = make(start=False)
    msg_id = submit(a)  # row in 'sending' ...
    r = row(db_path, msg_id)
    # ... the request went out, then the process died before recording the result.
    TwilioSender(SID, TOKEN, FROM, sink.url).send(AMBULANCE, text_with_marker(BODY, r["marker"]))
    b = make(events=events)
    sent = events.wait("notification_sent")
    assert b.wait_idle(5)
    assert sent["reconciled"] is True and sent["provider_id"] is None
    assert len(sink.wait_for(2, timeout=0.3)) == 1
    assert row(db_path, msg_id)["state"] == "sent"


def test_crash_before_send_is_resent_once(make: Factory, sink: SmsSink, db_path: Path) -> None:
    events = Events()
    a = make(start=False)
    msg_id = submit(a)  # row in 'sending', but the request never left
    b = make(events=events)
    sent = events.wait("notification_sent")
    assert b.wait_idle(5)
    assert sent["reconciled"] is False
    [m] = sink.wait_for(2, timeout=0.3)
    assert m.body.endswith(f"[{row(db_path, msg_id)['marker']}]")
    assert sink.requests == 2  # one lookup (GET), one send (POST)


def test_ambiguous_5xx_is_reconciled_not_duplicated(make: Factory, sink: SmsSink) -> None:
    events = Events()
    sink.fail_next(1, status=502, code=20502, record=True)  # accepted, but answered 502
    d = make(events=events)
    submit(d)
    sent = events.wait("notification_sent")
    assert sent["reconciled"] is True
    assert len(sink.wait_for(2, timeout=0.3)) == 1


def test_read_timeout_is_reconciled_not_duplicated(make: Factory, sink: SmsSink) -> None:
    events = Events()
    sink.set_delay(1.0)
    d = make(TwilioSender(SID, TOKEN, FROM, sink.url, timeout=0.2), events=events)
    submit(d)
    pending = events.wait("notification_pending")
    assert pending["error_code"] == "timeout"
    sink.set_delay(0)
    assert events.wait("notification_sent")["reconciled"] is True
    assert len(sink.wait_for(2, timeout=0.3)) == 1


class Scripted:
    """A sender whose was_sent answers are scripted; counts sends."""

    name = "scripted"

    def __init__(self, answers: list[bool | Exception | None]) -> None:
        self.answers = answers
        self.sends = 0
        self.lookups = 0

    def send(self, to: str, body: str) -> str:
        self.sends += 1
        return f"S{self.sends}"

    def was_sent(self, to: str, marker: str, since: float) -> bool | None:
        self.lookups += 1
        a = self.answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return a


def test_provider_cannot_tell_means_resend(make: Factory) -> None:
    a = make(start=False)
    submit(a)
    s = Scripted([None])
    b = make(s)
    assert b.wait_idle(5)
    assert (s.lookups, s.sends) == (1, 1)


def test_lookup_failure_asks_again_instead_of_resending(make: Factory) -> None:
    a = make(start=False)
    submit(a)
    s = Scripted([NotificationError("down", transient=True), True])
    b = make(s)
    assert b.wait_idle(5)
    assert (s.lookups, s.sends) == (2, 0)
    assert b.stats()["sent"] == 1


def test_stop_lets_in_flight_request_finish(make: Factory, sink: SmsSink, db_path: Path) -> None:
    sink.set_delay(0.3)
    d = make()
    msg_id = submit(d)
    sink.wait_for(1)  # the request is at the endpoint, its answer not back yet
    assert d.stop(timeout=5)
    assert row(db_path, msg_id)["state"] == "sent"


def test_queries_and_stats(make: Factory, sink: SmsSink) -> None:
    sink.fail_always_for("+15005550001")
    d = make()
    d.submit(to=AMBULANCE, body="a", key="1", person="ana", purpose="sos:ambulance")
    d.submit(to=CONTACT, body="b", key="2", person="ana", purpose="sos:contact")
    d.submit(to="+15005550001", body="c", key="3", person="ben", purpose="sos:contact")
    assert d.wait_idle(5)
    assert [m["body"] for m in d.messages(person="ana")] == ["a", "b"]
    assert [m["body"] for m in d.messages(purpose="sos:contact")] == ["b", "c"]
    assert [m["key"] for m in d.messages(person="ben", purpose="sos:contact")] == ["3"]
    assert d.stats() == {"sent": 2, "failed": 1, "pending": 0, "retried": 0}
    assert d.pending() == []


def test_broken_event_handler_does_not_stop_delivery(make: Factory, sink: SmsSink) -> None:
    def explode(kind: str, data: Mapping[str, Any]) -> None:
        raise RuntimeError("handler bug")

    d = make(events=explode)
    sink.fail_next(1)  # pending, then sent: two events, both raising
    msg_id = submit(d)
    assert d.wait_idle(5)
    assert len(sink.messages) == 1
    assert d.messages()[0]["id"] == msg_id and d.messages()[0]["state"] == "sent"


def test_outbox_sender_end_to_end_with_reconcile(make: Factory, tmp_path: Path) -> None:
    out = OutboxSender(tmp_path / "outbox.jsonl", echo=None)
    a = make(start=False)
    msg_id = submit(a)
    marker = a.messages()[0]["marker"]
    out.send(AMBULANCE, text_with_marker(BODY, marker))  # went out, then the crash
    b = make(out)
    assert b.wait_idle(5)
    assert len((tmp_path / "outbox.jsonl").read_text().splitlines()) == 1
    assert b.messages()[0]["id"] == msg_id and b.messages()[0]["state"] == "sent"
