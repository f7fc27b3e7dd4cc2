"""The appointment assistant in its own process (HEALTHGW_ASSISTANT_PROCESS=own): what the
child builds (`serve`, the spawn target) and what the gateway process keeps
(`assistant_process`).

The child owns the CPU-heavy conversation work: the conversations, the assistant and its
policy, the triage classifier, the long-term memory's similarity search, the tool
registry's appointment tools and notify_user, and the trajectories and conversation rows it
writes to healthgw.db (its own SQLite connection; WAL lets two processes share the file).
The gateway process keeps the broker link, the audit log, the event bus, the follow-up
scheduler and the one local model, and does those for the child over the pipe
(agents/assistant_proc). The SOS registry, playbooks and ladder never leave the gateway.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from functools import partial
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from agents.assistant.conversation_store import ConversationStore
from agents.assistant.conversations import Conversations
from agents.assistant.memory import LongTermMemory
from agents.assistant.model_roles import Roles
from agents.assistant.planner.policy import Policy
from agents.assistant.process.child import ChildParts, GatewayLink, RemoteModel, run
from agents.assistant.process.proxy import AssistantProcess
from agents.assistant.process.serving import GatewaySide
from agents.assistant.runner import Assistant
from agents.llm.worker import lower_priority
from agents.scheduling.follow_ups import FollowUps
from agents.tools.appointment_tools import AppointmentToolDeps, register_appointment_tools
from agents.tools.declare import register_all
from agents.tools.registry import ToolPermissionError, ToolRegistry
from agents.tools.sos_tools import SosToolDeps, SosTools
from agents.triage.lazy import LazyTriage
from gateway.base.clock import SystemClock
from gateway.base.db import Database
from gateway.base.settings import Settings
from gateway.contract.topics import EventType
from gateway.contract.values import Event
from gateway.household.model import Household
from gateway.runtime.api_backend import vitals_summary
from gateway.runtime.gateway import Gateway
from gateway.store.queries import StoreQueries

log = logging.getLogger("healthgw.assistant")

# The one SOS-registry tool the assistant's policy plans (tell the user something).
CHILD_SOS_TOOLS = frozenset({"notify_user"})


def serve(conn: Connection, settings: Settings, household: Household, log_level: int) -> None:
    """The spawned process's target: lower its priority, then run until told to stop."""
    nice = lower_priority(settings.assistant_process_nice)
    logging.basicConfig(
        level=log_level, format="%(asctime)s %(levelname)s assistant %(name)s: %(message)s"
    )
    asyncio.run(run(conn, lambda link: _build(settings, household, link), nice))


class _Trajectories(StoreQueries):
    """The store's trajectory upsert on the child's own connection."""

    def __init__(self, db: Database) -> None:
        self._db = db


class _GatewayOnly:
    """notify_user's deps that only SOS tools use: those stay in the gateway process."""

    def submit(self, *, to: str, body: str, key: str, person: str, purpose: str) -> str:
        raise ToolPermissionError("texts are sent by the gateway process")

    def assigned_ambulance(self, person: str) -> tuple[str, str] | None:
        raise ToolPermissionError("the SOS journal is in the gateway process")


def _build(settings: Settings, household: Household, link: GatewayLink) -> ChildParts:
    db = Database(Path(settings.data_dir) / "healthgw.db")
    clock = SystemClock()
    memory = LongTermMemory(db, clock_now=clock.now, vitals_summary=link.vitals)
    triage = LazyTriage(settings.triage_cache_dir)
    registry = ToolRegistry(audit=link.audit, clock=clock)
    gateway_only = _GatewayOnly()
    sos_deps = SosToolDeps(
        link.publisher, gateway_only, household, lambda _p: None, gateway_only, link.audit, clock
    )
    register_all(registry, SosTools(sos_deps), only=CHILD_SOS_TOOLS)
    register_appointment_tools(
        registry,
        AppointmentToolDeps(
            household, memory, clock, classify=triage.specialty,
            schedule_follow_up=link.schedule_follow_up,
        ),
    )  # fmt: skip
    roles = Roles(RemoteModel(link), timeout_s=settings.model_timeout_s)
    assistant = Assistant(
        registry,
        Policy(triage, watch_wearers=household.watch_wearers()),
        household,
        clock,
        roles=roles,
        save_trajectory=_Trajectories(db).save_trajectory,
        on_done=link.booked,
    )
    convs = Conversations(
        assistant,
        link.publisher,
        clock,
        idle_timeout_s=settings.assistant_idle_timeout_s,
        ready=triage.ensure,
        store=ConversationStore(db),
        on_close=link.closed,
    )

    def stats() -> dict[str, Any]:
        tools = {k: v.as_dict() for k, v in registry.metrics().items()}
        return {**convs.stats(), "tools": tools}

    return ChildParts(convs, stats, background=[triage.prepare], close=db.close)


def assistant_process(gw: Gateway, follow_ups: FollowUps, model: Any) -> AssistantProcess:
    """The gateway's side: the proxy standing where Conversations stands in-process."""

    async def booked(person: str, specialization: str | None, run_id: str) -> None:
        # No symptoms in the event: it goes to every family screen.
        await gw.emit(
            Event(
                EventType.APPOINTMENT_BOOKED,
                person,
                gw.clock.now(),
                {"specialization": specialization, "run_id": run_id},
            )
        )

    def audit(record: Mapping[str, Any]) -> None:
        gw.store.add_audit(record)

    side = GatewaySide(
        publisher=gw.link,
        audit=audit,
        booked=booked,
        now=gw.clock.now,
        schedule_follow_up=follow_ups.schedule,
        model=model,
        vitals=partial(vitals_summary, gw.monitor),
    )
    level = logging.getLogger().getEffectiveLevel()
    return AssistantProcess(serve, (gw.settings, gw.household, level), side)
