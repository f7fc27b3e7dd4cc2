"""Acknowledging an SOS: the family (API or MQTT) or an emergency contact's SMS reply stops
the escalation ladder. Twilio posts replies here (form-encoded), signed with the account's
auth token; without a valid signature the admin token is required. Each inbound MessageSid
is acted on once (gateway.notify.replay): the signature has no timestamp."""

from __future__ import annotations

import asyncio
import hmac
import logging
import math
import re
from typing import Any
from xml.sax.saxutils import escape

from fastapi import APIRouter, HTTPException, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field

from gateway.api.deps import Backend, BackendDep, FamilyDep, PersonId, ReaderDep
from gateway.api.guards import WebhookGate, webhook_gate
from gateway.api.responses import ACT, BODY, PERSON, READ, UNAVAILABLE, errors
from gateway.base.ports import LadderPort
from gateway.notify.ack import is_ack
from gateway.notify.replay import SeenMessages
from gateway.notify.twilio_webhook import MAX_FIELDS, Form, is_signed, signed_url

log = logging.getLogger(__name__)
router = APIRouter(tags=["sos"])

# Twilio's are "SM" or "MM" and 32 hex digits; loose, but bounded and plain.
MESSAGE_SID = re.compile(r"[A-Za-z0-9]{2,64}")


class LadderAckBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    by: str = Field(default="api", max_length=64)


class AckOut(BaseModel):
    person: str
    acknowledged: bool


class ClearedOut(BaseModel):
    person: str
    cleared: int = Field(description="alerts closed")


class RecordedOut(BaseModel):
    recorded: bool = Field(description="the text was one of ours")


def _form(required: list[str], **fields: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI of a form Twilio posts (read by the route itself: it checks the
    signature over the raw body). Twilio sends more fields than these; all are strings.
    Not declared as secured: Twilio's X-Twilio-Signature is the credential (the admin token
    stands in for it), and without either the answer is 403 whatever the caller sent."""
    schema = {"type": "object", "properties": fields, "required": required,
              "maxProperties": MAX_FIELDS}  # fmt: skip
    body = {"application/x-www-form-urlencoded": {"schema": schema}}
    return {"requestBody": {"required": bool(required), "content": body}}


_ANY = {"type": "string"}
_SID = {"type": "string", "pattern": "^[A-Za-z0-9]{2,64}$"}
_WEBHOOK = errors(400, 403, 413, 429)


def _ladder(backend: Backend, person: str | None = None) -> LadderPort:
    if person is not None and backend.household.person(person) is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such person")
    if backend.ladder is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "the SOS ladder is not running")
    return backend.ladder


@router.post(
    "/v1/sos/{person}/ack", operation_id="ackSos", responses=ACT | BODY | PERSON | UNAVAILABLE
)
async def ack(
    person: PersonId, backend: BackendDep, role: FamilyDep, body: LadderAckBody | None = None
) -> AckOut:
    """ "I'm helping": stops the escalation of the person's open SOS. A family action:
    admin or family tokens (a viewer token is read-only: 403)."""
    by = f"{role}:{(body or LadderAckBody()).by}"
    return AckOut(person=person, acknowledged=await _ladder(backend, person).ack(person, by))


@router.post("/v1/persons/{person}/alerts/clear", responses=ACT | BODY | PERSON)
async def all_clear(
    person: PersonId, backend: BackendDep, role: FamilyDep, body: LadderAckBody | None = None
) -> ClearedOut:
    """The explicit all-clear: someone has checked on the person. Closes every open alert,
    including one that partial readings could never clear (a family action, like an ack:
    admin or family tokens; a viewer token gets 403)."""
    if backend.household.person(person) is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such person")
    by = f"{role}:{(body or LadderAckBody()).by}"
    return ClearedOut(person=person, cleared=await backend.clear_alerts(person, by))


@router.get(
    "/v1/sos/{person}/ladder", operation_id="getLadder", responses=READ | PERSON | UNAVAILABLE
)
def ladder_status(person: PersonId, backend: BackendDep, _: ReaderDep) -> dict[str, Any] | None:
    return _ladder(backend, person).status(person)


def _twiml(text: str | None) -> Response:
    said = f"<Message>{escape(text)}</Message>" if text else ""
    body = f'<?xml version="1.0" encoding="UTF-8"?><Response>{said}</Response>'
    return Response(body, media_type="application/xml")


def _limited(gate: WebhookGate | None) -> HTTPException | None:
    """429 for a request from an address already over its limit that Twilio did not sign."""
    if gate is None or gate.wait is None:
        return None
    return HTTPException(
        status.HTTP_429_TOO_MANY_REQUESTS,
        "rate limit exceeded",
        headers={"Retry-After": str(math.ceil(gate.wait))},
    )


async def _signed_form(request: Request) -> Form:
    """The form Twilio posted, if it is signed with the account's auth token (or the caller
    holds the admin token); 403 otherwise (429 past the address's limit: every failure is
    counted, see gateway.api.guards). Signed URL: see gateway.notify.twilio_webhook."""
    gate = webhook_gate(request.scope)
    try:
        params = Form.parse(await request.body())
    except ValueError:
        raise _limited(gate) or HTTPException(
            status.HTTP_400_BAD_REQUEST, "too many form fields"
        ) from None
    token: str | None = request.app.state.twilio_auth_token
    signature = request.headers.get("x-twilio-signature")
    if token and signature:
        url = signed_url(
            getattr(request.app.state, "public_url", None),
            str(request.url),
            request.scope["path"],
            request.scope.get("root_path", ""),
            request.scope.get("query_string", b"").decode("latin-1"),
        )
        if is_signed(token, url, params, signature):
            if gate is not None:
                gate.genuine = True  # never limited
            return params
    refused = _limited(gate)
    if refused is not None:
        raise refused
    # Without a signature header the request was counted up front (a wrong bearer too).
    auth = request.headers.get("authorization", "")
    admin: str = request.app.state.tokens.admin
    if auth.lower().startswith("bearer ") and hmac.compare_digest(
        auth[7:].encode(), admin.encode()
    ):
        return params
    raise HTTPException(status.HTTP_403_FORBIDDEN, "not signed by Twilio")


@router.post(
    "/v1/sms/status",
    responses=_WEBHOOK,
    openapi_extra=_form([], MessageSid=_ANY, MessageStatus=_ANY),
)
async def sms_status(request: Request) -> RecordedOut:
    """Twilio's status callback: the delivery of one text (per recipient)."""
    params = await _signed_form(request)
    backend: Backend = request.app.state.backend
    known = backend.text_delivery(params.first("MessageSid"), params.first("MessageStatus"))
    return RecordedOut(recorded=known)


