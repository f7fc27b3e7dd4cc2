"""The one place where gateway/ meets agents/: build the gateway, attach the SOS playbooks,
serve the API, run until a signal."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import signal
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apscheduler.triggers.cron import CronTrigger

from agents.assistant import Assistant, ConversationResult
from agents.conversation import Conversations
from agents.llm_roles import Roles
from agents.manager.daily import (
    NARRATIVE_PROMPT,
    DailyReports,
    narrative_facts,
    register,
    scheduled_report,
    unregister,
)
from agents.manager.service import MedicationService
from agents.memory import LongTermMemory
from agents.playbooks.journal import SosJournal
from agents.playbooks.ladder import SosLadder
from agents.playbooks.sos import SosRunner
from agents.policy import Policy
from agents.retention import register_agents
from agents.tools.appointment_tools import AppointmentToolDeps, register_appointment_tools
from agents.tools.sos_tools import SosToolDeps, build_sos_registry
from agents.triage.lazy import LazyTriage
from gateway.clock import Clock
from gateway.contract import EventType
from gateway.core import Gateway
from gateway.errors import ConfigError
from gateway.household import load_household
from gateway.model import Event
from gateway.settings import Settings
from gateway.sharding import from_settings as shard_from_settings
from gateway.tsdb.lines import dose_line
from healthgw.schema import migrate_data_dir

log = logging.getLogger(__name__)


@dataclass
class Assembly:
    gateway: Gateway
    runner: SosRunner
    conversations: Conversations | None  # None when HEALTHGW_ASSISTANT_ENABLED is false
    memory: LongTermMemory | None
    triage: LazyTriage | None
    model: Any  # agents.llm.engine.LocalModel | None
    meds: MedicationService


def assemble(settings: Settings, *, clock: Clock | None = None) -> Assembly:
    if settings.household is None:
        raise ConfigError("no household file: set HEALTHGW_HOUSEHOLD to its path")
    household = load_household(settings.household)
    # Scale-out: this instance keeps only its shard's persons (docs/scale-out.md).
    shard = shard_from_settings(settings)
    others: frozenset[str] = frozenset()
    if shard is not None:
        total = len(household.persons)
        household = shard.apply(household)
        others = shard.others
        log.info("shard %s: %d of %d persons", shard.label, len(household.persons), total)
    migrate_data_dir(Path(settings.data_dir))  # before any part opens a file (SchemaTooNew)
    gw = Gateway(settings, household, clock=clock, shard=shard)
    # Their retained state is another instance's now: never cleared from here.
    gw.ha_discovery.foreign_persons = others
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
    gw.attach_sos(runner)
    gw.attach_contacts(runner)  # unanswered "are you OK?" -> the emergency contacts
    # An SOS still open across a restart shows as "on" in Home Assistant at once.
    gw.person_state.sos_open = lambda p: runner.open_sos(p) is not None
    gw.tool_metrics = lambda: {k: v.as_dict() for k, v in registry.metrics().items()}
    ladder = SosLadder(
        gw.safety_db, registry, household, gw.clock, gw.emit, journal.assigned_ambulance,
        window_s=settings.sos_ack_window_s, deliveries=gw.texts.deliveries,
    )  # fmt: skip
    gw.attach_ladder(ladder)
    gw.bus.subscribe("sos-ladder", ladder.on_event, types={EventType.HARD_SOS, EventType.SOS_END})
    gw.before_input(ladder.start)
    # Critical: it texts the next contact / the ambulance; 3 failed ticks in a row show it down.
    gw.supervisor.watch("sos_ladder", ladder.alive, ladder.start, critical=True)
    gw.on_stop(ladder.stop)
    convs: Conversations | None = None
    memory: LongTermMemory | None = None
    triage: LazyTriage | None = None
    model: Any = None
    if settings.assistant_enabled:
        convs, memory, triage, model = _assistant(gw, registry)
    meds = _medication(gw, model)

    async def soft_sos_playbook(event: Event) -> None:
        # The monitor decided; the playbook only tells the person (deterministic template).
        if not event.data.get("notify"):
            return
        d = event.data
        if d.get("retrospective"):
            return
        response = d.get("response") or {"tell_wearer": True}
        await runner.soft(
            event.person,
            d.get("abnormal") or {},
            str(d.get("advice", "")),
            severity="high" if d.get("high") else str(response.get("level", d.get("severity"))),
            alert_id=str(d.get("alert_id")),
            response=response,
            extra={k: d[k] for k in ("news2", "meows", "why") if d.get(k) is not None},
        )

    gw.bus.subscribe(
        "soft-sos-playbook", soft_sos_playbook, types={EventType.SOFT_SOS, EventType.ALERT_UPDATED}
    )
    # Unfinished SOS runs resume after the text dispatcher is up and before MQTT input flows.
    gw.before_input(runner.resume)

    async def finish_copies() -> None:
        await asyncio.to_thread(copier.shutdown, wait=True)

    register_agents(gw.retention, db=gw.db, safety_db=gw.safety_db, data_dir=gw.data_dir)
    # Stop hooks run in reverse: drain the runs first, then finish their copies.
    gw.on_stop(finish_copies)
    gw.on_stop(runner.drain)
    return Assembly(gw, runner, convs, memory, triage, model, meds)


def _assistant(gw: Gateway, registry: Any) -> tuple[Conversations, LongTermMemory, LazyTriage, Any]:
    """The appointment assistant: memory, triage, the local model, tools and conversations.
    Nothing here is on the SOS path: the model runs in its own low-priority process, and the
    triage model and the LLM load in the background while input already flows."""
    s = gw.settings
    memory = LongTermMemory(gw.db, clock_now=gw.clock.now, vitals_summary=gw.vitals_summary)
    # Default: the per-user cache that setup.sh fills, so a new data folder starts answering
    # at once instead of training for ~10 s on its first conversation.
    triage = LazyTriage(s.triage_cache_dir)
    register_appointment_tools(
        registry,
        AppointmentToolDeps(gw.household, memory, gw.clock, classify=triage.specialty),
    )
    model = None
    if s.assistant_model == "auto":
        from agents.llm.engine import LocalModel
        from agents.llm.model_path import resolve_model_path

        path = resolve_model_path(s.model_path, s.model_sha256)
        if path is not None:
            # The worker checks the hash again right before llama.cpp opens the file (each
            # restart too); the bundled file (no model_path) is checked against its own.
            sha = s.model_sha256 if s.model_path is not None else None
            model = LocalModel(path, n_threads=s.model_threads, nice=s.model_nice, sha256=sha)
        else:
            log.warning("assistant: no local model found; using deterministic wording")
    roles = Roles(model, timeout_s=s.model_timeout_s)

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
        Policy(triage),
        gw.household,
        gw.clock,
        roles=roles,
        save_trajectory=gw.store.save_trajectory,
        on_done=booked,
    )
    convs = Conversations(
        assistant, gw.link, gw.clock, idle_timeout_s=s.assistant_idle_timeout_s,
        ready=triage.ensure,
    )  # fmt: skip
    gw.attach_chat(convs)
    gw.attach_memory(memory.export)
    background: list[asyncio.Task[Any]] = []

    async def warm_up() -> None:
        background.append(asyncio.create_task(triage.prepare(), name="triage-prepare"))
        if model is not None:

            async def start_model() -> None:
                await model.start()
                await roles.warm_up()

            background.append(asyncio.create_task(start_model(), name="model-start"))
            # Its process restarts itself a few times; once "failed", retried slowly here.
            gw.supervisor.watch("model", lambda: model.stats()["state"] != "failed", model.start,
                                critical=False, backoff=(60, 300, 900, 3600))  # fmt: skip

    async def stop() -> None:
        await convs.stop()
        for t in background:
            t.cancel()
        for t in background:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        if model is not None:
            await model.stop()

    gw.before_input(warm_up)
    gw.on_stop(stop)
    return convs, memory, triage, model


async def serve_api(gw: Gateway) -> None:
    """Run the REST API inside the gateway's event loop until cancelled."""
    import uvicorn

    from gateway.api.server import create_app

    s = gw.settings
    app = create_app(
        gw,
        admin_token=gw.api_token,
        family_tokens=[t.get_secret_value() for t in s.family_tokens],
        viewer_tokens=[t.get_secret_value() for t in s.viewer_tokens],
        max_body_bytes=s.api_max_body_bytes,
        rate_limit=s.api_rate_limit,
        twilio_auth_token=s.twilio_auth_token.get_secret_value() if s.twilio_auth_token else None,
        public_url=str(s.public_url) if s.public_url else None,
        safety_db=gw.safety_db,  # inbound MessageSids acted on: replays refused after restarts
    )

    class _Server(uvicorn.Server):
        # The gateway owns SIGINT/SIGTERM: it stops the API itself, in order.
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    server = _Server(
        uvicorn.Config(
            app,
            host=s.api_host,
            port=s.api_port,
            log_level="warning",
            lifespan="off",
            ws_max_size=s.api_max_body_bytes,  # a WebSocket frame is bounded like a body
        )
    )
    try:
        await server.serve()
    except SystemExit as exc:
        # uvicorn exits the process when it cannot bind; here that is a crash to restart.
        raise RuntimeError("the API server could not start") from exc
    finally:
        server.should_exit = True


