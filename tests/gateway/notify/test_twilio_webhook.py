"""Twilio webhooks behind a reverse proxy: requests are signed exactly the way Twilio signs them
(twilio's own RequestValidator.compute_signature, over the PUBLIC URL Twilio called) and reach
the app at a different internal URL, as through nginx or a tunnel. Blank and repeated fields
are part of the signature. A wrong signature or a tampered field is refused, and so is a
signed request replayed: each MessageSid is acted on once, across restarts (safety.db)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from starlette.datastructures import ImmutableMultiDict
from twilio.request_validator import RequestValidator

from agents.playbooks.ladder import SosLadder
from agents.tools.registry import ToolRegistry
from gateway.api.server import create_app
from gateway.base.clock import ManualClock
from gateway.base.db import Database
from gateway.base.metrics import LatencyHistogram
from gateway.contract.values import Event
from gateway.household.model import Household, load_household
from gateway.notify.replay import MemorySeen, SeenMessages, StoredSeen
from gateway.notify.twilio_webhook import Form, signed_url

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "twilio-auth-token-for-tests"
ADMIN = "admin-token-for-webhook-tests-4f9c2a7e"
PUBLIC = "https://hub.example.org/healthgw"
INBOUND = f"{PUBLIC}/v1/sms/inbound"  # what Twilio's console has, and signs
ANA = "+447700900201"

Pairs = Sequence[tuple[str, str]]


def sign(url: str, pairs: Pairs, token: str = TOKEN) -> str:
    """X-Twilio-Signature as Twilio computes it (a multi-dict: repeated fields included)."""
    return str(RequestValidator(token).compute_signature(url, ImmutableMultiDict(pairs)))


def twilio_form(body: str) -> list[tuple[str, str]]:
    # An inbound SMS as Twilio posts it: blank fields (no city known) and, here, a field twice.
    return [
        ("ToCountry", "GB"),
        ("FromCity", ""),
        ("FromZip", ""),
        ("Body", body),
        ("From", ANA),
        ("To", "+15005550006"),
        ("NumMedia", "0"),
        ("AddOns", "a"),
        ("AddOns", "b"),
        ("MessageSid", "SM" + "0" * 32),
    ]


class FakeBackend:
    """Only what the SMS routes read; the ladder is the real one over a temporary DB."""

    def __init__(
        self, ladder: SosLadder, household: Household, db: Database, clock: ManualClock
    ) -> None:
        self.household = household
        self.ladder = ladder
        self.db = db  # safety.db: the ladder's table and the MessageSids seen
        self.clock = clock
        self.meds = self.reports = self.tool_metrics = None
        self.reading_latency = LatencyHistogram()
        self.sos_latency = LatencyHistogram()
        self.deliveries: list[tuple[str, str]] = []

    def stats(self) -> dict[str, Any]:
        return {}

    def text_delivery(self, provider_id: str, status: str) -> bool:
        self.deliveries.append((provider_id, status))
        return True


@pytest.fixture
def backend(tmp_path: Path) -> FakeBackend:
    async def emit(_: Event) -> None:
        return None

    hh = load_household(ROOT / "examples" / "household.yaml")
    db, clock = Database(tmp_path / "safety.db"), ManualClock()
    lad = SosLadder(db, ToolRegistry(), hh, clock, emit, lambda _: None)
    lad.open("run-1", "grandma")
    return FakeBackend(lad, hh, db, clock)


async def client_for(
    backend: FakeBackend,
    public_url: str | None = PUBLIC,
    root_path: str = "",
    db: Database | None = None,
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        backend,  # type: ignore[arg-type]
        admin_token=ADMIN,
        twilio_auth_token=TOKEN,
        public_url=public_url,
        safety_db=db or backend.db,  # as serve_api wires it
    )
    # The app itself is at http://testserver: the proxy forwards to it by another name.
    transport = httpx.ASGITransport(app=app, root_path=root_path)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


@pytest.fixture
async def client(backend: FakeBackend) -> AsyncIterator[httpx.AsyncClient]:
    async for c in client_for(backend):
        yield c


async def post(
    c: httpx.AsyncClient, path: str, pairs: Pairs, signature: str | None = None
) -> httpx.Response:
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if signature is not None:
        headers["X-Twilio-Signature"] = signature
    return await c.post(path, content=urlencode(pairs), headers=headers)


# --- the signed URL -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("public", "path", "root", "query", "want"),
    [
        (None, "/v1/sms/inbound", "", "", "http://testserver/v1/sms/inbound"),
        ("https://hub.example.org", "/v1/sms/inbound", "", "", "https://hub.example.org/v1/sms/inbound"),
        ("https://hub.example.org/", "/v1/sms/status", "", "", "https://hub.example.org/v1/sms/status"),
        (PUBLIC, "/v1/sms/inbound", "", "", INBOUND),
        (PUBLIC + "/", "/v1/sms/inbound", "", "a=1&b=", INBOUND + "?a=1&b="),
        ("https://h.example.org:8443/x", "/int/v1/sms/inbound", "/int", "", "https://h.example.org:8443/x/v1/sms/inbound"),
        ("http://abc.trycloudflare.com", "/v1/sms/inbound", "", "", "http://abc.trycloudflare.com/v1/sms/inbound"),
    ],
)  # fmt: skip
def test_signed_url(public: str | None, path: str, root: str, query: str, want: str) -> None:
    assert signed_url(public, "http://testserver/v1/sms/inbound", path, root, query) == want


def test_form_keeps_blank_and_repeated_fields() -> None:
    form = Form.parse(b"A=1&Blank=&R=x&R=y&Body=OK+on+my+way%21")
    assert form == {"A": ["1"], "Blank": [""], "R": ["x", "y"], "Body": ["OK on my way!"]}
    assert form.first("Body") == "OK on my way!" and form.first("Missing") == ""
    with pytest.raises(ValueError):
        Form.parse(b"&".join(b"f%d=1" % i for i in range(2000)))


# --- through the app ----------------------------------------------------------------------


async def test_twilio_signed_reply_through_a_proxy_acknowledges(
    client: httpx.AsyncClient, backend: FakeBackend
) -> None:
    pairs = twilio_form("OK on my way")
    r = await post(client, "/v1/sms/inbound", pairs, sign(INBOUND, pairs))
    assert r.status_code == 200, r.text
    assert "know you are helping" in r.text
    assert r.headers["content-type"].startswith("application/xml")
    assert backend.ladder.status("grandma")["state"] == "acked"  # type: ignore[index]


async def test_app_under_a_root_path_and_a_query_string(backend: FakeBackend) -> None:
    # uvicorn --root-path /int behind the proxy; the console's URL carries a query string.
    async for c in client_for(backend, public_url="https://h.example.org:8443/x", root_path="/int"):
        pairs = twilio_form("omw")
        url = "https://h.example.org:8443/x/v1/sms/inbound?hub=home"
        r = await post(c, "/int/v1/sms/inbound?hub=home", pairs, sign(url, pairs))
        assert r.status_code == 200, r.text
        assert "know you are helping" in r.text


@pytest.mark.parametrize(
    "attack",
    ["wrong_token", "tampered_body", "dropped_blank", "extra_repeat", "internal_url", "none"],
)
async def test_forged_or_tampered_requests_are_refused(
    client: httpx.AsyncClient, backend: FakeBackend, attack: str
) -> None:
    pairs = twilio_form("OK")
    sig: str | None = sign(INBOUND, pairs)
    sent = list(pairs)
    if attack == "wrong_token":
        sig = sign(INBOUND, pairs, token="someone-elses-token")
    elif attack == "tampered_body":
        sent = [(k, "ok" if k == "Body" else v) for k, v in pairs]
    elif attack == "dropped_blank":
        sent = [(k, v) for k, v in pairs if k != "FromCity"]
    elif attack == "extra_repeat":
        sent = [*pairs, ("AddOns", "c")]
    elif attack == "internal_url":  # signed for the URL the app sees: Twilio never calls it
        sig = sign("http://testserver/v1/sms/inbound", pairs)
    elif attack == "none":
        sig = None
    r = await post(client, "/v1/sms/inbound", sent, sig)
    assert r.status_code == 403
    assert backend.ladder.status("grandma")["state"] == "waiting"  # type: ignore[index]


async def test_without_a_public_url_the_request_url_is_signed(backend: FakeBackend) -> None:
    async for c in client_for(backend, public_url=None):
        pairs = twilio_form("OK")
        assert (await post(c, "/v1/sms/inbound", pairs, sign(INBOUND, pairs))).status_code == 403
        url = "http://testserver/v1/sms/inbound"
        assert (await post(c, "/v1/sms/inbound", pairs, sign(url, pairs))).status_code == 200


async def test_admin_bearer_still_works_without_a_signature(
    client: httpx.AsyncClient, backend: FakeBackend
) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    body = urlencode(twilio_form("coming"))
    bad = await client.post("/v1/sms/inbound", content=body, headers={**form, "Authorization": "Bearer nope"})  # fmt: skip
    assert bad.status_code == 403
    ok = await client.post("/v1/sms/inbound", content=body, headers={**form, "Authorization": f"Bearer {ADMIN}"})  # fmt: skip
    assert ok.status_code == 200
    assert backend.ladder.status("grandma")["state"] == "acked"  # type: ignore[index]


async def test_delivery_report_through_a_proxy(
    client: httpx.AsyncClient, backend: FakeBackend
) -> None:
    pairs = [("MessageSid", "SM1"), ("MessageStatus", "delivered"), ("ErrorCode", "")]
    url = f"{PUBLIC}/v1/sms/status"
    r = await post(client, "/v1/sms/status", pairs, sign(url, pairs))
    assert r.status_code == 200 and r.json() == {"recorded": True}
    assert backend.deliveries == [("SM1", "delivered")]
    tampered = [(k, "failed" if k == "MessageStatus" else v) for k, v in pairs]
    assert (await post(client, "/v1/sms/status", tampered, sign(url, pairs))).status_code == 403
    assert backend.deliveries == [("SM1", "delivered")]


@pytest.mark.parametrize(
    ("body", "acked", "reply"),
    [
        ("OK", True, "know you are helping"),
        ("ok.", True, "know you are helping"),
        ("I'm helping", True, "know you are helping"),
        ("ok but I can't come", False, "Not taken as a yes"),
        ("not ok", False, "Not taken as a yes"),
        ("busy", False, "Not taken as a yes"),
        ("call someone else", False, "Not taken as a yes"),
        ("ok? what happened", False, "Not taken as a yes"),
    ],
)
async def test_replies_end_to_end(
    client: httpx.AsyncClient, backend: FakeBackend, body: str, acked: bool, reply: str
) -> None:
    pairs = twilio_form(body)
    r = await post(client, "/v1/sms/inbound", pairs, sign(INBOUND, pairs))
    assert r.status_code == 200 and reply in r.text
    state = backend.ladder.status("grandma")["state"]  # type: ignore[index]
    assert state == ("acked" if acked else "waiting")


# --- replays --------------------------------------------------------------------------------


def _state(backend: FakeBackend) -> str:
    return str(backend.ladder.status("grandma")["state"])  # type: ignore[index]


def _new_sos(backend: FakeBackend, run_id: str) -> None:
    backend.clock.advance(60)  # a later SOS: the latest row is the one status() shows
    backend.ladder.open(run_id, "grandma")


async def test_a_replayed_signed_ok_acknowledges_nothing(
    client: httpx.AsyncClient, backend: FakeBackend
) -> None:
    pairs = twilio_form("OK on my way")
    sig = sign(INBOUND, pairs)
    assert "know you are helping" in (await post(client, "/v1/sms/inbound", pairs, sig)).text
    assert _state(backend) == "acked"
    _new_sos(backend, "run-2")
    for _ in range(2):  # the captured request, replayed as is: a valid signature
        r = await post(client, "/v1/sms/inbound", pairs, sig)
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/xml")
        assert "<Message>" not in r.text and "helping" not in r.text
        assert _state(backend) == "waiting"
    # The same contact's next real reply (a new MessageSid) still acknowledges.
    fresh = [(k, "SM" + "1" * 32 if k == "MessageSid" else v) for k, v in pairs]
    assert "know you are helping" in (await post(client, "/v1/sms/inbound", fresh, sign(INBOUND, fresh))).text  # fmt: skip
    assert _state(backend) == "acked"


async def test_a_replay_after_a_restart_is_still_refused(
    tmp_path: Path, backend: FakeBackend
) -> None:
    pairs = twilio_form("OK")
    sig = sign(INBOUND, pairs)
    async for c in client_for(backend):
        assert (await post(c, "/v1/sms/inbound", pairs, sig)).status_code == 200
    assert _state(backend) == "acked"
    _new_sos(backend, "run-2")
    # A new process: a new connection to the same safety.db.
    async for c in client_for(backend, db=Database(tmp_path / "safety.db")):
        r = await post(c, "/v1/sms/inbound", pairs, sig)
        assert r.status_code == 200 and "<Message>" not in r.text
    assert _state(backend) == "waiting"


@pytest.mark.parametrize("sid", [None, "", "SM 1", "SM" + "0" * 70])
async def test_a_request_without_a_message_sid_is_refused(
    client: httpx.AsyncClient, backend: FakeBackend, sid: str | None
) -> None:
    pairs = [(k, (sid or "") if k == "MessageSid" else v) for k, v in twilio_form("OK")]
    if sid is None:
        pairs = [(k, v) for k, v in pairs if k != "MessageSid"]
    assert (await post(client, "/v1/sms/inbound", pairs, sign(INBOUND, pairs))).status_code == 400
    bearer = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/x-www-form-urlencoded"}  # fmt: skip
    r = await client.post("/v1/sms/inbound", content=urlencode(pairs), headers=bearer)
    assert r.status_code == 400
    assert _state(backend) == "waiting"


async def test_an_ack_that_failed_does_not_use_the_message_up(
    client: httpx.AsyncClient, backend: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = backend.ladder.ack_by_sms

    async def broken(phone: str, body: str) -> str | None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(backend.ladder, "ack_by_sms", broken)
    pairs = twilio_form("OK")
    with pytest.raises(RuntimeError):
        await post(client, "/v1/sms/inbound", pairs, sign(INBOUND, pairs))
    monkeypatch.setattr(backend.ladder, "ack_by_sms", real)
    r = await post(client, "/v1/sms/inbound", pairs, sign(INBOUND, pairs))  # Twilio's retry
    assert "know you are helping" in r.text and _state(backend) == "acked"


@pytest.mark.parametrize("kind", ["stored", "memory"])
def test_seen_message_sids_are_pruned_after_the_window(tmp_path: Path, kind: str) -> None:
    now = [1_790_000_000.0]
    seen: SeenMessages = (
        StoredSeen(Database(tmp_path / "safety.db"), keep_s=3600, clock=lambda: now[0])
        if kind == "stored"
        else MemorySeen(keep_s=3600, clock=lambda: now[0])
    )
    assert seen.first_time("SMa") and not seen.first_time("SMa")
    now[0] += 3599
    assert not seen.first_time("SMa") and seen.first_time("SMb")
    now[0] += 2
    assert seen.first_time("SMc")  # the insert prunes SMa
    assert seen.first_time("SMa") and not seen.first_time("SMb")
    seen.forget("SMc")
    assert seen.first_time("SMc")
    if isinstance(seen, StoredSeen):
        rows = Database(tmp_path / "safety.db").conn().execute("SELECT sid FROM sms_seen")
        assert sorted(r[0] for r in rows) == ["SMa", "SMb", "SMc"]
