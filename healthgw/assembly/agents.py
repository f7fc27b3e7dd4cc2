"""The agents side, built for one gateway: the SOS playbooks and ladder, the appointment
assistant, medication reminders and daily reports. `build_agents` is the `extend` hook the
Gateway calls at construction (gateway/runtime/extensions.py): it returns the ports the gateway
calls and the parts it runs, so nothing is attached to the gateway afterwards."""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

from agents.assistant.chat_router import ChatRouter, ConversationsPort
from agents.assistant.conversation_store import ConversationStore
from agents.assistant.conversations import Conversations
from agents.assistant.memory import LongTermMemory
from agents.assistant.model_roles import Narrative, Roles
from agents.assistant.planner.policy import Policy
from agents.assistant.runner import Assistant, ConversationResult
from agents.medication.reminders import DoseRecord
from agents.medication.service import MedicationService
from agents.playbooks.journal import SosJournal
from agents.playbooks.ladder import SosLadder
from agents.playbooks.sos import SosRunner
from agents.reports.daily import NARRATIVE_PROMPT, DailyReports, narrative_facts
from agents.reports.process import ReportProcess
from agents.retention import register_agents
from agents.scheduling.follow_ups import FollowUps
from agents.tools.appointment_tools import AppointmentToolDeps, register_appointment_tools
from agents.tools.registry import ToolRegistry
from agents.tools.sos_tools import SosToolDeps, build_sos_registry
from agents.triage.lazy import LazyTriage
from gateway.base.clock import SystemClock
from gateway.contract.topics import EventType
from gateway.contract.values import Event
from gateway.runtime.api_backend import vitals_summary
from gateway.runtime.extensions import Extensions, Part
from gateway.runtime.gateway import Gateway
from gateway.tsdb.lines import dose_line
from healthgw.assembly.agent_parts import (
    AssistantPart,
    AssistantProcessPart,
    MedicationPart,
    SosLadderPart,
    SosPlaybooksPart,
)
from healthgw.assistant_child import assistant_process
from healthgw.report_reader import open_readings

log = logging.getLogger("healthgw.assembly.hub")


@dataclass
class AgentsSide:
    runner: SosRunner
    # None when HEALTHGW_ASSISTANT_ENABLED is false; the proxy with HEALTHGW_ASSISTANT_PROCESS=own
    conversations: ConversationsPort | None
    memory: LongTermMemory | None
    triage: LazyTriage | None  # None too when the assistant runs in its own process
    model: Any  # agents.llm.engine.LocalModel | None
    meds: MedicationService
    extensions: Extensions


def build_agents(gw: Gateway) -> AgentsSide:
    """Everything the agents side needs from the gateway is built before this is called
    (store, texts, link, monitor, bus, supervisor, retention)."""
    settings, household = gw.settings, gw.household
    # The journal is the durable record; the store's copy (for the API) is written on a
    # worker thread in order, so no SOS step waits for it.
    copier = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trajectory-copy")

    def copy_trajectory(run_id: str, **kw: Any) -> None:
        copier.submit(gw.store.save_trajectory, run_id, **kw)

    journal = SosJournal(gw.safety_db, save_trajectory=copy_trajectory)
    registry = build_sos_registry(
        SosToolDeps(
            publisher=gw.link,
            texts=gw.texts,
            household=household,
            location_lookup=gw.monitor.last_location,
            journal=journal,
            audit=gw.store.add_audit,
            clock=gw.clock,
        )
    )
    runner = SosRunner(registry, journal, household, gw.emit, gw.clock)
    ladder = SosLadder(
        gw.safety_db,
        registry,
        household,
        gw.clock,
        gw.emit,
        journal.assigned_ambulance,
        window_s=settings.sos_ack_window_s,
        deliveries=gw.texts.deliveries,
    )
    parts: list[Part] = [
        SosLadderPart(ladder, gw.bus, gw.supervisor),
        SosPlaybooksPart(runner, gw.bus, copier),
    ]
    convs: ConversationsPort | None = None
    follow_ups: FollowUps | None = None
    memory: LongTermMemory | None = None
    triage: LazyTriage | None = None
    model: Any = None
    if settings.assistant_enabled:
        assistant = _assistant(gw, registry)
        convs, memory, triage, model, follow_ups = (
            assistant.conversations,
            assistant.memory,
            assistant.triage,
            assistant.model,
            assistant.follow_ups,
        )
        parts.append(assistant.part)
    meds, reports = _medication(gw, model)
    if follow_ups is not None:
        follow_ups.use(meds.scheduler)  # its jobs live beside the reminders (healthgw.db)
    parts.append(MedicationPart(meds, reports, household, settings, gw.supervisor, follow_ups))
    # The chat port: prescription yes/no and follow-up answers first, then the conversations.
    chat = ChatRouter(convs, meds.confirmations, meds, follow_ups) if convs is not None else None
    register_agents(gw.retention, db=gw.db, safety_db=gw.safety_db, data_dir=gw.data_dir)
    extensions = Extensions(
        sos=runner,
        contacts=runner,  # unanswered "are you OK?" -> the emergency contacts
        ladder=ladder,
        chat=chat,
        meds=meds,
        reports=reports,
        memory=memory.export if memory is not None else None,
        tool_metrics=lambda: {k: v.as_dict() for k, v in registry.metrics().items()},
        # An SOS still open across a restart shows as "on" in Home Assistant at once.
        sos_open=lambda p: runner.open_sos(p) is not None,
        parts=parts,
    )
    return AgentsSide(runner, convs, memory, triage, model, meds, extensions)