def tune_interpreter() -> None:
    """Before assembling: CPU work on worker threads (triage, similarity, JSON) must hand
    the GIL back to the event loop quickly: 1 ms instead of CPython's 5 ms keeps an SOS press
    from queueing behind a conversation."""
    sys.setswitchinterval(0.001)


def freeze_startup_heap() -> None:
    """After start: what start-up built (household, models, forests, imports) lives as long
    as the process, yet every full collection walked it, pausing the event loop 25-60 ms
    during an ingest drain (gc callbacks, bench/ingest.py). Frozen, those pauses were 5-7 ms;
    everything made later is still collected as before."""
    gc.collect()
    gc.freeze()


async def run_gateway(settings: Settings, *, stop: asyncio.Event | None = None) -> None:
    tune_interpreter()
    asm = assemble(settings)
    gw = asm.gateway
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    await gw.start()
    freeze_startup_heap()
    # Not safety-critical (texts and MQTT work without it); restarted if it dies.
    gw.supervisor.task("api", lambda: serve_api(gw), critical=False, backoff=(1, 5, 30))
    log.info(
        "healthgw running: gateway %s, %d persons, API on %s:%d",
        settings.gateway_id,
        len(gw.household.persons),
        settings.api_host,
        settings.api_port,
    )
    try:
        await stop.wait()
    finally:
        await gw.stop()  # its supervisor stops the API first


