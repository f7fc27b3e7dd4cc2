"""Simulated watches the console drives (HEALTHGW_SIMULATOR_ENABLED): one real MQTT client
per person on the gateway's own broker (simulators/watch.py: its own connection and last
will), publishing the body model's readings at the person's device interval. At most one per
person; all of them stop with the gateway (this is one of its parts)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from gateway.base.errors import HealthGWError
from gateway.base.settings import Settings
from gateway.contract.topics import NotifyPayload
from gateway.household.model import Household
from simulators.scenarios import SCENARIOS, check_scenario
from simulators.vitals import VitalsModel, model_for_person
from simulators.watch import Watch

log = logging.getLogger(__name__)

MIN_INTERVAL_S = 1.0  # a household interval below this would flood the broker from a demo


class SimulatorRefused(HealthGWError):
    """The simulator cannot do this now; the message says why (it is shown to the admin)."""

    def __init__(self, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class _Running:
    watch: Watch
    task: asyncio.Task[None]
    interval_s: float


class SimulatedWatches:
    """The console's simulated watches: a part with start/stop (gateway/runtime/extensions.py)."""

    name = "simulator"

    def __init__(self, settings: Settings, household: Household) -> None:
        self._settings = settings
        self._household = household
        self._running: dict[str, _Running] = {}
        self._lock = asyncio.Lock()  # one start or stop at a time: never two watches a person

    async def start(self) -> None:
        """Nothing runs until the admin starts a scenario."""

    async def stop(self) -> None:
        for person in list(self._running):
            await self.stop_person(person)

    # --- what the console asks --------------------------------------------------------------

    def status(self) -> dict[str, object]:
        running = {
            person: {
                "device": r.watch.device,
                "scenario": r.watch.model.scenario,
                "readings": r.watch.published,
                "interval_s": r.interval_s,
                "connected": r.watch.connected,
                "battery_flat": not r.watch.model.alive,
                "prompt": self._prompt(r.watch) is not None,
            }
            for person, r in self._running.items()
        }
        return {"scenarios": list(SCENARIOS), "running": running}

    async def start_person(self, person: str, scenario: str) -> None:
        """Start `person`'s watch in `scenario`, or switch a running one to it."""
        check_scenario(scenario)
        p = self._household.by_id.get(person)
        if p is None:
            raise SimulatorRefused("no such person", 404)
        if not p.devices:
            raise SimulatorRefused("this person has no device to simulate")
        running = self._running.get(person)
        if running is not None and running.task.done():
            await self.stop_person(person)  # its battery went flat: a fresh watch replaces it
        async with self._lock:
            running = self._running.get(person)
            if running is not None:
                running.watch.model.set_scenario(scenario, time.time())
                return
            device = p.devices[0]
            interval = max(MIN_INTERVAL_S, device.interval_s)
            model = model_for_person(
                p,
                seed=f"console-{time.time()}",
                scenario=scenario,
                start_ts=time.time(),
                interval_s=interval,
                timezone=self._household.timezone,
            )
            watch = self._watch(person, device.id, model)
            try:
                await asyncio.to_thread(watch.connect)
            except (ConnectionError, OSError) as exc:
                log.warning("simulated watch could not connect: %s", type(exc).__name__)
                raise SimulatorRefused(
                    "the simulated watch could not connect to the broker", 502
                ) from None
            task = asyncio.create_task(self._play(watch, interval), name=f"sim-{person}")
            self._running[person] = _Running(watch, task, interval)

    async def stop_person(self, person: str) -> bool:
        if person not in self._household.by_id:
            raise SimulatorRefused("no such person", 404)
        async with self._lock:
            running = self._running.pop(person, None)
        if running is None:
            return False
        running.task.cancel()
        try:
            await running.task
        except asyncio.CancelledError:
            pass
        except Exception:
            # Stopping must still say goodbye; why it died is for the log (no PHI in it).
            log.exception("simulated watch stopped with an error")
        # A clean goodbye: the watch says `offline` itself, as one switched off would.
        await asyncio.to_thread(running.watch.disconnect, True)
        return True

    async def sos(self, person: str, action: str) -> None:
        watch = self._watch_of(person)
        send = watch.press_sos if action == "start" else watch.end_sos
        await asyncio.to_thread(send)

    async def answer(self, person: str, ok: bool) -> str | None:
        """The wearer answers the newest "are you OK?" the watch showed; without one (the
        prompt came before the watch started) the ack answers whatever is open."""
        watch = self._watch_of(person)
        prompt = self._prompt(watch)
        prompt_id = prompt.prompt_id if prompt is not None else None
        await asyncio.to_thread(watch.ack, ok, prompt_id)
        return prompt_id

    # --- internals ---------------------------------------------------------------------------

    def _watch(self, person: str, device: str, model: VitalsModel) -> Watch:
        s = self._settings
        username = s.sim_mqtt_username
        password = s.sim_mqtt_password.get_secret_value() if s.sim_mqtt_password else None
        if s.mqtt_username is not None and username is None:
            # A broker with accounts gives each device its own (docs/security.md); the
            # gateway's account is not a watch's and must not be lent to one.
            raise SimulatorRefused(
                "this broker has accounts: the simulated watches need theirs"
                " (HEALTHGW_SIM_MQTT_USERNAME and HEALTHGW_SIM_MQTT_PASSWORD, made by"
                " `healthgw devices init` with HEALTHGW_SIMULATOR_PERSONS)"
            )
        return Watch(
            person,
            device,
            model,
            s.mqtt_host,
            s.mqtt_port,
            username=username,
            password=password,
            tls=s.mqtt_tls,
            # Its own session: the demo's fleet may run the same device under watch-<...>.
            client_id=f"console-sim-{s.gateway_id}-{person}"[:64],
        )

    def _watch_of(self, person: str) -> Watch:
        if person not in self._household.by_id:
            raise SimulatorRefused("no such person", 404)
        running = self._running.get(person)
        if running is None:
            raise SimulatorRefused("start a scenario for this person first")
        return running.watch

    @staticmethod
    def _prompt(watch: Watch) -> NotifyPayload | None:
        return next((n for n in reversed(watch.notifications) if n.kind == "prompt"), None)

    @staticmethod
    async def _play(watch: Watch, interval: float) -> None:
        while True:
            try:
                reading = await asyncio.to_thread(watch.publish_reading)
            except ConnectionError:
                reading = {}  # reconnecting (paho retries): the next tick tries again
            if reading is None:
                return  # battery_dying: flat, off the network (its will says offline)
            await asyncio.sleep(interval)