@router.post(
    "/v1/sms/inbound",
    response_class=Response,
    responses={
        200: {
            "description": "TwiML: the reply texted back (or none)",
            "content": {"application/xml": {"schema": {"type": "string"}}},
        },
        **_WEBHOOK,
        **UNAVAILABLE,
    },
    openapi_extra=_form(["MessageSid"], MessageSid=_SID, From=_ANY, Body=_ANY),
)
async def sms_inbound(request: Request) -> Response:
    """Twilio's incoming-message webhook: an emergency contact replying OK acknowledges.
    A MessageSid already acted on is a replay (or Twilio retrying one we answered): 200 with
    an empty reply, nothing acknowledged, and counted against the address like a failure."""
    params = await _signed_form(request)
    gate = webhook_gate(request.scope)
    sid = params.first("MessageSid")
    if not MESSAGE_SID.fullmatch(sid):
        if gate is not None:
            gate.genuine = False
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "not an inbound SMS: no MessageSid")
    backend: Backend = request.app.state.backend
    ladder = _ladder(backend)  # a 503 must not use the MessageSid up: Twilio retries
    seen: SeenMessages = request.app.state.sms_seen
    if not await asyncio.to_thread(seen.first_time, sid):
        if gate is not None:
            gate.genuine = False
        log.warning("SMS webhook: a MessageSid already acted on was ignored (replay or retry)")
        return _twiml(None)
    body = params.first("Body")
    try:
        person = await ladder.ack_by_sms(params.first("From"), body)
    except BaseException:
        seen.forget(sid)  # not acted on: Twilio's retry must land (sync: even if cancelled)
        raise
    if person is not None:
        return _twiml("Thank you: the others know you are helping.")
    if not is_ack(body):
        # Tell them plainly: a "can't come" or a question must not leave them thinking
        # the others were told they are helping.
        return _twiml("Not taken as a yes. Reply OK on its own if you are helping.")
    # Same answer whether or not an SOS is open: a stranger learns nothing from it.
    return _twiml("Thank you. Reply OK to an SOS alert to say you are helping.")
