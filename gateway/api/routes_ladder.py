"""Acknowledging an SOS: the family (API or MQTT) or an emergency contact's SMS reply stops
the escalation ladder. Twilio posts replies here (form-encoded), signed with the account's
auth token; without a valid signature the admin token is required."""

from __future__ import annotations

import hmac
from typing import Any
from xml.sax.saxutils import escape

from fastapi import APIRouter, HTTPException, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field

from gateway.api.deps import Backend, BackendDep, FamilyDep, ReaderDep
from gateway.notify.ack import is_ack
from gateway.notify.twilio_webhook import Form, is_signed, signed_url
from gateway.ports import LadderPort

router = APIRouter(tags=["sos"])


class AckIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    by: str = Field(default="api", max_length=64)


def _ladder(backend: Backend, person: str | None = None) -> LadderPort:
    if person is not None and backend.household.person(person) is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such person")
    if backend.ladder is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "the SOS ladder is not running")
    return backend.ladder


@router.post("/v1/sos/{person}/ack")
async def ack(
    person: str, backend: BackendDep, role: FamilyDep, body: AckIn | None = None
) -> dict[str, Any]:
    """ "I'm helping": stops the escalation of the person's open SOS. A family action:
    admin or family tokens (a viewer token is read-only: 403)."""
    by = f"{role}:{(body or AckIn()).by}"
    return {"person": person, "acknowledged": await _ladder(backend, person).ack(person, by)}


@router.post("/v1/persons/{person}/alerts/clear")
async def all_clear(
    person: str, backend: BackendDep, role: FamilyDep, body: AckIn | None = None
) -> dict[str, Any]:
    """The explicit all-clear: someone has checked on the person. Closes every open alert,
    including one that partial readings could never clear (a family action, like an ack:
    admin or family tokens; a viewer token gets 403)."""
    if backend.household.person(person) is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such person")
    by = f"{role}:{(body or AckIn()).by}"
    return {"person": person, "cleared": await backend.clear_alerts(person, by)}


@router.get("/v1/sos/{person}/ladder")
def ladder_status(person: str, backend: BackendDep, _: ReaderDep) -> dict[str, Any] | None:
    return _ladder(backend, person).status(person)


def _twiml(text: str) -> Response:
    body = f'<?xml version="1.0" encoding="UTF-8"?><Response><Message>{escape(text)}</Message></Response>'
    return Response(body, media_type="application/xml")


async def _signed_form(request: Request) -> Form:
    """The form Twilio posted, if it is signed with the account's auth token (or the caller
    holds the admin token); 403 otherwise. Signed URL: see gateway.notify.twilio_webhook."""
    try:
        params = Form.parse(await request.body())
    except ValueError:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "too many form fields") from None
    token: str | None = request.app.state.twilio_auth_token
    signature = request.headers.get("x-twilio-signature")
    trusted = False
    if token and signature:
        url = signed_url(
            getattr(request.app.state, "public_url", None),
            str(request.url),
            request.scope["path"],
            request.scope.get("root_path", ""),
            request.scope.get("query_string", b"").decode("latin-1"),
        )
        trusted = is_signed(token, url, params, signature)
    if not trusted:
        auth = request.headers.get("authorization", "")
        admin: str = request.app.state.tokens.admin
        trusted = auth.lower().startswith("bearer ") and hmac.compare_digest(
            auth[7:].encode(), admin.encode()
        )
    if not trusted:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "not signed by Twilio")
    return params


@router.post("/v1/sms/status")
async def sms_status(request: Request) -> dict[str, Any]:
    """Twilio's status callback: the delivery of one text (per recipient)."""
    params = await _signed_form(request)
    backend: Backend = request.app.state.backend
    known = backend.text_delivery(params.first("MessageSid"), params.first("MessageStatus"))
    return {"recorded": known}


@router.post("/v1/sms/inbound")
async def sms_inbound(request: Request) -> Response:
    """Twilio's incoming-message webhook: an emergency contact replying OK acknowledges."""
    params = await _signed_form(request)
    backend: Backend = request.app.state.backend
    body = params.first("Body")
    person = await _ladder(backend).ack_by_sms(params.first("From"), body)
    if person is not None:
        return _twiml("Thank you: the others know you are helping.")
    if not is_ack(body):
        # Tell them plainly: a "can't come" or a question must not leave them thinking
        # the others were told they are helping.
        return _twiml("Not taken as a yes. Reply OK on its own if you are helping.")
    # Same answer whether or not an SOS is open: a stranger learns nothing from it.
    return _twiml("Thank you. Reply OK to an SOS alert to say you are helping.")
