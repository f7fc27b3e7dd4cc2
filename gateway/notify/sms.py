"""SmsSender implementations: Twilio (real SDK, any Twilio-compatible base URL) and a local
outbox file for when Twilio is not configured. No phone number or text body ever goes into an
exception message or a log line: numbers are masked to their last two digits. Offline texts
are kept (outbox file and the text queue) but never printed unless HEALTHGW_PRINT_TEXTS."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO, cast

import requests
from twilio.base.exceptions import TwilioException
from twilio.http.http_client import TwilioHttpClient
from twilio.rest import Client
from urllib3.exceptions import NewConnectionError

from gateway.base.errors import NotificationError
from gateway.base.ports import SmsSender
from gateway.base.settings import Settings

log = logging.getLogger(__name__)
# The Twilio SDK logs each request's URL and form at INFO: recipients' numbers and the
# text itself (PHI). The gateway is a library too, so it quiets them itself, not the CLI.
for _noisy in ("twilio.http_client", "urllib3.connectionpool"):
    logging.getLogger(_noisy).setLevel(logging.WARNING)

# The SDK's own request log prints query strings (To=<number> on list calls) at INFO.
_sdk_log = logging.getLogger("healthgw.notify.twilio_http")
_sdk_log.setLevel(logging.WARNING)

# was_sent looks back this much further than `since`: the hub's clock and the provider's may
# disagree. The marker is unique per message, so a wider window cannot cause a false match.
CLOCK_SLACK_S = 300.0
# Statuses that mean the provider has the text but will never deliver it: resend instead.
_DEAD_STATUSES = frozenset({"failed", "canceled"})
# The queue's marker at the end of every text ("... [ref 7F3A2C]"): safe to log, no PHI.
_MARKER = re.compile(r"\[(ref [0-9A-F]{6})\]\s*$")


def mask_phone(number: str) -> str:
    """'+447700900101' -> '+44…01': enough to tell contacts apart, not enough to dial."""
    n = number.strip()
    if len(n) <= 4:
        return "…"
    prefix = n[:3] if n.startswith("+") else ""
    return f"{prefix}…{n[-2:]}"


class SmsSendError(NotificationError):
    """NotificationError with the provider's error code (`"21211"`, `"http_500"`, `"timeout"`,
    ...) and `maybe_sent`: False only when the request certainly never reached the provider."""

    def __init__(
        self, message: str, *, transient: bool, code: str, maybe_sent: bool, status: int | None
    ) -> None:
        super().__init__(message, transient=transient)
        self.code = code
        self.maybe_sent = maybe_sent
        self.status = status


def _status_error(what: str, masked: str, status: int, code: object) -> SmsSendError:
    code_s = str(code) if code else f"http_{status}"
    # 5xx may come after the provider already accepted the text; 429 and 4xx mean it did not.
    # 401/403 (bad or revoked credentials) are a hub problem, not the recipient's: keep the
    # emergency text pending and retrying so it goes out once the owner fixes the account.
    transient = status >= 500 or status in (401, 403, 429)
    return SmsSendError(
        f"{what} to {masked} failed: HTTP {status}, code {code_s}",
        transient=transient,
        code=code_s,
        maybe_sent=status >= 500,
        status=status,
    )


def _network_error(what: str, masked: str, exc: requests.RequestException) -> SmsSendError:
    if isinstance(exc, requests.ConnectTimeout):
        code, maybe = "connect_timeout", False
    elif isinstance(exc, requests.Timeout):
        code, maybe = "timeout", True  # the request was sent; only the answer is missing
    elif isinstance(exc, requests.ConnectionError):
        # "refused" never reached the server; a reset mid-response may have.
        reason = getattr(exc.args[0], "reason", None) if exc.args else None
        refused = isinstance(reason, NewConnectionError)
        code, maybe = "connection", not refused
    else:
        code, maybe = "network", True
    return SmsSendError(
        f"{what} to {masked} failed: {code} ({type(exc).__name__})",
        transient=True,
        code=code,
        maybe_sent=maybe,
        status=None,
    )


def _map_error(what: str, to: str, exc: Exception) -> SmsSendError:
    """Translate SDK/transport errors. Their own text carries numbers and bodies: never reuse it."""
    masked = mask_phone(to)
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        return _status_error(what, masked, status, getattr(exc, "code", None))
    if isinstance(exc, requests.RequestException):
        return _network_error(what, masked, exc)
    # Page fetches raise a bare TwilioException("Unable to fetch page", response).
    resp = exc.args[1] if isinstance(exc, TwilioException) and len(exc.args) > 1 else None
    resp_status = getattr(resp, "status_code", None)
    if isinstance(resp_status, int):
        return _status_error(what, masked, resp_status, None)
    return SmsSendError(
        f"{what} to {masked} failed: {type(exc).__name__}",
        transient=True,
        code="internal",
        maybe_sent=True,
        status=None,
    )


class TwilioSender:
    """Sends through the real twilio SDK. `api_base` points it at a Twilio-compatible endpoint
    (the local sink in tests and the demo, or a self-hosted gateway)."""

    name = "twilio"

    def __init__(
        self,
        account_sid: str,
        auth_token: str,
        from_: str,
        api_base: str | None = None,
        timeout: float = 10,
        status_callback: str | None = None,
    ) -> None:
        self._status_callback = status_callback
        self._sid = account_sid
        self._token = auth_token
        self._from = from_
        self._api_base = api_base.rstrip("/") if api_base else None
        self._timeout = timeout
        self._local = threading.local()
        # Build one client now: the SDK imports its API modules lazily on first use, which
        # must not land on the first SOS text.
        self._client()

    def _client(self) -> Any:
        # One client (and requests.Session) per worker thread: Session is not documented as
        # thread-safe, and each thread then keeps its own warm keep-alive connection.
        c = getattr(self._local, "client", None)
        if c is None:
            http = TwilioHttpClient(timeout=self._timeout, logger=_sdk_log)
            c = Client(self._sid, self._token, http_client=http)
            if self._api_base:
                c.edge = None  # TWILIO_EDGE/REGION from the environment would rewrite the host
                c.region = None
                c.api.base_url = self._api_base
            _ = c.messages  # import the message API modules now
            self._local.client = c
        return c

    def send(self, to: str, body: str) -> str:
        try:
            extra = {"status_callback": self._status_callback} if self._status_callback else {}
            msg = self._client().messages.create(to=to, from_=self._from, body=body, **extra)
        except Exception as exc:
            raise _map_error("text", to, exc) from None
        return str(msg.sid)

    def was_sent(self, to: str, marker: str, since: float) -> bool | None:
        after = datetime.fromtimestamp(since - CLOCK_SLACK_S, tz=UTC)
        try:
            found = self._client().messages.list(to=to, date_sent_after=after, limit=200)
        except Exception as exc:
            raise _map_error("message lookup", to, exc) from None
        return any(
            marker in (m.body or "") and (m.status or "") not in _DEAD_STATUSES for m in found
        )


class _CurrentStdout(io.TextIOBase):
    """Writes to whatever sys.stdout is at print time (pytest and the CLI swap it)."""

    def write(self, s: str) -> int:
        return sys.stdout.write(s)

    def flush(self) -> None:
        sys.stdout.flush()


CURRENT_STDOUT = cast(TextIO, _CurrentStdout())


class OutboxSender:
    """Offline stand-in for Twilio: appends {ts, to, body, id} JSON lines to a file (fsynced, so
    a text 'sent' survives a crash; owner-only, it holds names and addresses) and logs a masked
    line. `echo` (the demo's terminal, opt-in) also gets the body."""

    name = "outbox"

    def __init__(self, path: Path, echo: TextIO | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._echo = echo
        self._lock = threading.Lock()

    def send(self, to: str, body: str) -> str:
        msg_id = "OB" + uuid.uuid4().hex
        line = json.dumps({"ts": time.time(), "to": to, "body": body, "id": msg_id})
        try:
            # Opened under the lock: prune() replaces the file, and an append to the old
            # inode would be lost.
            with self._lock:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                with open(fd, "a", encoding="utf-8") as f:
                    f.write(line + "\n")
                    f.flush()
                    os.fsync(f.fileno())
        except OSError as exc:
            raise SmsSendError(
                f"outbox write for {mask_phone(to)} failed: {type(exc).__name__}",
                transient=True,
                code="outbox_io",
                maybe_sent=True,
                status=None,
            ) from None
        # Logs end up in journald, docker logs and bug reports: no body, name or place.
        ref = m.group(1) if (m := _MARKER.search(body)) else msg_id[:8]
        log.warning("text queued offline for %s (%s, %d chars)", mask_phone(to), ref, len(body))
        if self._echo is not None:
            # Opted in (the demo's terminal): the body is fine here, the number still masked.
            print(f"[sms to {mask_phone(to)}] {body}", file=self._echo, flush=True)
        return msg_id

    def prune(self, cutoff: float) -> int:
        """Retention: drop the records older than cutoff (they hold numbers and bodies)."""
        from gateway.base.retention import prune_jsonl

        with self._lock:
            return prune_jsonl(self.path, cutoff)

    def was_sent(self, to: str, marker: str, since: float) -> bool | None:
        if not self.path.exists():
            return False
        with self._lock, self.path.open(encoding="utf-8") as f:
            for raw in f:
                try:
                    rec = json.loads(raw)
                except json.JSONDecodeError:
                    continue  # a torn last line from a crash mid-write: that text did not go
                if (
                    rec.get("to") == to
                    and marker in str(rec.get("body", ""))
                    and float(rec.get("ts", 0)) >= since - CLOCK_SLACK_S
                ):
                    return True
        return False


def make_sender(settings: Settings, data_dir: Path) -> SmsSender:
    """Twilio when sid, token and from number are all configured, else the outbox file."""
    if settings.twilio_enabled:
        assert settings.twilio_account_sid and settings.twilio_auth_token and settings.twilio_from
        base = str(settings.twilio_api_base) if settings.twilio_api_base else None
        log.info("texts go through Twilio%s", f" at {base}" if base else "")
        # Delivery reports need an address Twilio can reach (HEALTHGW_PUBLIC_URL).
        callback = (
            f"{str(settings.public_url).rstrip('/')}/v1/sms/status" if settings.public_url else None
        )
        return TwilioSender(
            settings.twilio_account_sid,
            settings.twilio_auth_token.get_secret_value(),
            settings.twilio_from,
            base,
            status_callback=callback,
        )
    path = Path(data_dir) / "outbox.jsonl"
    log.warning("Twilio not configured: texts stay in %s and reach nobody", path)
    return OutboxSender(path, echo=CURRENT_STDOUT if settings.print_texts else None)
