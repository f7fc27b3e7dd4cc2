"""The agents side's parts, as the gateway runs them (gateway/runtime/extensions.py): each subscribes
itself to the event bus and registers its own supervision when it is built, and has
start()/stop(). The gateway starts them, in this file's order of use in agents_side.py,
after storage, texts, the bus and the monitor and before MQTT input flows; it stops them in
reverse, before the broker link says goodbye."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from apscheduler.triggers.cron import CronTrigger

from agents.assistant.conversations import Conversations
from agents.assistant.model_roles import Roles
from agents.assistant.process.proxy import AssistantProcess
from agents.medication.service import MedicationService
from agents.playbooks.ladder import SosLadder
from agents.playbooks.sos import SosRunner
from agents.reports.daily import DailyReports, register, scheduled_report, unregister
from agents.scheduling.follow_ups import FollowUps
from agents.triage.lazy import LazyTriage
from gateway.base.bus import EventBus
from gateway.base.settings import Settings
from gateway.base.supervise import Supervisor
from gateway.contract.events import AlertPayload
from gateway.contract.topics import EventType
from gateway.contract.values import Event
from gateway.household.model import Household

log = logging.getLogger("healthgw.assembly.hub")


class SosLadderPart:
    """Texts the next contact, then the ambulance, until someone acknowledges a hard SOS."""

    name = "sos_ladder"

    def __init__(self, ladder: SosLadder, bus: EventBus, supervisor: Supervisor) -> None:
        self.ladder = ladder
        bus.subscribe("sos-ladder", ladder.on_event, types={EventType.HARD_SOS, EventType.SOS_END})
        # Critical: it texts the next contact / the ambulance; 3 failed ticks in a row: down.
        supervisor.watch("sos_ladder", ladder.alive, ladder.start, critical=True)

    async def start(self) -> None:
        await self.ladder.start()

    async def stop(self) -> None:
        await self.ladder.stop()


class SosPlaybooksPart:
    """The hard and soft SOS playbooks. Unfinished runs resume after the text dispatcher is
    up and before MQTT input flows; on stop the runs drain, then their trajectory copies
    (written to the store on a worker thread, so no SOS step waits for it) finish."""

    name = "sos_playbooks"

    def __init__(self, runner: SosRunner, bus: EventBus, copier: ThreadPoolExecutor) -> None:
        self.runner = runner
        self._copier = copier
        bus.subscribe(
            "soft-sos-playbook", self.soft_sos, types={EventType.SOFT_SOS, EventType.ALERT_UPDATED}
        )

    async def start(self) -> None:
        await self.runner.resume()

    async def stop(self) -> None:
        await self.runner.drain()
        await asyncio.to_thread(self._copier.shutdown, wait=True)

    async def soft_sos(self, event: Event) -> None:
        # The monitor decided; the playbook only tells the person (deterministic template).
        alert = AlertPayload.from_data(event.data)
        if not alert.notify or alert.retrospective:
            return
        response = alert.response
        level = response.level if response is not None else alert.severity
        extra = {"news2": alert.news2, "meows": alert.meows, "why": alert.why}
        await self.runner.soft(
            event.person,
            alert.abnormal,
            alert.advice or "",
            severity="high" if alert.high else level,
            alert_id=alert.alert_id,
            response=response.to_dict() if response is not None else {"tell_wearer": True},
            extra={k: v for k, v in extra.items() if v is not None},
        )


class AssistantPart:
    """The appointment assistant's conversations. Those open at the last stop or crash are
    resumed at start, before input flows (a user's next message finds its session). The
    triage model and the local LLM load in the background while input already flows:
    nothing here is on the SOS path."""

    name = "assistant"

    def __init__(
        self,
        conversations: Conversations,
        triage: LazyTriage,
        model: Any,  # agents.llm.engine.LocalModel | None
        roles: Roles,
        supervisor: Supervisor,
    ) -> None:
        self.conversations = conversations
        self._triage = triage
        self._model = model
        self._roles = roles
        self._supervisor = supervisor
        self._background: list[asyncio.Task[Any]] = []

    async def start(self) -> None:
        resumed = await self.conversations.resume()
        if resumed:
            log.info("assistant: %d open conversation(s) resumed", len(resumed))
        self._background.append(asyncio.create_task(self._triage.prepare(), name="triage-prepare"))
        _start_model(self._model, self._roles, self._supervisor, self._background)

    async def stop(self) -> None:
        await self.conversations.stop()
        await _stop_background(self._background)
        if self._model is not None:
            await self._model.stop()


class AssistantProcessPart:
    """The appointment assistant's conversations in their own process
    (HEALTHGW_ASSISTANT_PROCESS=own, healthgw/assistant_child.py): the child resumes the open
    conversations itself before it says it is ready. The local model stays in the gateway
    process (shared with the medication side) and loads in the background."""

    name = "assistant"

    def __init__(
        self, proc: AssistantProcess, model: Any, roles: Roles, supervisor: Supervisor
    ) -> None:
        self.conversations = proc
        self._model = model
        self._roles = roles
        self._supervisor = supervisor
        self._background: list[asyncio.Task[Any]] = []

    async def start(self) -> None:
        await self.conversations.start()
        _start_model(self._model, self._roles, self._supervisor, self._background)

    async def stop(self) -> None:
        await self.conversations.stop()
        await _stop_background(self._background)
        if self._model is not None:
            await self._model.stop()


def _start_model(
    model: Any, roles: Roles, supervisor: Supervisor, background: list[asyncio.Task[Any]]
) -> None:
    if model is None:
        return

    async def start_model() -> None:
        await model.start()
        await roles.warm_up()

    background.append(asyncio.create_task(start_model(), name="model-start"))
    # Its process restarts itself a few times; once "failed", retried slowly here.
    supervisor.watch(
        "model",
        lambda: model.stats()["state"] != "failed",
        model.start,
        critical=False,
        backoff=(60, 300, 900, 3600),
    )


async def _stop_background(tasks: list[asyncio.Task[Any]]) -> None:
    for t in tasks:
        t.cancel()
    for t in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await t


class MedicationPart:
    """Medication reminders, the daily reports and the assistant's follow-ups: their jobs live
    in healthgw.db and are scheduled once the scheduler runs."""

    name = "medication"

    def __init__(
        self,
        meds: MedicationService,
        reports: DailyReports,
        household: Household,
        settings: Settings,
        supervisor: Supervisor,
        follow_ups: FollowUps | None = None,
    ) -> None:
        self.meds = meds
        self.follow_ups = follow_ups
        self.reports = reports
        self._household = household
        self._settings = settings
        self._supervisor = supervisor

    async def start(self) -> None:
        meds, sup, s = self.meds, self._supervisor, self._settings
        await meds.start()
        sched = meds.scheduler
        sup.watch("scheduler", lambda: bool(sched.running), sched.start, critical=False)
        sup.watch("reminders", meds.alive, meds.revive, critical=False)  # missed doses
        register(meds.key, self.reports)
        ids = {p.id for p in self._household.persons}
        for job in sched.get_jobs():  # persons removed or moved to another shard
            kind, _, person = job.id.partition(":")  # report:{person}; reminders have two ':'
            if kind == "report" and ":" not in person and person not in ids:
                job.remove()
        hour, minute = (int(x) for x in s.report_time.split(":"))
        for p in self._household.persons:
            sched.add_job(
                scheduled_report,
                CronTrigger(hour=hour, minute=minute, timezone=meds.tz),
                args=[meds.key, p.id],
                id=f"report:{p.id}",
                replace_existing=True,
                misfire_grace_time=int(s.reminder_grace_s),
                coalesce=True,
            )
        if self.follow_ups is not None:
            self.follow_ups.start()  # and any stored follow-up without a job gets one

    async def stop(self) -> None:
        if self.follow_ups is not None:
            self.follow_ups.stop()
        unregister(self.meds.key)
        self.reports.close()  # a report being built is abandoned: made again on demand
        await self.meds.stop()
