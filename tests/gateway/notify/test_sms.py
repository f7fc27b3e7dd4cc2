"""TwilioSender (real SDK against the local sink), OutboxSender and make_sender."""

from __future__ import annotations

import io
import json
import logging
import socket
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.base.errors import NotificationError
from gateway.base.settings import Settings
from gateway.notify.sms import (
    OutboxSender,
    SmsSendError,
    TwilioSender,
    make_sender,
    mask_phone,
)
from simulators.sms_sink import SmsSink

SID = "AC" + "d4" * 16
TOKEN = "secret-token"
FROM = "+15005550006"
TO = "+447700900101"
BODY = "Ambulance needed for Ana at 12 Oak Lane"


@pytest.fixture
def sink() -> Iterator[SmsSink]:
    with SmsSink(account_sid=SID, auth_token=TOKEN) as s:
        yield s


@pytest.fixture
def sender(sink: SmsSink) -> TwilioSender:
    return TwilioSender(SID, TOKEN, FROM, sink.url, timeout=5)


def assert_no_phi(exc: BaseException, *secrets: str) -> None:
    """Neither the message nor a printed traceback may carry a number or a body."""
    text = str(exc) + "".join(traceback.format_exception(exc))
    for s in secrets:
        assert s not in text
        assert s.lstrip("+") not in text


def test_mask_phone() -> None:
    assert mask_phone("+447700900101") == "+44…01"
    assert mask_phone("07700900155") == "…55"
    assert mask_phone("112") == "…"


def test_send_reaches_sink_with_real_sdk(sink: SmsSink, sender: TwilioSender) -> None:
    provider_id = sender.send(TO, BODY)
    [m] = sink.wait_for(1)
    assert (m.to, m.from_, m.body) == (TO, FROM, BODY)
    assert provider_id == m.sid
    assert sender.name == "twilio"


