"""`healthgw` command line. Heavy modules are imported inside each command so that
`healthgw assess` starts fast and the gateway's memory stays small."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.base.settings import Settings
from pathlib import Path


def _household_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--household",
        type=Path,
        default=None,
        help="household file (default: $HEALTHGW_HOUSEHOLD)",
    )


def _cmd_run(args: argparse.Namespace) -> int:
    import asyncio

    from gateway.base.errors import ConfigError
    from gateway.base.settings import Settings
    from healthgw.assembly.hub import run_gateway

    # Command-line values win over the environment, passed to the one Settings (no writes
    # to os.environ: the process's environment stays what the user gave it).
    overrides: dict[str, object] = {}
    if args.household:
        overrides["household"] = args.household
    if args.mqtt_url:
        overrides["mqtt_url"] = args.mqtt_url
    # Files the gateway creates (databases, reports, outboxes) hold PHI: owner-only.
    os.umask(0o077)
    try:
        settings = Settings(**overrides)  # type: ignore[arg-type]
        _preflight(settings)  # before any database or file is created
        # The GIL changes hands every 1 ms, not 5: an SOS text's worker thread must not wait
        # behind the event loop's flood of readings (tests/faults/test_overload.py).
        sys.setswitchinterval(0.001)
        asyncio.run(run_gateway(settings))
    except ConfigError as exc:
        print(f"healthgw: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


def _preflight(settings: Settings) -> None:
    """Refuse weak API tokens before anything is created on disk (WeakTokenError)."""
    from gateway.api.tokens import check_token, check_tokens

    family = [t.get_secret_value() for t in settings.family_tokens]
    viewer = [t.get_secret_value() for t in settings.viewer_tokens]
    if settings.api_token is not None:
        check_tokens(settings.api_token.get_secret_value(), family, viewer)
    else:  # the admin token is generated at start; the others must still be strong
        for i, t in enumerate(family + viewer, start=1):
            check_token(t, f"API token entry {i}")


def _cmd_check(args: argparse.Namespace) -> int:
    from gateway.base.errors import ConfigError
    from gateway.base.settings import Settings
    from gateway.household.model import load_household

    path = args.household or Settings().household
    if path is None:
        print(
            "healthgw: no household file (set HEALTHGW_HOUSEHOLD or --household)", file=sys.stderr
        )
        return 2
    try:
        hh = load_household(path)
    except ConfigError as exc:
        print(f"healthgw: {exc}", file=sys.stderr)
        return 2
    devices = sum(len(p.devices) for p in hh.persons)
    print(
        f"{path}: OK — {len(hh.persons)} persons, {devices} devices, "
        f"{len(hh.ambulances)} ambulances, {len(hh.specialists)} specialists"
    )
    from gateway.monitor.overrides import review_household

    findings = review_household(hh, Path(path))
    for f in findings:
        print(f.line_text())
    # A clamped override is a problem to fix (the gateway runs with the safe limits meanwhile).
    return 1 if any(f.level == "error" for f in findings) else 0


def _cmd_assess(args: argparse.Namespace) -> int:
    from gateway.base.errors import ConfigError
    from gateway.base.settings import Settings
    from gateway.household.model import Household, load_household
    from gateway.monitor.assess import run_cli

    household: Household | None = None
    path = args.household or Settings().household
    if path is not None:
        try:
            household = load_household(path)
        except ConfigError as exc:
            print(f"healthgw: {exc}", file=sys.stderr)
            return 2
    if args.file and args.file != "-":
        with open(args.file, encoding="utf-8") as fh:
            return run_cli(fh, sys.stdout, sys.stderr, household)
    return run_cli(sys.stdin, sys.stdout, sys.stderr, household)


def _cmd_simulate(args: argparse.Namespace) -> int:
    from simulators.cli import run_simulate

    return run_simulate(args)


def _cmd_demo(args: argparse.Namespace) -> int:
    from healthgw.demo import run_demo

    rc: int = run_demo(args)
    return rc


def _cmd_report(args: argparse.Namespace) -> int:
    from healthgw.commands import run_report

    return run_report(args)


def _cmd_replay(args: argparse.Namespace) -> int:
    import asyncio
    from zoneinfo import ZoneInfo

    from gateway.base.errors import ConfigError
    from healthgw.replay.report import to_json, to_text
    from healthgw.replay.run import load, replay
    from healthgw.replay.trace import TraceError

    household = args.household or os.environ.get("HEALTHGW_HOUSEHOLD")
    if not household:
        print("healthgw replay: --household FILE is needed", file=sys.stderr)
        return 2
    os.umask(0o077)  # the replay's databases hold the trace's health data
    try:
        items, hh = load(args.trace, Path(household))
        result = asyncio.run(replay(items, Path(household), hh, data_dir=args.keep))
    except (TraceError, ConfigError) as exc:
        print(f"healthgw replay: {exc}", file=sys.stderr)
        return 2
    tz = ZoneInfo(hh.timezone)
    print(to_json(result, tz) if args.json else to_text(result, tz))
    return 0


def _cmd_days(args: argparse.Namespace) -> int:
    import json

    from gateway.base.errors import ConfigError
    from healthgw.replay.days import DEFAULT_LIBRARY, run_score, table
    from simulators.days.day import trace
    from simulators.days.spec import load_library

    folder = args.library or DEFAULT_LIBRARY
    try:
        lib = load_library(folder)
        if args.days_command == "list":
            for p in lib.personas.values():
                print(f"persona {p.id:<10} {p.what}")
            for d in lib.deteriorations.values():
                print(f"deterioration {d.id:<28} ({d.persona}) {d.what}")
            return 0
        if args.days_command == "make":
            if args.persona not in lib.personas:
                print(f"healthgw days: unknown persona; known: {', '.join(lib.personas)}",
                      file=sys.stderr)  # fmt: skip
                return 2
            det = None
            if args.deterioration is not None:
                det = lib.deteriorations.get(args.deterioration)
                if det is None or det.persona != args.persona:
                    print("healthgw days: unknown deterioration for this persona", file=sys.stderr)
                    return 2
            lines = trace(lib, args.persona, days=args.days, seed=args.seed, deterioration=det)
            text = "\n".join(json.dumps(x) for x in lines) + "\n"
            if args.out is None:
                sys.stdout.write(text)
            else:
                args.out.write_text(text)
                print(f"{len(lines)} lines -> {args.out} (household: {lib.household})",
                      file=sys.stderr)  # fmt: skip
            return 0
        personas = args.persona or []
        card = run_score(folder, seed=args.seed, days=args.days, personas=personas, only=args.only)
    except ConfigError as exc:
        print(f"healthgw days: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(card.to_dict(), indent=2) if args.json else table(card))
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    from healthgw.commands import run_eval

    return run_eval(args)


def _cmd_devices(args: argparse.Namespace) -> int:
    from gateway.broker.commands import run_devices

    return run_devices(args)


def _cmd_bench(args: argparse.Namespace) -> int:
    # Runs the project's own script with this interpreter, fixed arguments, no shell.
    import subprocess  # nosec B404

    # bench/ sits at the repository root beside gateway/; an installed wheel has no copy.
    runner = Path(__file__).resolve().parent.parent / "bench" / "run_all.py"
    if not runner.is_file():
        print(
            "healthgw bench: no bench/ folder next to this gateway package; run it from a"
            " source checkout (pip install -e .)",
            file=sys.stderr,
        )
        return 2
    flags = [f for f, on in (("--quick", args.quick), ("--json", args.json)) if on]
    return subprocess.call([sys.executable, str(runner), *flags])  # nosec B603


def _devices_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("devices", help="broker accounts: device passwords and the per-device ACL")
    dv = p.add_subparsers(dest="devices_command", required=True)
    d = dv.add_parser("init", help="ensure the gateway (and HA, simulator) accounts; idempotent")
    d = dv.add_parser("add", help="create a device's account and ACL; prints its password once")
    d.add_argument("person")
    d.add_argument("device")
    _household_arg(d)
    d.add_argument("--json", action="store_true", help="print username, password and topics")
    d.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    d.add_argument("--rotate", action="store_true", help="replace an existing device's password")
    d = dv.add_parser("remove", help="revoke one device, or all of a person's devices")
    d.add_argument("person")
    d.add_argument("device", nargs="?", default=None)
    _household_arg(d)
    d = dv.add_parser("list", help="accounts and their roles (never the hashes)")
    d.add_argument("--json", action="store_true")
    for name, d in dv.choices.items():
        d.add_argument(
            "--auth-dir", type=Path, default=None, help="default $HEALTHGW_BROKER_AUTH_DIR"
        )
        if name != "list":
            d.add_argument("--owner", default=None, help="UID[:GID] to own the auth files")
            d.add_argument(
                "--reload-pid", type=int, default=None, help="send SIGHUP to this broker PID"
            )
    p.set_defaults(func=_cmd_devices)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="healthgw", description="Home health gateway")
    parser.add_argument("--log-level", default=os.environ.get("HEALTHGW_LOG_LEVEL"))
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="run the gateway (settings from HEALTHGW_* env vars)")
    _household_arg(p)
    p.add_argument("--mqtt-url", default=None, help="mqtt://host:port (default $HEALTHGW_MQTT_URL)")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("check-config", help="validate the household file and exit")
    _household_arg(p)
    p.set_defaults(func=_cmd_check)

    p = sub.add_parser(
        "assess",
        help="score JSON readings (one per line, file or stdin): NEWS2, ranges, plausibility",
    )
    p.add_argument("file", nargs="?", default="-", help="JSON lines file (default: stdin)")
    _household_arg(p)
    p.set_defaults(func=_cmd_assess)

    p = sub.add_parser("simulate", help="run watch simulators against a broker")
    from simulators.cli import add_arguments

    add_arguments(p)
    p.set_defaults(func=_cmd_simulate)

    p = sub.add_parser("demo", help="broker + gateway + watch simulator through a story")
    p.add_argument("--mqtt-url", default=None, help="broker (default $HEALTHGW_MQTT_URL)")
    p.add_argument("--data-dir", type=Path, default=Path(".demo"), help="demo state folder")
    p.add_argument("--speed", type=float, default=8.0, help="simulated seconds per wall second")
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("report", help="make one person's daily health report (HTML + JSON)")
    p.add_argument("person")
    p.add_argument("--date", default=None, help="YYYY-MM-DD, local day (default: today)")
    p.add_argument("--data-dir", type=Path, default=None, help="default $HEALTHGW_DATA_DIR")
    _household_arg(p)
    p.add_argument("--json", action="store_true", help="print the whole report as JSON")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser(
        "replay",
        help="replay a trace (JSON lines) through the gateway on a virtual clock: "
        "the timeline and the alarm burden per person-day",
    )
    p.add_argument("trace", type=Path, help="JSON lines: readings and answers, in time order")
    _household_arg(p)
    p.add_argument("--json", action="store_true", help="print {persons, timeline} as JSON")
    p.add_argument(
        "--keep", type=Path, default=None, help="keep the replay's data folder here (default: none)"
    )
    p.set_defaults(func=_cmd_replay)

    p = sub.add_parser(
        "days", help="the ordinary-day library (eval/days/): list, make traces, score the alarms"
    )
    dy = p.add_subparsers(dest="days_command", required=True)
    d = dy.add_parser("list", help="personas and deteriorations")
    d = dy.add_parser("make", help="a persona's days as a replay trace (JSON lines)")
    d.add_argument("persona")
    d.add_argument("--deterioration", default=None, help="laid over the last day")
    d.add_argument("--out", type=Path, default=None, help="file (default: stdout)")
    d = dy.add_parser(
        "score", help="replay every persona's days and deterioration: burden and time to alarm"
    )
    d.add_argument("--persona", action="append", default=None, help="only these (repeatable)")
    d.add_argument("--only", choices=("all", "ordinary", "deteriorations"), default="all")
    d.add_argument("--json", action="store_true", help="machine-readable JSON output")
    for d in dy.choices.values():
        d.add_argument("--library", type=Path, default=None, help="default: eval/days/")
        if d is not dy.choices["list"]:
            d.add_argument("--days", type=int, default=7, help="days per persona (default 7)")
            d.add_argument("--seed", type=int, default=1, help="the generator's seed")
    p.set_defaults(func=_cmd_days)

    p = sub.add_parser("eval", help="evaluate the agent: trajectories, scenarios, generate")
    ev = p.add_subparsers(dest="eval_command", required=True)
    e = ev.add_parser("trajectories", help="teacher-forced planner/caller metrics on a file")
    e.add_argument("file", type=Path, help="JSON list or JSON lines of trajectories")
    e = ev.add_parser("scenarios", help="closed-loop appointment scenarios (JSON lines)")
    e.add_argument("file", type=Path)
    e = ev.add_parser("generate", help="write synthetic trajectories (all seven categories)")
    e.add_argument("--n", type=int, default=70)
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--out", type=Path, default=None, help="file (default: stdout), JSON list")
    for e in ev.choices.values():
        e.add_argument("--json", action="store_true", help="machine-readable JSON output")
        e.add_argument(
            "--model",
            choices=("off", "auto"),
            default="off",
            help="use the local model for wording (default off: reproducible results)",
        )
        e.add_argument("--cache-dir", type=Path, default=None, help="triage model cache")
    p.set_defaults(func=_cmd_eval)

    p = sub.add_parser("bench", help="run the benchmarks (source checkout) and print a table")
    p.add_argument("--quick", action="store_true", help="small sizes, under ~2 minutes")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.set_defaults(func=_cmd_bench)

    _devices_parser(sub)
    from healthgw.export_cli import add_parser as _export_parser

    _export_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # The demo's screen is the story; routine logs would bury it.
    level = args.log_level or ("WARNING" if args.command == "demo" else "INFO")
    logging.basicConfig(
        level=getattr(logging, str(level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # These log request URLs, and Twilio lookups carry phone numbers in them (PHI), even
    # when the gateway itself runs at DEBUG.
    for noisy in ("urllib3", "twilio.http_client", "httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    rc: int = args.func(args)
    return rc


if __name__ == "__main__":
    sys.exit(main())
