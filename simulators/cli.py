"""`healthgw simulate`: watches for a household (one MQTT connection each, with last wills) or a
generated fleet of thousands (a small connection pool). Ctrl-C stops cleanly."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from gateway.base.errors import ConfigError, HealthGWError
from gateway.contract.topics import parse_ts
from gateway.household.model import Household, load_household
from simulators.fleet import GENERATED_MARK, Fleet, SimDevice, devices_from_household
from simulators.fleet import make_household as _make_household
from simulators.scenarios import SCENARIOS
from simulators.story import ACTIONS, StoryStep, Timeline, story
from simulators.watch import Watch


class UsageError(HealthGWError):
    pass


def add_arguments(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    a(
        "--mqtt-url",
        default=os.environ.get("HEALTHGW_MQTT_URL", "mqtt://127.0.0.1:1883"),
        help="broker, mqtt:// or mqtts:// (default $HEALTHGW_MQTT_URL or mqtt://127.0.0.1:1883);"
        " user and password come from the URL or $HEALTHGW_MQTT_USERNAME/$HEALTHGW_MQTT_PASSWORD",
    )
    a(
        "--household",
        type=Path,
        default=os.environ.get("HEALTHGW_HOUSEHOLD") or None,
        help="simulate this household's devices (default $HEALTHGW_HOUSEHOLD)",
    )
    a("--persons", type=int, metavar="N", help="generate a household of N persons instead")
    a(
        "--household-out",
        type=Path,
        default=Path("fleet-household.yaml"),
        help="where --persons writes the generated household (point the gateway at it)",
    )
    a(
        "--fleet",
        action="store_true",
        help="fleet mode: a pool of connections, no per-device last wills (for thousands)",
    )
    a("--per-connection", type=int, default=250, metavar="N", help="fleet devices per connection")
    a(
        "--scenario",
        action="append",
        default=[],
        metavar="NAME|PERSON=NAME",
        help=f"scenario for everyone, or per person (repeatable): {', '.join(SCENARIOS)}",
    )
    a("--interval", type=float, metavar="S", help="seconds between readings (default: household)")
    a("--rate", type=float, metavar="R", help="fleet: total readings per second")
    a("--duration", type=float, metavar="S", help="wall seconds to run (default: until Ctrl-C)")
    a("--seed", type=int, default=0)
    a(
        "--speed",
        type=float,
        default=1.0,
        help="simulated time runs this many times faster than wall time (ts run ahead of now)",
    )
    a("--start", metavar="RFC3339", help="simulated start time (default: now)")
    a(
        "--story",
        action="store_true",
        help="demo timeline for the SOS person: normal → hypoxia → SOS → SOS end → recovery",
    )
    a("--sos-at", type=float, metavar="S", help="press SOS S simulated seconds after start")
    a("--sos-end-at", type=float, metavar="S", help="end the SOS S simulated seconds after start")
    a("--sos-person", metavar="ID", help="who presses SOS / plays the story (default: first)")
    a(
        "--answer-prompts",
        choices=("ok", "not-ok"),
        help="per-device mode: answer every 'are you OK?' prompt like this",
    )
    a("--print", action="store_true", dest="echo", help="echo every message published")


def run_simulate(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except (UsageError, ConfigError, ValueError) as exc:
        print(f"healthgw simulate: {exc}", file=sys.stderr)
        return 2
    except ConnectionError as exc:
        print(f"healthgw simulate: cannot reach the broker: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # unknown host, unwritable --household-out, ...
        print(f"healthgw simulate: {exc}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="healthgw simulate", description=__doc__)
    add_arguments(parser)
    return run_simulate(parser.parse_args(argv))


# --- setup -----------------------------------------------------------------------------------


def _broker(url: str) -> tuple[str, int, bool, str | None, str | None]:
    u = urlparse(url)
    if u.scheme not in ("mqtt", "mqtts"):
        raise UsageError(f"--mqtt-url must be mqtt:// or mqtts://, not {url!r}")
    tls = u.scheme == "mqtts"
    user = u.username or os.environ.get("HEALTHGW_MQTT_USERNAME")
    password = u.password or os.environ.get("HEALTHGW_MQTT_PASSWORD")
    return u.hostname or "127.0.0.1", u.port or (8883 if tls else 1883), tls, user, password


def _household(args: argparse.Namespace) -> Household:
    if args.persons is not None:
        if args.persons < 1:
            raise UsageError("--persons must be at least 1")
        out: Path = args.household_out
        if out.exists() and not out.read_text(encoding="utf-8").startswith(GENERATED_MARK):
            raise UsageError(f"{out} exists and was not generated by simulate; not overwriting")
        household = _make_household(
            args.persons, out, seed=args.seed, interval_s=args.interval or 5.0
        )
        print(
            f"wrote {out} ({args.persons} persons): run the gateway with HEALTHGW_HOUSEHOLD={out}"
        )
        return household
    if args.household is None:
        raise UsageError("give --household (or set HEALTHGW_HOUSEHOLD), or --persons N")
    return load_household(args.household)


def _scenarios(specs: list[str], household: Household) -> tuple[str, dict[str, str]]:
    default, per_person = "normal", {}
    for spec in specs:
        person, _, name = spec.rpartition("=")
        if name not in SCENARIOS:
            raise UsageError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
        if not person:
            default = name
        elif household.person(person) is None:
            raise UsageError(f"--scenario: no person {person!r} in the household")
        else:
            per_person[person] = name
    return default, per_person


def _timeline(args: argparse.Namespace) -> Timeline:
    steps: list[StoryStep] = []
    if args.story:
        sos_at = args.sos_at if args.sos_at is not None else 300.0
        end_at = args.sos_end_at if args.sos_end_at is not None else sos_at + 180.0
        steps = story(hypoxia_at=min(120.0, sos_at), sos_at=sos_at, sos_end_at=end_at)
    else:
        if args.sos_at is not None:
            steps.append((args.sos_at, "sos"))
        if args.sos_end_at is not None:
            steps.append((args.sos_end_at, "sos_end"))
    return Timeline(steps)


@contextmanager
def _sigterm_stops(stop: threading.Event) -> Iterator[None]:
    """SIGTERM ends the run like Ctrl-C does (only the main thread may set handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# --- running ---------------------------------------------------------------------------------


def _run(args: argparse.Namespace) -> int:
    if args.speed <= 0 or (args.interval is not None and args.interval <= 0):
        raise UsageError("--speed and --interval must be positive")
    host, port, tls, user, password = _broker(args.mqtt_url)
    household = _household(args)
    default, per_person = _scenarios(args.scenario, household)
    start_ts = parse_ts(args.start) if args.start else time.time()
    devices = devices_from_household(
        household,
        start_ts=start_ts,
        seed=args.seed,
        scenarios=per_person,
        default_scenario=default,
        interval_s=args.interval,
    )
    if not devices:
        raise UsageError("the household has no devices to simulate")
    sos_person = args.sos_person or devices[0].person
    if all(d.person != sos_person for d in devices):
        raise UsageError(f"--sos-person: {sos_person!r} has no device")
    echo = _echo if args.echo else None
    conn: dict[str, Any] = dict(username=user, password=password, tls=tls)
    stop = threading.Event()
    with _sigterm_stops(stop):
        if args.fleet:
            return _run_fleet(args, devices, host, port, conn, start_ts, sos_person, stop, echo)
        return _run_watches(args, devices, host, port, conn, start_ts, sos_person, stop, echo)


def _echo(topic: str, text: str) -> None:
    print(f"{topic} {text}", flush=True)


class _SimClock:
    """Simulated time: `start_ts` plus wall time since start(), times `speed`."""

    def __init__(self, start_ts: float, speed: float) -> None:
        self.start_ts, self.speed = start_ts, speed
        self.start()

    def start(self) -> None:
        self.t0 = time.monotonic()

    def wall(self) -> float:
        return time.monotonic() - self.t0

    def now(self) -> float:
        return self.start_ts + self.wall() * self.speed


def _run_fleet(
    args: argparse.Namespace,
    devices: list[SimDevice],
    host: str,
    port: int,
    conn: dict[str, Any],
    start_ts: float,
    sos_person: str,
    stop: threading.Event,
    echo: Callable[[str, str], None] | None,
) -> int:
    fleet = Fleet(
        devices,
        host,
        port,
        rate=args.rate,
        per_connection=args.per_connection,
        speed=args.speed,
        start_ts=start_ts,
        echo=echo,
        **conn,
    )
    target = next(d for d in devices if d.person == sos_person)

    def act(name: str) -> Callable[[], None]:
        if name == "sos":
            return lambda: fleet.press_sos(sos_person)
        if name == "sos_end":
            return lambda: fleet.end_sos(sos_person)
        return lambda: target.model.set_scenario(name, fleet.sim_time())

    actions = [(at, act(name)) for at, name in _timeline(args).steps]
    try:
        fleet.connect()
        fleet.run(args.duration, stop=stop, actions=actions)
    except KeyboardInterrupt:
        pass
    finally:
        fleet.disconnect()
    s = fleet.stats
    print(
        f"simulate (fleet): {s.summary()}; broker acked {s.acked} messages"
        + (f"; {s.dead} device(s) ran flat" if s.dead else "")
    )
    return 0


def _run_watches(
    args: argparse.Namespace,
    devices: list[SimDevice],
    host: str,
    port: int,
    conn: dict[str, Any],
    start_ts: float,
    sos_person: str,
    stop: threading.Event,
    echo: Callable[[str, str], None] | None,
) -> int:
    clock = _SimClock(start_ts, float(args.speed))
    answer = {"ok": True, "not-ok": False}.get(args.answer_prompts or "")
    watches = [
        Watch(d.person, d.device, d.model, host, port, auto_answer=answer, echo=echo,
              clock=clock.now, **conn)
        for d in devices
    ]  # fmt: skip
    hero = next(w for w in watches if w.person == sos_person)
    timeline = _timeline(args)
    counts = {"sos": 0, "sos_end": 0}
    gaps = [w.model.interval_s / clock.speed for w in watches]  # wall seconds between readings
    try:
        for w in watches:
            w.connect()
        clock.start()
        # Stagger first readings so devices do not all publish in the same instant.
        due = [gap * i / len(watches) for i, gap in enumerate(gaps)]  # wall offsets
        while not stop.is_set():
            now = clock.wall()
            if args.duration is not None and now >= args.duration:
                break
            for name in timeline.due(now * clock.speed):
                if name in ACTIONS:
                    _ = hero.press_sos() if name == "sos" else hero.end_sos()
                    counts[name] += 1
                else:
                    hero.model.set_scenario(name, clock.now())
            for i, w in enumerate(watches):
                if due[i] <= now and w.model.alive:
                    # Scheduled ts, not "now": exact spacing however late the loop woke.
                    w.publish_reading(start_ts + due[i] * clock.speed)
                    due[i] += gaps[i]
            live = [d for d, w in zip(due, watches, strict=True) if w.model.alive]
            if not live:
                break
            stop.wait(min(max(min(live) - clock.wall(), 0.0), 0.25))
    except KeyboardInterrupt:
        pass
    finally:
        for w in watches:
            if w.connected:
                w.disconnect(clean=True)
    elapsed = clock.wall()
    published = sum(w.published for w in watches)
    notes = sum(len(w.notifications) for w in watches)
    print(
        f"simulate: {published} readings from {len(watches)} device(s) in {elapsed:.1f} s"
        f" ({published / elapsed if elapsed else 0:.2f} readings/s); SOS pressed"
        f" {counts['sos']}, ended {counts['sos_end']}; {notes} notification(s) received"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
