"""Daily reports: the days kept, each day's page (HTML, self-contained), the same report as
data for the console, and making one now."""

from __future__ import annotations

from datetime import date
from typing import Any

from fastapi import APIRouter, HTTPException, Response, status
from fastapi.responses import HTMLResponse

from gateway.api.deps import AdminDep, Backend, BackendDep, PersonId, ReaderDep
from gateway.api.responses import ACT, PERSON, READ, UNAVAILABLE, link
from gateway.base.ports import ReportPort

router = APIRouter(tags=["reports"], responses=PERSON | UNAVAILABLE)
_SAME = "$request.path.person"


def _reports(backend: Backend, person: str) -> ReportPort:
    if backend.household.person(person) is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such person")
    if backend.reports is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "reports are not running")
    return backend.reports


@router.get(
    "/v1/persons/{person}/reports",
    operation_id="listReports",
    responses={
        200: {
            "description": "Days (YYYY-MM-DD), newest first",
            "links": {
                "Page": link("reportPage", "The newest", person=_SAME, day="$response.body#/0"),
                "Data": link(
                    "reportView", "The newest, as data", person=_SAME, day="$response.body#/0"
                ),
            },
        },
        **READ,
    },
)
def reports(person: PersonId, backend: BackendDep, _: ReaderDep) -> list[str]:
    """Days with a daily report, newest first."""
    return _reports(backend, person).list(person)


_HTML = {"description": "The report", "content": {"text/html": {"schema": {"type": "string"}}}}


@router.get(
    "/v1/persons/{person}/reports/{day}",
    operation_id="reportPage",
    response_class=Response,  # not HTMLResponse: FastAPI would call the errors HTML too
    responses={200: _HTML, **READ},
)
def report_page(person: PersonId, day: date, backend: BackendDep, _: ReaderDep) -> HTMLResponse:
    page = _reports(backend, person).html(person, day)
    if page is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no report for that day")
    return HTMLResponse(page)


@router.get("/v1/persons/{person}/reports/{day}/data", operation_id="reportView", responses=READ)
def report_view(person: PersonId, day: date, backend: BackendDep, _: ReaderDep) -> dict[str, Any]:
    """The day's report as data: `report` (the numbers the page shows) and `charts` (the
    series, normal bands, event markers and device gaps the page's charts are drawn from)."""
    view = _reports(backend, person).view(person, day)
    if view is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no report for that day")
    return view


@router.post("/v1/persons/{person}/reports/{day}", responses=ACT)
async def make_report(
    person: PersonId, day: date, backend: BackendDep, _: AdminDep
) -> dict[str, Any]:
    """Make (or remake) the report for one day now."""
    return await _reports(backend, person).make(person, day)