def _medication(gw: Gateway, model: Any) -> MedicationService:
    """Medication reminders: jobs in healthgw.db, reminders to the watch, answers on ack."""
    s = gw.settings
    narrator = None
    if model is not None:

        async def narrator(report: dict[str, Any]) -> str | None:
            gen = await model.generate(
                NARRATIVE_PROMPT,
                json.dumps(narrative_facts(report))[:1500],
                {"type": "object", "properties": {"text": {"type": "string", "maxLength": 400}},
                 "required": ["text"], "additionalProperties": False},
                max_tokens=120,
                timeout_s=30,
            )  # fmt: skip
            return str(gen.data["text"]) if gen.data else None

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
    )
    gw.attach_meds(meds)
    if gw.tsdb is not None:
        tsdb = gw.tsdb
        meds.ledger.on_final = lambda d: tsdb.add_line(
            dose_line(d.person, d.medication, d.status, d.id, d.scheduled)
        )
    reports = DailyReports(gw.store, gw.household, gw.data_dir, gw.clock, doses=gw.db,
                           emit=gw.emit, narrator=narrator)  # fmt: skip
    gw.attach_reports(reports)
    hour, minute = (int(x) for x in s.report_time.split(":"))

    async def start() -> None:
        await meds.start()
        sched = meds.scheduler
        gw.supervisor.watch("scheduler", lambda: bool(sched.running), sched.start, critical=False)
        gw.supervisor.watch("reminders", meds.alive, meds.revive, critical=False)  # missed doses
        register(meds.key, reports)
        ids = {p.id for p in gw.household.persons}
        for job in meds.scheduler.get_jobs():  # persons removed or moved to another shard
            kind, _, person = job.id.partition(":")  # report:{person}; reminders have two ':'
            if kind == "report" and ":" not in person and person not in ids:
                job.remove()
        for p in gw.household.persons:
            meds.scheduler.add_job(
                scheduled_report,
                CronTrigger(hour=hour, minute=minute, timezone=meds.tz),
                args=[meds.key, p.id],
                id=f"report:{p.id}",
                replace_existing=True,
                misfire_grace_time=int(s.reminder_grace_s),
                coalesce=True,
            )

    async def stop() -> None:
        unregister(meds.key)
        await meds.stop()

    gw.before_input(start)
    gw.on_stop(stop)
    return meds
