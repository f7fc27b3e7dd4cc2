"""The clinician summary (issue 28): one person over a period as a printable PDF for the GP.

It is PHI in full (names, conditions, medications, what the person answered), so only the
admin and family tokens may have it (a viewer's is refused), and every export is an audit
row (who: the role and a fingerprint of the token; what: the person and the period; when),
written by the reports side (agents/reports/daily.py). The PDF is made in the report child
and streamed: nothing is kept on disk."""

from __future__ import annotations

import hashlib
from datetime import date, timedelta
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request, Response, status

from gateway.api.deps import BackendDep, FamilyDep, PersonId
from gateway.api.responses import ACT, PERSON, UNAVAILABLE, errors
from gateway.base.ports import NothingToReport

router = APIRouter(tags=["reports"], responses=PERSON | UNAVAILABLE)

DEFAULT_DAYS = 14
MAX_DAYS = 31  # agents/reports/clinician.py: one or two pages

_PDF = {
    "description": "The summary, A4, two pages",
    "content": {"application/pdf": {"schema": {"type": "string", "format": "binary"}}},
}


def _who(role: str, request: Request) -> str:
    """The role, and which of its tokens (a fingerprint, never the token): family tokens are
    several, and the audit should tell them apart."""
    auth = request.headers.get("authorization", "")
    token = auth.split(" ", 1)[1].strip() if " " in auth else ""
    return f"{role}:{hashlib.sha256(token.encode()).hexdigest()[:8]}" if token else role


@router.get(
    "/v1/persons/{person}/summary.pdf",
    operation_id="clinicianSummary",
    response_class=Response,
    responses={200: _PDF, **ACT, **errors(422)},
)
async def clinician_summary(
    person: PersonId,
    backend: BackendDep,
    role: FamilyDep,
    request: Request,
    since: Annotated[date | None, Query(description="first day (local), YYYY-MM-DD")] = None,
    until: Annotated[date | None, Query(description="last day (local), default today")] = None,
) -> Response:
    """A one-to-two-page summary a GP reads in a minute: who, conditions, medications and
    adherence, each vital's trend against the person's band with alerts and SOS marked,
    NEWS2 maximum per day, what the hub asked and the answers, device gaps. Default period:
    the last 14 days. Admin and family only; every export is audited."""
    if backend.household.person(person) is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such person")
    reports = backend.reports
    if reports is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "reports are not running")
    today: date = reports.today()
    if since is not None and since > today:
        raise HTTPException(422, "`since` is after today: there is nothing to summarise yet")
    if until is None:
        until = today if since is None else min(today, since + timedelta(DEFAULT_DAYS - 1))
    if since is None:
        since = min(until, today) - timedelta(days=DEFAULT_DAYS - 1)
    if until < since:
        raise HTTPException(422, "`until` is before `since`")
    if (until - since).days + 1 > MAX_DAYS:
        raise HTTPException(422, f"the period is longer than {MAX_DAYS} days; ask for it in parts")
    until = min(until, today)  # the days still to come hold nothing
    try:
        pdf = await reports.summary_pdf(person, since, until, by=_who(role, request))
    except NothingToReport as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from None
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    name = f"summary-{person}-{since.isoformat()}-to-{until.isoformat()}.pdf"
    return Response(
        pdf,
        media_type="application/pdf",
        headers={
            "Content-Disposition": f'attachment; filename="{name}"',
            "Cache-Control": "no-store",  # PHI: not kept by a browser or proxy
        },
    )
