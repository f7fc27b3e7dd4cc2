"""A local Twilio-compatible SMS endpoint (the Messages resource of API 2010-04-01).

The real twilio SDK can be pointed at it (`client.api.base_url = sink.url`), so tests, benchmarks
and the demo exercise the exact requests the gateway makes. Failure injection covers the cases
that matter for emergency texts: 5xx/429 (transient), 4xx such as 21211 (permanent), slowness.

    python -m simulators.sms_sink --port 8799 [--account-sid AC... --auth-token ...]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import secrets
import socket
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

API = "/2010-04-01/Accounts/"


@dataclass(frozen=True)
class ReceivedSms:
    to: str
    from_: str
    body: str
    sid: str
    account_sid: str
    received_at: float  # time.monotonic() when the request arrived (latency measurements)
    received_wall: float  # time.time() at the same moment (DateSent filters)
    status: str = "queued"
    status_callback: str | None = None  # where the sender asked for delivery reports


@dataclass
class _Failure:
    status: int
    code: int
    record: bool  # the "provider accepted it but answered with an error" case


def _mask(number: str) -> str:
    return f"{number[:3] if number.startswith('+') else ''}…{number[-2:]}"


def _rfc2822(ts: float) -> str:
    return format_datetime(datetime.fromtimestamp(ts, tz=UTC), usegmt=True)


def _parse_date(value: str, *, end_of_day: bool = False) -> float:
    """Twilio takes YYYY-MM-DD (whole days); the SDK sends YYYY-MM-DDTHH:MM:SSZ."""
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        day = datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
        return day + 86400 if end_of_day else day


class SmsSink:
    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        account_sid: str | None = None,
        auth_token: str | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.account_sid = account_sid
        self.auth_token = auth_token
        self._lock = threading.Condition()
        self._messages: list[ReceivedSms] = []
        self._fail_next: list[_Failure] = []
        self._fail_for: dict[str, _Failure] = {}
        self._delay = 0.0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[socket.socket] = set()  # open keep-alive connections
        self.requests = 0  # every request seen, failed ones included

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> SmsSink:
        server = ThreadingHTTPServer((self.host, self.port), _make_handler(self))
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.05,), name="sms-sink", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            conns, self._conns = list(self._conns), set()
        for c in conns:  # idle keep-alive connections would hold their threads forever
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> SmsSink:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # -- inspection ------------------------------------------------------------------------
    @property
    def messages(self) -> list[ReceivedSms]:
        with self._lock:
            return list(self._messages)

    def wait_for(self, n: int, timeout: float = 5.0) -> list[ReceivedSms]:
        """Wait until at least n texts were accepted; return them all (fewer on timeout)."""
        with self._lock:
            self._lock.wait_for(lambda: len(self._messages) >= n, timeout)
            return list(self._messages)

    def clear(self) -> None:
        """Forget received texts and any injected failures or delay."""
        with self._lock:
            self._messages.clear()
            self._fail_next.clear()
            self._fail_for.clear()
            self._delay = 0.0

    # -- failure injection -----------------------------------------------------------------
    def fail_next(
        self, n: int = 1, status: int = 500, code: int = 20500, *, record: bool = False
    ) -> None:
        """The next n message creates (POST) fail. record=True keeps the text anyway (the
        provider accepted it but the answer was an error: the ambiguous case)."""
        with self._lock:
            self._fail_next.extend(_Failure(status, code, record) for _ in range(n))

    def fail_always_for(self, to: str, status: int = 400, code: int = 21211) -> None:
        with self._lock:
            self._fail_for[to] = _Failure(status, code, False)

    def set_delay(self, seconds: float) -> None:
        """Delay every response (the text is recorded on arrival, before the delay)."""
        with self._lock:
            self._delay = seconds

    # -- request handling (called on server threads) ---------------------------------------
    def _check(self, sid: str, auth_header: str | None) -> tuple[int, dict[str, Any]] | None:
        if self.account_sid and sid != self.account_sid:
            return 404, _error(404, 20404, "The requested resource was not found")
        if self.account_sid and self.auth_token:
            want = base64.b64encode(f"{self.account_sid}:{self.auth_token}".encode()).decode()
            if auth_header != f"Basic {want}":
                return 401, _error(401, 20003, "Authenticate")
        return None

    def _create(self, sid: str, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        to, from_, body = form.get("To", ""), form.get("From", ""), form.get("Body", "")
        if not to or not (from_ or form.get("MessagingServiceSid")):
            return 400, _error(400, 21604, "A 'To' and a 'From' phone number are required.")
        arrived, wall = time.monotonic(), time.time()
        with self._lock:
            failure = self._fail_for.get(to) or (
                self._fail_next.pop(0) if self._fail_next else None
            )
            msg = ReceivedSms(
                to, from_, body, "SM" + secrets.token_hex(16), sid, arrived, wall,
                status_callback=form.get("StatusCallback"),
            )  # fmt: skip
            if failure is None or failure.record:
                self._messages.append(msg)
                self._lock.notify_all()
        if failure is not None:
            # Like Twilio, the error text names the number: clients must not echo it.
            text = (
                f"The 'To' number {to} is not a valid phone number."
                if failure.code == 21211
                else f"Message to {to} could not be queued."
            )
            return failure.status, _error(failure.status, failure.code, text)
        return 201, _resource(msg)

    def _list(self, sid: str, path: str, query: dict[str, str]) -> dict[str, Any]:
        after = _parse_date(query["DateSent>"]) if "DateSent>" in query else None
        before = _parse_date(query["DateSent<"], end_of_day=True) if "DateSent<" in query else None
        with self._lock:
            found = [
                m
                for m in reversed(self._messages)  # newest first, as Twilio lists them
                if m.account_sid == sid
                and query.get("To", m.to) == m.to
                and query.get("From", m.from_) == m.from_
                and (after is None or m.received_wall >= after)
                and (before is None or m.received_wall <= before)
            ]
        size = max(1, min(1000, int(query.get("PageSize", "50"))))
        page = max(0, int(query.get("Page", "0")))
        chunk = found[page * size : (page + 1) * size]

        def uri(p: int) -> str:
            q = {k: v for k, v in query.items() if k not in ("Page", "PageToken")}
            return f"{path}?{urlencode({**q, 'PageSize': size, 'Page': p, 'PageToken': f'PA{p}'})}"

        more = (page + 1) * size < len(found)
        return {
            "messages": [_resource(m) for m in chunk],
            "end": page * size + max(0, len(chunk) - 1),
            "first_page_uri": uri(0),
            "next_page_uri": uri(page + 1) if more else None,
            "previous_page_uri": uri(page - 1) if page > 0 else None,
            "page": page,
            "page_size": size,
            "start": page * size,
            "uri": uri(page),
        }

    def _fetch(self, sid: str, msg_sid: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            for m in self._messages:
                if m.sid == msg_sid and m.account_sid == sid:
                    return 200, _resource(m)
        return 404, _error(404, 20404, "The requested resource was not found")

    def _delay_s(self) -> float:
        with self._lock:
            return self._delay


def _error(status: int, code: int, message: str) -> dict[str, Any]:
    return {
        "code": code,
        "message": message,
        "more_info": f"https://www.twilio.com/docs/errors/{code}",
        "status": status,
    }


def _resource(m: ReceivedSms) -> dict[str, Any]:
    uri = f"{API}{m.account_sid}/Messages/{m.sid}.json"
    stamp = _rfc2822(m.received_wall)
    return {
        "account_sid": m.account_sid,
        "api_version": "2010-04-01",
        "body": m.body,
        "date_created": stamp,
        # Real Twilio leaves date_sent empty until the carrier takes it; the sink "sends" at once.
        "date_sent": stamp,
        "date_updated": stamp,
        "direction": "outbound-api",
        "error_code": None,
        "error_message": None,
        "from": m.from_,
        "messaging_service_sid": None,
        "num_media": "0",
        "num_segments": str(max(1, -(-len(m.body) // 153))),
        "price": None,
        "price_unit": "USD",
        "sid": m.sid,
        "status": m.status,
        "subresource_uris": {"media": uri.replace(".json", "/Media.json")},
        "to": m.to,
        "uri": uri,
    }


def _make_handler(sink: SmsSink) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's requests.Session expects

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in two writes: without NODELAY, Nagle + delayed ACK
            # would add ~40 ms to every keep-alive request.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with sink._lock:
                sink._conns.add(self.connection)

        def finish(self) -> None:
            with sink._lock:
                sink._conns.discard(self.connection)
            super().finish()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # request lines carry phone numbers (To= on list calls)

        def _route(self) -> tuple[str, str, str | None] | None:
            """(path, account sid, message sid or None) for the Messages resource."""
            path = urlsplit(self.path).path
            if not path.startswith(API):
                return None
            parts = path[len(API) :].split("/")
            if len(parts) == 2 and parts[1] == "Messages.json":
                return path, parts[0], None
            if len(parts) == 3 and parts[1] == "Messages" and parts[2].endswith(".json"):
                return path, parts[0], parts[2][: -len(".json")]
            return None

        def _reply(self, status: int, payload: dict[str, Any]) -> None:
            delay = sink._delay_s()
            if delay > 0:
                time.sleep(delay)
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client timed out and left: expected

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode() if length else ""
            with sink._lock:
                sink.requests += 1
            route = self._route()
            if route is None or route[2] is not None:
                self._reply(404, _error(404, 20404, "The requested resource was not found"))
                return
            _, sid, _ = route
            denied = sink._check(sid, self.headers.get("Authorization"))
            if denied is not None:
                self._reply(*denied)
                return
            form = {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}
            self._reply(*sink._create(sid, form))

        def do_GET(self) -> None:
            with sink._lock:
                sink.requests += 1
            route = self._route()
            if route is None:
                self._reply(404, _error(404, 20404, "The requested resource was not found"))
                return
            path, sid, msg_sid = route
            denied = sink._check(sid, self.headers.get("Authorization"))
            if denied is not None:
                self._reply(*denied)
                return
            if msg_sid is not None:
                self._reply(*sink._fetch(sid, msg_sid))
                return
            query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
            try:
                self._reply(200, sink._list(sid, path, query))
            except ValueError:
                self._reply(400, _error(400, 20001, "Invalid paging parameter"))

    return Handler


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Local Twilio-compatible SMS endpoint")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8799)
    ap.add_argument("--account-sid", default=None)
    ap.add_argument("--auth-token", default=None)
    args = ap.parse_args(argv)
    sink = SmsSink(args.host, args.port, args.account_sid, args.auth_token).start()
    print(f"sms sink listening on {sink.url} (Ctrl-C to stop)", flush=True)
    seen = 0
    try:
        while True:
            msgs = sink.wait_for(seen + 1, timeout=1.0)
            for m in msgs[seen:]:
                print(f"[sink] {m.sid} to {_mask(m.to)}: {m.body}", flush=True)
            seen = len(msgs)
    except KeyboardInterrupt:
        pass
    finally:
        sink.stop()


if __name__ == "__main__":
    main()
