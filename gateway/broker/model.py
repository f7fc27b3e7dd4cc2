"""Broker accounts: a role, a username and a password hash."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from gateway.base.errors import HealthGWError
from gateway.contract.topics import ID_PATTERN

_ID_RE = re.compile(ID_PATTERN)
# Service usernames have no dot, so they can never collide with a device's person.device.
SERVICE_USERNAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class BrokerAuthError(HealthGWError):
    """The account registry or a request to change it is invalid. Never carries secrets."""


class Role(StrEnum):
    DEVICE = "device"
    GATEWAY = "gateway"
    HOMEASSISTANT = "homeassistant"
    SIMULATOR = "simulator"


# Roles with exactly one account each; the order is the order in the generated files.
SERVICE_ROLES: tuple[Role, ...] = (Role.GATEWAY, Role.HOMEASSISTANT, Role.SIMULATOR)


@dataclass(frozen=True, slots=True)
class Account:
    username: str
    role: Role
    password_hash: str
    person: str | None = None
    device: str | None = None
    # Simulator only: the simulated persons whose device topics it may use (never empty).
    persons: tuple[str, ...] = ()


def check_id(value: str, what: str) -> str:
    if not _ID_RE.match(value):
        raise BrokerAuthError(f"invalid {what} id {value!r}: use 1-64 of A-Z a-z 0-9 _ -")
    return value


def check_persons(persons: Iterable[str]) -> tuple[str, ...]:
    """Sorted, de-duplicated, checked person ids; BrokerAuthError when there are none."""
    out = tuple(sorted({check_id(p, "person") for p in persons}))
    if not out:
        raise BrokerAuthError("the simulator account needs at least one simulated person")
    return out


def device_username(person: str, device: str) -> str:
    """`person.device`: ids cannot contain a dot, so the split is unambiguous."""
    return f"{check_id(person, 'person')}.{check_id(device, 'device')}"


def check_service_username(username: str, role: Role) -> str:
    if not SERVICE_USERNAME_RE.match(username):
        raise BrokerAuthError(
            f"invalid {role.value} username {username!r}: use 1-64 of A-Z a-z 0-9 _ - (no dot)"
        )
    return username
