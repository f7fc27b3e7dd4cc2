"""The local Twilio-compatible endpoint, driven by the real twilio SDK."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from twilio.base.exceptions import TwilioRestException
from twilio.rest import Client

from simulators.sms_sink import SmsSink

SID = "AC" + "a1" * 16
TOKEN = "sink-token"
FROM = "+15005550006"
TO = "+447700900101"
ROOT = Path(__file__).resolve().parents[2]


def client_for(sink: SmsSink, token: str = TOKEN, sid: str = SID) -> Any:
    c = Client(sid, token)
    c.api.base_url = sink.url
    return c


@pytest.fixture
def sink() -> Iterator[SmsSink]:
    with SmsSink(account_sid=SID, auth_token=TOKEN) as s:
        yield s


def test_sdk_create_reaches_sink_and_parses(sink: SmsSink) -> None:
    msg = client_for(sink).messages.create(to=TO, from_=FROM, body="Ambulance needed at home")
    got = sink.wait_for(1, timeout=5)
    assert [(m.to, m.from_, m.body, m.account_sid) for m in got] == [
        (TO, FROM, "Ambulance needed at home", SID)
    ]
    assert msg.sid == got[0].sid
    assert msg.sid.startswith("SM") and len(msg.sid) == 34
    assert msg.status == "queued"
    assert msg.to == TO and msg.from_ == FROM
    assert msg.date_created is not None and msg.date_created.tzinfo is not None


def test_wrong_token_is_401_and_nothing_recorded(sink: SmsSink) -> None:
    with pytest.raises(TwilioRestException) as ei:
        client_for(sink, token="wrong").messages.create(to=TO, from_=FROM, body="x")
    assert (ei.value.status, ei.value.code) == (401, 20003)
    assert sink.messages == []


def test_wrong_account_is_404(sink: SmsSink) -> None:
    other = "AC" + "b2" * 16
    with pytest.raises(TwilioRestException) as ei:
        client_for(sink, sid=other).messages.create(to=TO, from_=FROM, body="x")
    assert ei.value.status == 404
    assert sink.messages == []


def test_no_credentials_configured_accepts_any_account() -> None:
    with SmsSink() as open_sink:
        client_for(open_sink, sid="AC" + "c3" * 16, token="t").messages.create(
            to=TO, from_=FROM, body="hi"
        )
        assert [m.body for m in open_sink.wait_for(1)] == ["hi"]


def test_list_filters_by_to_and_date_sent_newest_first(sink: SmsSink) -> None:
    c = client_for(sink)
    for i in range(3):
        c.messages.create(to=TO, from_=FROM, body=f"m{i}")
    c.messages.create(to="+447700900202", from_=FROM, body="other")
    yesterday = datetime.now(UTC) - timedelta(days=1)
    tomorrow = datetime.now(UTC) + timedelta(days=1)
    assert [m.body for m in c.messages.list(to=TO, date_sent_after=yesterday)] == [
        "m2",
        "m1",
        "m0",
    ]
    assert c.messages.list(to=TO, date_sent_after=tomorrow) == []
    assert [m.body for m in c.messages.list(to="+447700900202")] == ["other"]


def test_list_pages_through_next_page_uri(sink: SmsSink) -> None:
    c = client_for(sink)
    for i in range(7):
        c.messages.create(to=TO, from_=FROM, body=f"m{i}")
    bodies = [m.body for m in c.messages.list(to=TO, page_size=3)]
    assert bodies == [f"m{i}" for i in range(6, -1, -1)]


def test_fetch_one_message(sink: SmsSink) -> None:
    c = client_for(sink)
    sid = c.messages.create(to=TO, from_=FROM, body="fetch me").sid
    assert c.messages(sid).fetch().body == "fetch me"


def test_fail_next_then_success(sink: SmsSink) -> None:
    c = client_for(sink)
    sink.fail_next(2, status=503, code=20503)
    for _ in range(2):
        with pytest.raises(TwilioRestException) as ei:
            c.messages.create(to=TO, from_=FROM, body="x")
        assert (ei.value.status, ei.value.code) == (503, 20503)
    c.messages.create(to=TO, from_=FROM, body="third time")
    assert [m.body for m in sink.messages] == ["third time"]
    assert sink.requests == 3


def test_fail_next_record_keeps_the_text(sink: SmsSink) -> None:
    sink.fail_next(1, status=500, code=20500, record=True)
    with pytest.raises(TwilioRestException):
        client_for(sink).messages.create(to=TO, from_=FROM, body="accepted anyway")
    assert [m.body for m in sink.messages] == ["accepted anyway"]


def test_fail_always_for_one_number(sink: SmsSink) -> None:
    c = client_for(sink)
    sink.fail_always_for("+15005550001")
    for _ in range(2):
        with pytest.raises(TwilioRestException) as ei:
            c.messages.create(to="+15005550001", from_=FROM, body="x")
        assert (ei.value.status, ei.value.code) == (400, 21211)
    c.messages.create(to=TO, from_=FROM, body="fine")
    assert [m.to for m in sink.messages] == [TO]


def test_delay_records_on_arrival(sink: SmsSink) -> None:
    sink.set_delay(1.0)
    with pytest.raises(requests.exceptions.ReadTimeout):
        requests.post(
            f"{sink.url}/2010-04-01/Accounts/{SID}/Messages.json",
            data={"To": TO, "From": FROM, "Body": "slow"},
            auth=(SID, TOKEN),
            timeout=0.2,
        )
    assert [m.body for m in sink.messages] == ["slow"]


def test_wait_for_returns_what_arrived_on_timeout_and_clear(sink: SmsSink) -> None:
    client_for(sink).messages.create(to=TO, from_=FROM, body="one")
    assert [m.body for m in sink.wait_for(2, timeout=0.1)] == ["one"]
    sink.fail_next(5)
    sink.clear()
    assert sink.messages == []
    client_for(sink).messages.create(to=TO, from_=FROM, body="after clear")  # failures cleared
    assert len(sink.messages) == 1


def test_received_times(sink: SmsSink) -> None:
    before_mono, before_wall = time.monotonic(), time.time()
    client_for(sink).messages.create(to=TO, from_=FROM, body="t")
    m = sink.wait_for(1)[0]
    assert before_mono <= m.received_at <= time.monotonic()
    assert before_wall <= m.received_wall <= time.time()


def test_runs_as_module() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "simulators.sms_sink", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()
            assert first.startswith("sms sink listening on http://127.0.0.1:")
            url = first.split()[4]
            c = Client(SID, TOKEN)
            c.api.base_url = url
            c.messages.create(to=TO, from_=FROM, body="from the cli test")
            line = proc.stdout.readline()
            assert "to +44…01: from the cli test" in line
            assert TO not in line
        finally:
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=10) == 0