@dataclass
class _Assistant:
    conversations: ConversationsPort
    memory: LongTermMemory
    triage: LazyTriage | None
    model: Any
    part: Part
    follow_ups: FollowUps


def _assistant(gw: Gateway, registry: ToolRegistry) -> _Assistant:
    """The appointment assistant: memory, triage, the local model, tools and conversations.
    Nothing here is on the SOS path: the model runs in its own low-priority process."""
    s = gw.settings
    vitals = partial(vitals_summary, gw.monitor)
    memory = LongTermMemory(gw.db, clock_now=gw.clock.now, vitals_summary=vitals)
    follow_ups = FollowUps(
        gw.db, gw.link, gw.clock, ZoneInfo(gw.household.timezone), key=s.gateway_id
    )
    model = None
    if s.assistant_model == "auto":
        from agents.llm.engine import LocalModel
        from agents.llm.model_path import model_to_load

        chosen = model_to_load(s.model_path, s.model_sha256)  # Settings: the one reader
        if chosen is not None:
            # The worker checks the hash again right before llama.cpp opens the file (each
            # restart too); the bundled file (no model_path) is checked against its own.
            model = LocalModel(
                chosen.path, n_threads=s.model_threads, nice=s.model_nice, sha256=chosen.sha256
            )
        else:
            log.warning("assistant: no local model found; using deterministic wording")
    roles = Roles(model, timeout_s=s.model_timeout_s)
    # The child keeps the system clock: a gateway built with another (tests, the clinical
    # runner) keeps its conversations in-process, on that clock.
    if s.assistant_process == "own" and isinstance(gw.clock, SystemClock):
        # The conversations in their own niced process (its own triage); the memory here
        # answers the API.
        proc = assistant_process(gw, follow_ups, model)
        return _Assistant(
            proc, memory, None, model, AssistantProcessPart(proc, model, roles, gw.supervisor),
            follow_ups,
        )  # fmt: skip
    # Default: the per-user cache that setup.sh fills, so a new data folder starts answering
    # at once instead of training for ~10 s on its first conversation.
    triage = LazyTriage(s.triage_cache_dir)
    register_appointment_tools(
        registry,
        AppointmentToolDeps(
            gw.household, memory, gw.clock, classify=triage.specialty,
            schedule_follow_up=follow_ups.schedule,
        ),
    )  # fmt: skip

    async def booked(out: ConversationResult) -> None:
        if out.booked:
            # No symptoms in the event: it goes to every family screen.
            await gw.emit(
                Event(
                    EventType.APPOINTMENT_BOOKED,
                    out.person,
                    gw.clock.now(),
                    {"specialization": out.specialization, "run_id": out.run_id},
                )
            )

    assistant = Assistant(
        registry,
        Policy(triage, watch_wearers=gw.household.watch_wearers()),
        gw.household,
        gw.clock,
        roles=roles,
        save_trajectory=gw.store.save_trajectory,
        on_done=booked,
    )
    convs = Conversations(
        assistant,
        gw.link,
        gw.clock,
        idle_timeout_s=s.assistant_idle_timeout_s,
        ready=triage.ensure,
        store=ConversationStore(gw.db),  # open conversations survive a restart
    )
    part = AssistantPart(convs, triage, model, roles, gw.supervisor)
    return _Assistant(convs, memory, triage, model, part, follow_ups)


def _medication(gw: Gateway, model: Any) -> tuple[MedicationService, DailyReports]:
    """Medication reminders: jobs in healthgw.db, reminders to the watch, answers on ack."""
    s = gw.settings
    narrator = None
    if model is not None:

        async def narrator(report: dict[str, Any]) -> str | None:
            gen = await model.generate(
                NARRATIVE_PROMPT,
                json.dumps(narrative_facts(report))[:1500],
                Narrative,
                max_tokens=120,
                timeout_s=30,
            )
            return str(gen.data.text) if gen.data else None

    on_dose_final = None
    if gw.tsdb is not None:
        tsdb = gw.tsdb

        def on_dose_final(d: DoseRecord) -> None:
            # Every dose that ended (taken, skipped, missed): adherence in the time series.
            tsdb.add_line(dose_line(d.person, d.medication, d.status, d.id, d.scheduled))

    meds = MedicationService(
        gw.db,
        gw.link,
        gw.texts,
        gw.household,
        gw.clock,
        gw.emit,
        missed_after_s=s.reminder_missed_after_s,
        snooze_s=s.reminder_snooze_s,
        grace_s=s.reminder_grace_s,
        key=s.gateway_id,
        model=model,
        on_dose_final=on_dose_final,
    )
    reports = DailyReports(
        gw.store,
        gw.household,
        gw.data_dir,
        gw.clock,
        doses=gw.db,
        emit=gw.emit,
        narrator=narrator,
        # Off the gateway's GIL: at the report time the SOS path must not wait behind it.
        process=(ReportProcess(), gw.db.path, open_readings),
        # The clinician summary: what the hub asked (safety.db) and an audit row per export.
        prompts=gw.safety_db,
        audit=gw.store.add_audit,
    )
    return meds, reports
