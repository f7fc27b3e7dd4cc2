"""`healthgw devices init|add|remove|list`: the broker's accounts from the command line.

Passwords are printed once, by `add`, and appear in no error message or log."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from gateway.base.errors import HealthGWError
from gateway.broker.acl import device_rules
from gateway.broker.model import Account, BrokerAuthError, Role, check_id, device_username
from gateway.broker.passwords import (
    check_password,
    generate_password,
    service_password_problem,
)
from gateway.broker.store import AccountExists, AuthStore, Change
from gateway.contract.topics import parse_topic

if TYPE_CHECKING:
    from gateway.base.settings import Settings

RELOAD_HINT = (
    "Reload the broker to apply: docker compose kill -s HUP mosquitto"
    "  (or: kill -HUP $(pidof mosquitto))"
)
# (role, env prefix). The gateway's own account comes from Settings (HEALTHGW_MQTT_*).
_SERVICE_ENV: tuple[tuple[Role, str], ...] = (
    (Role.GATEWAY, "HEALTHGW_MQTT"),
    (Role.HOMEASSISTANT, "HEALTHGW_HA_MQTT"),
    (Role.SIMULATOR, "HEALTHGW_SIM_MQTT"),
)
# Comma-separated simulated persons. Empty (the default): no simulator account at all, so its
# password, even leaked, never reaches a real person's topics.
SIMULATOR_PERSONS_ENV = "HEALTHGW_SIMULATOR_PERSONS"


class _Usage(HealthGWError):
    """A problem to report with exit status 2."""


def run_devices(args: argparse.Namespace) -> int:
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "init": _init,
        "add": _add,
        "remove": _remove,
        "list": _list,
    }
    try:
        return handlers[args.devices_command](args)
    except (BrokerAuthError, _Usage) as exc:
        _err(str(exc))
        return 2


# --- commands ------------------------------------------------------------------------------


def _init(args: argparse.Namespace) -> int:
    settings = _settings()
    store = _store(args, settings)
    persons = _simulator_persons(args, settings)
    changes = _ensure_services(store, settings, required=True, simulator_persons=persons)
    if not persons:
        # Off unless persons are listed: reconcile, so unsetting them switches it off.
        removed = store.remove_service(Role.SIMULATOR)
        if removed is not None:
            changes[Role.SIMULATOR] = (removed, Change.REMOVED)
    for role, (username, change) in changes.items():
        print(f"{role.value} account {username}: {change.value}")
    if not persons:
        print(f"simulator account: off (set {SIMULATOR_PERSONS_ENV} to simulated persons)")
    else:
        print(f"simulator may act for: {', '.join(persons)}")
    if any(change is not Change.UNCHANGED for _, change in changes.values()):
        return _reload(args)
    return 0


def _add(args: argparse.Namespace) -> int:
    person, device = check_id(args.person, "person"), check_id(args.device, "device")
    settings = _settings()
    _check_household(args, settings, person, device)
    store = _store(args, settings)
    password = check_password(_read_password()) if args.password_stdin else generate_password()
    # Only `init` manages the simulator: `add` leaves its account (and persons) as they are.
    _ensure_services(store, settings, required=False, simulator_persons=None)
    try:
        change = store.add_device(person, device, password, rotate=args.rotate)
    except AccountExists:
        _err(
            f"{person}/{device} already has a broker account; use --rotate to replace its password"
        )
        return 1
    shown = None if args.password_stdin else password
    topics = {_kind(r.topic): r.topic for r in device_rules(person, device)}
    if args.json:
        doc = {
            "username": device_username(person, device),
            "password": shown,
            "person": person,
            "device": device,
            "topics": topics,
        }
        print(json.dumps(doc, indent=2))
    else:
        verb = "New password for" if change is Change.UPDATED else "Created the broker account of"
        print(f"{verb} {person}/{device}")
        print(f"  username: {device_username(person, device)}")
        if shown is not None:
            print(f"  password: {shown}")
            print("  (shown only now: put it in the device)")
        for kind, topic in topics.items():
            print(f"  {kind:<7} {topic}")
    return _reload(args, to=sys.stderr if args.json else sys.stdout)


def _remove(args: argparse.Namespace) -> int:
    person = check_id(args.person, "person")
    device = None if args.device is None else check_id(args.device, "device")
    store = _store(args, _settings())
    pairs = store.remove_devices(person, device)
    if not pairs:
        _err(f"no broker account for {person}/{device}" if device else f"no devices of {person}")
        return 1
    for p, d in pairs:
        print(f"Revoked {p}/{d} (user {device_username(p, d)})")
    _clear_home_assistant(args, person, [d for _, d in pairs])
    return _reload(args)


def _clear_home_assistant(args: argparse.Namespace, person: str, devices: list[str]) -> None:
    """Remove the revoked devices' Home Assistant entities (and the person's, when they are
    no longer in the household file). Best effort: with the broker unreachable, the gateway
    clears entities of devices gone from the household at its next start."""
    import asyncio

    from gateway.ha.discovery import clear_with_settings

    settings = _settings()
    if not settings.ha_discovery_prefix:
        return
    whole_person = False
    path = getattr(args, "household", None) or settings.household
    if path is not None:
        from gateway.base.errors import ConfigError
        from gateway.household.model import load_household

        try:
            whole_person = load_household(path).person(person) is None
        except ConfigError:
            whole_person = False

    async def clear() -> int:
        if whole_person:
            return len(await clear_with_settings(settings, person=person, devices=devices))
        n = 0
        for d in devices:
            n += len(await clear_with_settings(settings, person=person, device=d))
        return n

    try:
        n = asyncio.run(asyncio.wait_for(clear(), 15))
    except Exception as exc:  # broker down or refusing: say so, the revocation stands
        print(
            f"Home Assistant entities not cleared now ({type(exc).__name__}); remove the device"
            " from household.yaml and the gateway clears them at its next start",
            file=sys.stderr,
        )
        return
    print(f"Cleared {n} Home Assistant discovery topic(s)")


def _list(args: argparse.Namespace) -> int:
    store = _store(args, _settings())
    accounts = store.accounts()
    if args.json:
        print(json.dumps([_public(a) for a in accounts], indent=2))
        return 0
    if not accounts:
        print(f"no broker accounts in {store.auth_dir}")
        return 0
    width = max(len(a.username) for a in accounts)
    for a in accounts:
        owner = f"{a.person}/{a.device}" if a.role is Role.DEVICE else ",".join(a.persons)
        print(f"{a.username:<{width}}  {a.role.value:<13}  {owner}".rstrip())
    return 0


# --- helpers -------------------------------------------------------------------------------


def _settings() -> Settings:
    from gateway.base.settings import Settings

    return Settings()


def _store(args: argparse.Namespace, settings: Settings) -> AuthStore:
    auth_dir: Path = args.auth_dir or settings.broker_auth_dir
    owner = _parse_owner(args.owner) if getattr(args, "owner", None) else None
    return AuthStore(auth_dir, ha_prefix=settings.ha_discovery_prefix, owner=owner)


def _parse_owner(text: str) -> tuple[int, int]:
    uid, _, gid = text.partition(":")
    try:
        return int(uid), int(gid or uid)
    except ValueError:
        raise _Usage(f"--owner wants UID[:GID] as numbers, not {text!r}") from None


def _ensure_services(
    store: AuthStore,
    settings: Settings,
    *,
    required: bool,
    simulator_persons: tuple[str, ...] | None,
) -> dict[Role, tuple[str, Change]]:
    """The service accounts whose credentials are in the environment. `required`: fail
    unless the gateway ends up with an account (init); otherwise only warn (add).
    `simulator_persons` None: leave the simulator alone; () : do not create it."""
    wanted: dict[Role, tuple[str, str]] = {}
    for role, prefix in _SERVICE_ENV:
        if role is Role.SIMULATOR and not simulator_persons:
            continue
        if role is Role.GATEWAY:
            username = settings.mqtt_username or ""
            secret = settings.mqtt_password
            password = secret.get_secret_value() if secret is not None else ""
        else:
            username = os.environ.get(f"{prefix}_USERNAME", "")
            password = os.environ.get(f"{prefix}_PASSWORD", "")
        if username and password:
            problem = service_password_problem(password)
            if problem is not None:
                which = "HEALTHGW_MQTT" if role is Role.GATEWAY else prefix
                raise _Usage(
                    f"{which}_PASSWORD {problem}; use a random one, e.g."
                    " python -c 'import secrets; print(secrets.token_urlsafe(24))'"
                )
            wanted[role] = (username, password)
        elif username or password:
            raise _Usage(f"set both {prefix}_USERNAME and {prefix}_PASSWORD, or neither")
        elif role is Role.SIMULATOR:
            raise _Usage(f"{SIMULATOR_PERSONS_ENV} is set: set {prefix}_USERNAME and _PASSWORD")
    if Role.GATEWAY not in wanted and not any(a.role is Role.GATEWAY for a in store.accounts()):
        message = (
            "no gateway account: set HEALTHGW_MQTT_USERNAME and HEALTHGW_MQTT_PASSWORD"
            " and run `healthgw devices init`"
        )
        if required:
            raise _Usage(message)
        _err(f"warning: {message} (the gateway cannot connect without it)")
    changes = store.ensure_services(wanted, simulator_persons=simulator_persons or ())
    return {role: (wanted[role][0], change) for role, change in changes.items()}


def _simulator_persons(args: argparse.Namespace, settings: Settings) -> tuple[str, ...]:
    """HEALTHGW_SIMULATOR_PERSONS, checked; a warning for persons not in the household."""
    raw = os.environ.get(SIMULATOR_PERSONS_ENV, "")
    names = [p.strip() for p in raw.split(",") if p.strip()]
    persons = tuple(sorted({check_id(p, "person") for p in names}))
    path = getattr(args, "household", None) or settings.household
    if persons and path is not None:
        from gateway.base.errors import ConfigError
        from gateway.household.model import load_household

        try:
            known = {p.id for p in load_household(path).persons}
        except ConfigError as exc:
            raise _Usage(str(exc)) from None
        for p in persons:
            if p not in known:
                _err(f"warning: simulated person {p!r} is not in {path}")
    return persons


def _check_household(
    args: argparse.Namespace, settings: Settings, person: str, device: str
) -> None:
    from gateway.base.errors import ConfigError
    from gateway.household.model import load_household

    path = args.household or settings.household
    if path is None:
        return
    try:
        household = load_household(path)
    except ConfigError as exc:
        raise _Usage(str(exc)) from None
    entry = next((p for p in household.persons if p.id == person), None)
    if entry is None:
        raise _Usage(f"person {person!r} is not in {path}: add them to the household file first")
    if all(d.id != device for d in entry.devices):
        _err(
            f"warning: device {device!r} is not listed under {person!r} in {path}:"
            " add it to household.yaml, or the gateway rejects its readings (unknown_device)"
        )


def _read_password() -> str:
    line = sys.stdin.readline()
    return line[:-1] if line.endswith("\n") else line  # only the line break; \r is refused


def _reload(args: argparse.Namespace, *, to: TextIO | None = None) -> int:
    out = to or sys.stdout
    pid: int | None = getattr(args, "reload_pid", None)
    if pid is None:
        print(RELOAD_HINT, file=out)
        return 0
    try:
        os.kill(pid, signal.SIGHUP)
    except OSError as exc:
        _err(f"saved, but could not signal the broker (pid {pid}): {exc.strerror}")
        return 1
    print(f"Sent SIGHUP to the broker (pid {pid}): it re-reads passwd and acl.", file=out)
    return 0


def _kind(topic: str) -> str:
    parsed = parse_topic(topic)
    if parsed is None:  # every device topic is in the contract; this guards future edits
        raise ValueError(f"{topic} is not a contract topic")
    return parsed.kind.value


def _public(account: Account) -> dict[str, str | list[str] | None]:
    """What `list` shows: never the hash (and the simulator's persons)."""
    doc: dict[str, str | list[str] | None] = {
        "username": account.username,
        "role": account.role.value,
        "person": account.person,
        "device": account.device,
    }
    if account.role is Role.SIMULATOR:
        doc["persons"] = list(account.persons)
    return doc


def _err(message: str) -> None:
    print(f"healthgw devices: {message}", file=sys.stderr)
