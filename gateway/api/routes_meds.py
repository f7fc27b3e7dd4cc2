"""Prescriptions (parse, show, confirm, stop) and adherence. Nothing is scheduled until the
parsed schedule is confirmed."""

from __future__ import annotations

from datetime import date
from typing import Any

from fastapi import APIRouter, HTTPException, status
from pydantic import BaseModel, ConfigDict, Field

from gateway.api.deps import AdminDep, Backend, BackendDep, PersonId, ReaderDep
from gateway.api.responses import ACT, BODY, PERSON, READ, UNAVAILABLE, errors, link
from gateway.base.errors import UnsafeRequestError
from gateway.base.ports import MedicationPort

router = APIRouter(tags=["medication"], responses=PERSON | UNAVAILABLE)
_RX = "$response.body#/id"  # null when the text needs questions answered first
_SAME = "$request.path.person"


class ProposalOut(BaseModel):
    id: str | None = Field(description="confirm this id to schedule the reminders")
    parsed: dict[str, Any] | None
    summary: str | None
    questions: list[str]
    warnings: list[str]
    needs_confirmation: bool
    refused: bool = Field(description="refused for safety; the reason is in `questions`")


class StoppedOut(BaseModel):
    id: str
    status: str


class AdherenceOut(BaseModel):
    person: str
    day: date
    medications: dict[str, Any]


class PrescriptionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=500)


def _meds(backend: Backend, person: str) -> MedicationPort:
    if backend.household.person(person) is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such person")
    if backend.meds is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "reminders are not running")
    return backend.meds


@router.post(
    "/v1/persons/{person}/prescriptions",
    operation_id="proposePrescription",
    responses={
        200: {
            "description": "The parsed schedule, or the questions to ask",
            "links": {
                "Confirm": link("confirmPrescription", "Schedule it", person=_SAME, rx_id=_RX),
                "Stop": link("stopPrescription", "Stop it", person=_SAME, rx_id=_RX),
            },
        },
        **ACT,
        **BODY,
    },
)
async def propose(
    person: PersonId, body: PrescriptionIn, backend: BackendDep, _: AdminDep
) -> ProposalOut:
    """Parse a prescription. Returns the schedule to show the user (and any warnings), or the
    questions to ask when it is unclear. Confirm it to schedule the reminders."""
    rx_id, result = await _meds(backend, person).propose(person, body.text)
    rx = result.prescription
    return ProposalOut(
        id=rx_id,
        parsed=rx.as_dict() if rx else None,
        summary=rx.summary() if rx else None,
        questions=list(result.questions),
        warnings=list(result.warnings),
        needs_confirmation=rx_id is not None,
        # Refused for safety (e.g. daily methotrexate): the message is in `questions`.
        refused=bool(getattr(result, "refused", False)),
    )


@router.post(
    "/v1/persons/{person}/prescriptions/{rx_id}/confirm",
    operation_id="confirmPrescription",
    responses=ACT | errors(409),
)
async def confirm(person: PersonId, rx_id: str, backend: BackendDep, _: AdminDep) -> dict[str, Any]:
    try:
        return await _meds(backend, person).confirm(person, rx_id)
    except UnsafeRequestError as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    except ValueError as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from None


class IntakeIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    medication: str = Field(min_length=1, max_length=100)
    mg: float = Field(gt=0, le=100_000)


@router.post("/v1/persons/{person}/intake", responses=ACT | BODY)
async def intake(
    person: PersonId, body: IntakeIn, backend: BackendDep, _: AdminDep
) -> dict[str, Any]:
    """A dose the person reports having taken (e.g. an as-needed painkiller); today's total
    over a known over-the-counter maximum warns them and tells the family."""
    return await _meds(backend, person).record_intake(person, body.medication, body.mg)


@router.delete(
    "/v1/persons/{person}/prescriptions/{rx_id}", operation_id="stopPrescription", responses=ACT
)
def stop(person: PersonId, rx_id: str, backend: BackendDep, _: AdminDep) -> StoppedOut:
    if not _meds(backend, person).stop_prescription(person, rx_id):
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such prescription")
    return StoppedOut(id=rx_id, status="stopped")


@router.get("/v1/persons/{person}/prescriptions", operation_id="listPrescriptions", responses=READ)
def listing(person: PersonId, backend: BackendDep, _: ReaderDep) -> list[dict[str, Any]]:
    return _meds(backend, person).prescriptions(person)


@router.get("/v1/persons/{person}/adherence", responses=READ)
def adherence(
    person: PersonId, backend: BackendDep, _: ReaderDep, day: date | None = None
) -> AdherenceOut:
    """Per medication for one local day (default today): scheduled, taken, skipped, missed,
    pending and the taken rate of the doses that have ended."""
    meds = _meds(backend, person)
    from datetime import datetime
    from zoneinfo import ZoneInfo

    d = day or datetime.now(ZoneInfo(backend.household.timezone)).date()
    return AdherenceOut(person=person, day=d, medications=meds.adherence(person, d))
