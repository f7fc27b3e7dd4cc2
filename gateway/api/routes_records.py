from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, status

from gateway.api.deps import BackendDep, ReaderDep

router = APIRouter(tags=["records"])


@router.get("/v1/events")
def events(
    backend: BackendDep,
    _: ReaderDep,
    person: str | None = None,
    type: Annotated[list[str] | None, Query()] = None,
    since: float | None = None,
    until: float | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[dict[str, Any]]:
    """Events newest first; filter by person, type (repeatable), and time (epoch seconds)."""
    return backend.events(person=person, types=type, since=since, until=until, limit=limit)


@router.get("/v1/trajectories")
def trajectories(
    backend: BackendDep,
    _: ReaderDep,
    person: str | None = None,
    category: str | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> list[dict[str, Any]]:
    return backend.trajectories(person=person, category=category, limit=limit)


@router.get("/v1/trajectories/{run_id}")
def trajectory(run_id: str, backend: BackendDep, _: ReaderDep) -> dict[str, Any]:
    t = backend.trajectory(run_id)
    if t is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such trajectory")
    return t
