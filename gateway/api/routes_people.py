from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, status

from gateway.api import redact
from gateway.api.deps import AdminDep, BackendDep, ReaderDep

router = APIRouter(tags=["people"])


def _known(backend: BackendDep, person: str) -> None:
    if backend.household.person(person) is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such person")


@router.get("/v1/persons")
def persons(backend: BackendDep, role: ReaderDep) -> list[dict[str, Any]]:
    """Everyone in the household with devices, latest vitals, last seen, open alerts, SOS.
    A device's position is for the admin only (redacted for family and viewer tokens)."""
    views = [backend.person_view(p.id) for p in backend.household.persons]
    return views if role == "admin" else redact.records(views)


@router.get("/v1/persons/{person}")
def person(person: str, backend: BackendDep, role: ReaderDep) -> dict[str, Any]:
    _known(backend, person)
    view = backend.person_view(person)
    return view if role == "admin" else redact.records([view])[0]


@router.get("/v1/persons/{person}/readings")
def readings(
    person: str,
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


@router.get("/v1/devices")
def devices(backend: BackendDep, _: ReaderDep) -> list[dict[str, Any]]:
    return backend.device_views()


@router.post("/v1/sos/{person}/start")
async def sos_start(person: str, backend: BackendDep, _: AdminDep) -> dict[str, Any]:
    """Press SOS on someone's behalf. A second press while one is open sends nothing new."""
    _known(backend, person)
    started = await backend.sos_start(person)
    return {"person": person, "started": started, "already_open": not started}


@router.post("/v1/sos/{person}/end")
async def sos_end(person: str, backend: BackendDep, _: AdminDep) -> dict[str, Any]:
    _known(backend, person)
    ended = await backend.sos_end(person)
    return {"person": person, "ended": ended}