def test_twilio_region_in_environment_does_not_redirect(
    sink: SmsSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWILIO_REGION", "ie1")
    monkeypatch.setenv("TWILIO_EDGE", "dublin")
    TwilioSender(SID, TOKEN, FROM, sink.url).send(TO, "edge test")
    assert [m.body for m in sink.wait_for(1)] == ["edge test"]


def test_5xx_is_transient_and_masked(sink: SmsSink, sender: TwilioSender) -> None:
    sink.fail_next(1, status=500, code=20500)
    with pytest.raises(SmsSendError) as ei:
        sender.send(TO, BODY)
    e = ei.value
    assert (e.transient, e.code, e.status, e.maybe_sent) == (True, "20500", 500, True)
    assert "+44…01" in str(e)
    assert_no_phi(e, TO, BODY)


def test_429_is_transient_and_certainly_not_sent(sink: SmsSink, sender: TwilioSender) -> None:
    sink.fail_next(1, status=429, code=20429)
    with pytest.raises(SmsSendError) as ei:
        sender.send(TO, BODY)
    assert (ei.value.transient, ei.value.code, ei.value.maybe_sent) == (True, "20429", False)


def test_invalid_number_is_permanent_and_masked(sink: SmsSink, sender: TwilioSender) -> None:
    bad = "+15005550001"
    sink.fail_always_for(bad)  # the sink's error text names the number, like Twilio's
    with pytest.raises(NotificationError) as ei:
        sender.send(bad, BODY)
    assert ei.value.transient is False
    assert isinstance(ei.value, SmsSendError) and ei.value.code == "21211"
    assert_no_phi(ei.value, bad, BODY)


def test_bad_credentials_stay_retryable(sink: SmsSink) -> None:
    # A misconfigured account must not turn emergency texts into permanent failures.
    with pytest.raises(SmsSendError) as ei:
        TwilioSender(SID, "wrong", FROM, sink.url).send(TO, BODY)
    assert (ei.value.transient, ei.value.code, ei.value.status) == (True, "20003", 401)
    assert ei.value.maybe_sent is False
    assert sink.messages == []


def test_connection_refused_is_transient_not_sent() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once we leave: nothing listens there
    with pytest.raises(SmsSendError) as ei:
        TwilioSender(SID, TOKEN, FROM, f"http://127.0.0.1:{port}", timeout=2).send(TO, BODY)
    assert (ei.value.transient, ei.value.code, ei.value.maybe_sent) == (True, "connection", False)
    assert_no_phi(ei.value, TO, BODY)


def test_read_timeout_is_transient_and_maybe_sent(sink: SmsSink) -> None:
    sink.set_delay(1.0)
    with pytest.raises(SmsSendError) as ei:
        TwilioSender(SID, TOKEN, FROM, sink.url, timeout=0.2).send(TO, BODY)
    assert (ei.value.transient, ei.value.code, ei.value.maybe_sent) == (True, "timeout", True)
    assert_no_phi(ei.value, TO, BODY)
    assert [m.body for m in sink.messages] == [BODY]  # it did go out: hence maybe_sent


def test_was_sent_finds_marker_for_that_number_only(sink: SmsSink, sender: TwilioSender) -> None:
    since = time.time()
    sender.send(TO, "help [ref 7F3A2C]")
    sender.send("+447700900202", "other [ref 111111]")
    assert sender.was_sent(TO, "ref 7F3A2C", since) is True
    assert sender.was_sent(TO, "ref 111111", since) is False
    assert sender.was_sent("+447700900202", "ref 7F3A2C", since) is False
    assert sender.was_sent(TO, "ref 7F3A2C", since + 86400 * 2) is False  # DateSent> filter


def test_was_sent_errors_are_mapped(sink: SmsSink) -> None:
    with pytest.raises(SmsSendError) as ei:
        TwilioSender(SID, "wrong", FROM, sink.url).was_sent(TO, "ref 000000", time.time())
    assert ei.value.transient is True  # retried later, never a blind resend
    assert_no_phi(ei.value, TO)


def test_no_numbers_or_bodies_in_logs(
    sink: SmsSink, sender: TwilioSender, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    sender.send(TO, BODY)
    sender.was_sent(TO, "ref ABCDEF", time.time())
    sink.fail_always_for(TO)
    with pytest.raises(SmsSendError):
        sender.send(TO, BODY)
    assert TO.lstrip("+") not in caplog.text
    assert BODY not in caplog.text


def test_outbox_writes_fsynced_lines_and_echoes(tmp_path: Path) -> None:
    echo = io.StringIO()
    out = OutboxSender(tmp_path / "out" / "outbox.jsonl", echo=echo)
    before = time.time()
    first = out.send(TO, "SOS for Ana [ref 0A0B0C]")
    second = out.send("+447700900202", "second")
    lines = [json.loads(x) for x in (tmp_path / "out" / "outbox.jsonl").read_text().splitlines()]
    assert [(r["to"], r["body"], r["id"]) for r in lines] == [
        (TO, "SOS for Ana [ref 0A0B0C]", first),
        ("+447700900202", "second", second),
    ]
    assert before <= lines[0]["ts"] <= time.time()
    assert first != second and first.startswith("OB")
    assert echo.getvalue().splitlines() == [
        "[sms to +44…01] SOS for Ana [ref 0A0B0C]",
        "[sms to +44…02] second",
    ]
    assert out.name == "outbox"


def test_outbox_was_sent(tmp_path: Path) -> None:
    path = tmp_path / "outbox.jsonl"
    out = OutboxSender(path, echo=None)
    assert out.was_sent(TO, "ref 0A0B0C", time.time()) is False  # no file yet
    since = time.time()
    out.send(TO, "SOS [ref 0A0B0C]")
    with path.open("a") as f:
        f.write('{"ts": 1, "to": "+4477')  # torn line from a crash mid-write
    assert out.was_sent(TO, "ref 0A0B0C", since) is True
    assert out.was_sent(TO, "ref FFFFFF", since) is False
    assert out.was_sent("+447700900202", "ref 0A0B0C", since) is False
    assert out.was_sent(TO, "ref 0A0B0C", since + 3600) is False


def test_outbox_prints_nothing_by_default_and_logs_a_masked_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.notify.sms")
    path = tmp_path / "o.jsonl"
    OutboxSender(path).send("+447700900102", BODY + " [ref ABC123]")
    assert capsys.readouterr().out == ""  # the text stays in the house, not on a console
    assert json.loads(path.read_text())["body"] == BODY + " [ref ABC123]"  # but it is kept
    assert path.stat().st_mode & 0o077 == 0  # owner-only: it holds names and addresses
    line = f"text queued offline for +44…02 (ref ABC123, {len(BODY) + 13} chars)"
    assert [r.getMessage() for r in caplog.records] == [line]
    assert caplog.records[0].levelno == logging.WARNING
    for secret in ("Ana", "Oak Lane", "7700900102"):
        assert secret not in caplog.text


def test_make_sender_prints_texts_only_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_sender(Settings(), tmp_path / "a").send(TO, "hello")
    assert capsys.readouterr().out == ""
    make_sender(Settings(print_texts=True), tmp_path / "b").send(TO, "hello")
    assert capsys.readouterr().out == "[sms to +44…01] hello\n"


def test_make_sender_twilio_when_configured(sink: SmsSink, tmp_path: Path) -> None:
    settings = Settings(
        twilio_account_sid=SID,
        twilio_auth_token=TOKEN,
        twilio_from=FROM,
        twilio_api_base=sink.url,
    )
    s = make_sender(settings, tmp_path)
    assert isinstance(s, TwilioSender)
    s.send(TO, "configured")
    assert [(m.from_, m.body) for m in sink.wait_for(1)] == [(FROM, "configured")]


def test_make_sender_outbox_otherwise(tmp_path: Path) -> None:
    s = make_sender(Settings(twilio_account_sid=SID, twilio_from=FROM), tmp_path)
    assert isinstance(s, OutboxSender)
    assert s.path == tmp_path / "outbox.jsonl"
