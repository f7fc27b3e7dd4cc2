"""The one place where gateway/ meets agents/: build the gateway with the agents side handed
in at construction (healthgw/assembly/agents.py), serve the API, run until a signal."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.assistant.chat_router import ConversationsPort
from agents.assistant.memory import LongTermMemory
from agents.medication.service import MedicationService
from agents.playbooks.sos import SosRunner
from agents.triage.lazy import LazyTriage
from gateway.base.clock import Clock
from gateway.base.errors import ConfigError
from gateway.base.settings import Settings
from gateway.export.files import register_retention as register_export_retention
from gateway.household.model import load_household
from gateway.runtime.extensions import Extensions
from gateway.runtime.gateway import Gateway
from gateway.runtime.sharding import from_settings as shard_from_settings
from healthgw.assembly.agents import AgentsSide, build_agents
from healthgw.schema import migrate_data_dir
from healthgw.sim_watches import SimulatedWatches

if TYPE_CHECKING:
    from fastapi import APIRouter

log = logging.getLogger(__name__)


@dataclass
class Assembly:
    gateway: Gateway
    runner: SosRunner
    # None when HEALTHGW_ASSISTANT_ENABLED is false; a proxy when HEALTHGW_ASSISTANT_PROCESS=own
    conversations: ConversationsPort | None
    memory: LongTermMemory | None
    triage: LazyTriage | None
    model: Any  # agents.llm.engine.LocalModel | None
    meds: MedicationService
    # The console's simulated watches; None unless HEALTHGW_SIMULATOR_ENABLED.
    simulator: SimulatedWatches | None = None


def assemble(settings: Settings, *, clock: Clock | None = None) -> Assembly:
    if settings.household is None:
        raise ConfigError("no household file: set HEALTHGW_HOUSEHOLD to its path")
    household = load_household(settings.household)
    # Scale-out: this instance keeps only its shard's persons (docs/scale-out.md).
    shard = shard_from_settings(settings)
    if shard is not None:
        total = len(household.persons)
        household = shard.apply(household)
        log.info("shard %s: %d of %d persons", shard.label, len(household.persons), total)
    migrate_data_dir(Path(settings.data_dir))  # before any part opens a file (SchemaTooNew)
    built: list[AgentsSide] = []
    sim = SimulatedWatches(settings, household) if settings.simulator_enabled else None

    def extend(gw: Gateway) -> Extensions:
        built.append(build_agents(gw))
        ext = built[0].extensions
        # Last part: the watches stop first, while the gateway still hears their goodbye.
        return replace(ext, parts=(*ext.parts, sim)) if sim is not None else ext

    gw = Gateway(settings, household, clock=clock, shard=shard, extend=extend)
    register_export_retention(gw.retention, Path(settings.data_dir))  # exported FHIR files
    a = built[0]
    return Assembly(gw, a.runner, a.conversations, a.memory, a.triage, a.model, a.meds, sim)


def api_routers(asm: Assembly) -> list[APIRouter]:
    """The routes the composition root adds to the API: the simulator's, when it is on."""
    if asm.simulator is None:
        return []
    from healthgw.sim_routes import simulator_router

    return [simulator_router(asm.simulator)]


async def serve_api(gw: Gateway, routers: Sequence[APIRouter] = ()) -> None:
    """Run the REST API inside the gateway's event loop until cancelled."""
    import uvicorn

    from gateway.api.server import create_app

    s = gw.settings
    app = create_app(
        gw.api,
        admin_token=gw.api_token,
        family_tokens=[t.get_secret_value() for t in s.family_tokens],
        viewer_tokens=[t.get_secret_value() for t in s.viewer_tokens],
        max_body_bytes=s.api_max_body_bytes,
        rate_limit=s.api_rate_limit,
        twilio_auth_token=s.twilio_auth_token.get_secret_value() if s.twilio_auth_token else None,
        public_url=str(s.public_url) if s.public_url else None,
        safety_db=gw.safety_db,  # inbound MessageSids acted on: replays refused after restarts
        extra_routers=routers,
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
    routers = api_routers(asm)
    gw.supervisor.task("api", lambda: serve_api(gw, routers), critical=False, backoff=(1, 5, 30))
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
