"""FHIR export of one person's record over a period (docs/fhir.md): admin and family (the
family's copy carries the redactions of its other reads); a viewer gets 403. Every export is
audited before the first byte goes out."""

from __future__ import annotations

import hashlib
import time
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from fastapi import APIRouter, HTTPException, Query, Request, Response, status
from fastapi.responses import StreamingResponse

from gateway.api import redact
from gateway.api.deps import BackendDep, FamilyDep, PersonId
from gateway.api.responses import ACT, PERSON, UNAVAILABLE, errors
from gateway.export import ExportError, ExportSource, make_request, stream
from gateway.export.source import AUDIT_TOOL

router = APIRouter(tags=["export"], responses=ACT | PERSON | UNAVAILABLE | errors(422))

FHIR_JSON = "application/fhir+json"
_OK = {
    "description": "A FHIR R4B Bundle (type collection), streamed",
    "content": {FHIR_JSON: {"schema": {"type": "object"}}},
}


def _who(role: str, request: Request) -> str:
    """api:<role>:<first 8 hex of the token's SHA-256> (family tokens are several; never the
    token itself), as the clinician summary's audit has it."""
    auth = request.headers.get("authorization", "")
    token = auth.split(" ", 1)[1].strip() if " " in auth else ""
    return f"api:{role}:{hashlib.sha256(token.encode()).hexdigest()[:8]}"


@runtime_checkable
class ExportBackend(Protocol):
    """What a backend offers when it can export (gateway/runtime/api_backend.py does)."""

    def export_source(self) -> ExportSource: ...


@router.get(
    "/v1/persons/{person}/fhir",
    operation_id="exportFhir",
    response_class=Response,
    responses={200: _OK},
)
def export_fhir(
    person: PersonId,
    backend: BackendDep,
    role: FamilyDep,
    request: Request,
    since: Annotated[str, Query(max_length=40, description="ISO 8601 date or date-time")],
    until: Annotated[
        str, Query(max_length=40, description="ISO 8601; a date includes that whole day")
    ],
    downsample: Literal["none", "minute", "hour"] = "none",
    name: Annotated[bool, Query(description="false: the person id only, no name")] = True,
) -> StreamingResponse:
    """The person's vitals, NEWS2 and the texts sent about them in [since, until), as a FHIR
    Bundle. 404: no such person, or nothing recorded in the period; 422: a date that does not
    parse, or a period that ends before it starts."""
    if not isinstance(backend, ExportBackend):
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "export is not available")
    source = backend.export_source()
    scrub = None if role == "admin" else redact.scrub_text
    try:
        req = make_request(
            source, person, since, until, downsample=downsample, include_name=name, scrub=scrub
        )
    except ExportError as exc:
        source.audit(
            {
                "actor": _who(role, request),
                "tool": AUDIT_TOOL,
                "args": {"person": person, "since": since, "until": until},
                "ok": False,
                "error": f"{exc.status}: {exc}",
            }
        )
        detail: Any = str(exc)
        if exc.status == 422:
            detail = [
                {"loc": ["query", exc.field or "since"], "msg": str(exc), "type": "value_error"}
            ]
        raise HTTPException(exc.status, detail) from None
    source.audit(req.audit_record(_who(role, request)))
    return StreamingResponse(
        stream(source, req, now=time.time()),
        media_type=FHIR_JSON,
        headers={
            "Cache-Control": "no-store",
            "Content-Disposition": f'attachment; filename="{person}.fhir.json"',
        },
    )
