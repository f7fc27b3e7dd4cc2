from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, status
from pydantic import BaseModel

from gateway.api import redact
from gateway.api.deps import AdminDep, BackendDep, PersonId, ReaderDep
from gateway.api.responses import ACT, PERSON, READ, link

router = APIRouter(tags=["people"])

_PERSON = "$response.body#/0/id"  # the first person of the list
_LINKS = {
    "GetPerson": link("getPerson", "That person", person=_PERSON),
    "Readings": link("listReadings", "Their readings", person=_PERSON),
    "Prescriptions": link("listPrescriptions", "Their prescriptions", person=_PERSON),
    "Propose": link("proposePrescription", "Parse a prescription for them", person=_PERSON),
    "Memory": link("getMemory", "What the assistant remembers", person=_PERSON),
    "Reports": link("listReports", "Their daily reports", person=_PERSON),
    "Ladder": link("getLadder", "Their SOS ladder", person=_PERSON),
    "StartSos": link("startSos", "Press SOS for them", person=_PERSON),
}
_SAME = "$request.path.person"


class SosStartOut(BaseModel):
    person: str
    started: bool
    already_open: bool


class SosEndOut(BaseModel):
    person: str
    ended: bool


def _known(backend: BackendDep, person: str) -> None:
    if backend.household.person(person) is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such person")


@router.get(
    "/v1/persons",
    operation_id="listPersons",
    responses={200: {"description": "Everyone in the household", "links": _LINKS}, **READ},
)
def persons(backend: BackendDep, role: ReaderDep) -> list[dict[str, Any]]:
    """Everyone in the household with devices, latest vitals, last seen, open alerts, SOS.
    A device's position is for the admin only (redacted for family and viewer tokens)."""
    views = [backend.person_view(p.id) for p in backend.household.persons]
    return views if role == "admin" else redact.records(views)


@router.get("/v1/persons/{person}", operation_id="getPerson", responses=READ | PERSON)
def person(person: PersonId, backend: BackendDep, role: ReaderDep) -> dict[str, Any]:
    _known(backend, person)
    view = backend.person_view(person)
    return view if role == "admin" else redact.records([view])[0]


@router.get("/v1/persons/{person}/readings", operation_id="listReadings", responses=READ | PERSON)
def readings(
    person: PersonId,
    backend: BackendDep,
    role: ReaderDep,
    since: float | None = None,
    until: float | None = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> list[dict[str, Any]]:
    """Readings; the position a device reported is redacted for family and viewer tokens."""
    _known(backend, person)
    rows = backend.readings(person, since=since, until=until, limit=limit)
    return rows if role == "admin" else redact.records(rows)


@router.get("/v1/devices", responses=READ)
def devices(backend: BackendDep, _: ReaderDep) -> list[dict[str, Any]]:
    return backend.device_views()


@router.post(
    "/v1/sos/{person}/start",
    operation_id="startSos",
    responses={
        200: {
            "description": "Pressed (or already open)",
            "links": {
                "Ack": link("ackSos", "Acknowledge it", person=_SAME),
                "Ladder": link("getLadder", "Its escalation", person=_SAME),
                "End": link("endSos", "End it", person=_SAME),
            },
        },
        **ACT,
        **PERSON,
    },
)
async def sos_start(person: PersonId, backend: BackendDep, _: AdminDep) -> SosStartOut:
    """Press SOS on someone's behalf. A second press while one is open sends nothing new."""
    _known(backend, person)
    started = await backend.sos_start(person)
    return SosStartOut(person=person, started=started, already_open=not started)


@router.post("/v1/sos/{person}/end", operation_id="endSos", responses=ACT | PERSON)
async def sos_end(person: PersonId, backend: BackendDep, _: AdminDep) -> SosEndOut:
    _known(backend, person)
    return SosEndOut(person=person, ended=await backend.sos_end(person))
