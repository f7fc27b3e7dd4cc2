"""The console's Simulator routes (admin only), mounted only when HEALTHGW_SIMULATOR_ENABLED
is true: with it off they do not exist (404). They live in the composition root because
gateway/ never imports simulators/. Out of the OpenAPI document: a demo tool, not the API."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, HTTPException
from pydantic import BaseModel, ConfigDict

from gateway.api.deps import AdminDep, PersonId
from healthgw.sim_watches import SimulatedWatches, SimulatorRefused
from simulators.scenarios import SCENARIOS

Scenario = Literal[SCENARIOS]  # type: ignore[valid-type]


class StartIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scenario: Scenario


class AnswerIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ok: bool


def simulator_router(sim: SimulatedWatches) -> APIRouter:
    router = APIRouter(prefix="/v1/simulator", include_in_schema=False)

    async def run(call: Any) -> None:
        try:
            await call
        except SimulatorRefused as exc:
            raise HTTPException(exc.status, str(exc)) from None

    @router.get("")
    def status(role: AdminDep) -> dict[str, object]:
        """Scenarios to pick from, and each running watch."""
        return sim.status()

    @router.post("/{person}/start")
    async def start(
        person: PersonId, body: Annotated[StartIn, Body()], role: AdminDep
    ) -> dict[str, object]:
        await run(sim.start_person(person, body.scenario))
        return {"person": person, "scenario": body.scenario}

    @router.post("/{person}/stop")
    async def stop(person: PersonId, role: AdminDep) -> dict[str, object]:
        try:
            stopped = await sim.stop_person(person)
        except SimulatorRefused as exc:
            raise HTTPException(exc.status, str(exc)) from None
        return {"person": person, "stopped": stopped}

    @router.post("/{person}/sos/{action}")
    async def sos(
        person: PersonId, action: Literal["start", "end"], role: AdminDep
    ) -> dict[str, object]:
        await run(sim.sos(person, action))
        return {"person": person, "sos": action}

    @router.post("/{person}/answer")
    async def answer(
        person: PersonId, body: Annotated[AnswerIn, Body()], role: AdminDep
    ) -> dict[str, object]:
        try:
            prompt_id = await sim.answer(person, body.ok)
        except SimulatorRefused as exc:
            raise HTTPException(exc.status, str(exc)) from None
        return {"person": person, "ok": body.ok, "prompt_id": prompt_id}

    return router
