from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, status

from gateway.api import redact
from gateway.api.deps import BackendDep, ReaderDep
from gateway.api.responses import PERSON, READ, link
from gateway.contract.topics import EventType

router = APIRouter(tags=["records"], responses=READ)


@router.get("/v1/events")
def events(
    backend: BackendDep,
    role: ReaderDep,
    person: str | None = None,
    # The published schema lists the event types; anything else is a 422, not an empty page.
    type: Annotated[list[EventType] | None, Query()] = None,
    since: float | None = None,
    until: float | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[dict[str, Any]]:
    """Events newest first; filter by person, type (repeatable), and time (epoch seconds).
    Places and phone numbers are redacted for family and viewer tokens."""
    types = [t.value for t in type] if type else None
    found = backend.events(person=person, types=types, since=since, until=until, limit=limit)
    return found if role == "admin" else redact.events(found)


@router.get(
    "/v1/trajectories",
    responses={
        200: {
            "description": "Run summaries",
            "links": {
                "GetRun": link("getTrajectory", "The first run", run_id="$response.body#/0/run_id")
            },
        }
    },
)
def trajectories(
    backend: BackendDep,
    role: ReaderDep,
    person: str | None = None,
    category: str | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> list[dict[str, Any]]:
    """Run summaries, newest first (no conversation text in them)."""
    runs = backend.trajectories(person=person, category=category, limit=limit)
    return runs if role == "admin" else [redact.trajectory_record(r) for r in runs]


@router.get("/v1/trajectories/{run_id}", operation_id="getTrajectory", responses=PERSON)
def trajectory(run_id: str, backend: BackendDep, role: ReaderDep) -> dict[str, Any]:
    """One run with its trajectory. For family and viewer tokens what the user said,
    symptoms, the planner's reasons, phone numbers and places are redacted."""
    t = backend.trajectory(run_id)
    if t is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such trajectory")
    return t if role == "admin" else redact.trajectory_record(t)
