"""The account registry on disk: `accounts.json` plus the `passwd` and `acl` files that
mosquitto reads, all regenerated together under a lock on every change."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

from gateway.base.files import write_durable
from gateway.broker.acl import ordered, render_acl, render_passwd
from gateway.broker.model import (
    SERVICE_ROLES,
    Account,
    BrokerAuthError,
    Role,
    check_id,
    check_persons,
    check_service_username,
    device_username,
)
from gateway.broker.passwords import ITERATIONS, check_password, hash_password, parse_hash
from gateway.broker.passwords import verify_password as _verify

ACCOUNTS_FILE = "accounts.json"
PASSWD_FILE = "passwd"  # nosec B105 # the file's name, not a password
ACL_FILE = "acl"
_LOCK_FILE = ".lock"
_VERSION = 1


class AccountExists(BrokerAuthError):
    """The device already has an account and no rotation was asked for."""


class Change(StrEnum):
    CREATED = "created"
    UPDATED = "updated"  # new password
    REPLACED = "replaced"  # the role's account now has another username
    REMOVED = "removed"
    UNCHANGED = "unchanged"


class AuthStore:
    """`auth_dir` holds accounts.json, passwd and acl (0600; the dir 0700).

    `owner` (uid, gid) chowns the dir and the files, e.g. to the broker's user in its
    container. Without it, a root caller gives new files the dir's owner, so a broker that
    owns the dir can still read what root rewrote."""

    def __init__(
        self,
        auth_dir: Path,
        *,
        ha_prefix: str = "homeassistant",
        owner: tuple[int, int] | None = None,
        iterations: int = ITERATIONS,
    ) -> None:
        self.auth_dir = Path(auth_dir)
        self.ha_prefix = ha_prefix
        self.owner = owner
        self.iterations = iterations

    # --- reading ---------------------------------------------------------------------

    def accounts(self) -> list[Account]:
        path = self.auth_dir / ACCOUNTS_FILE
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise BrokerAuthError(f"cannot read {path}: {exc.strerror}") from None
        return ordered(_parse(text, path).values())

    # --- changes ---------------------------------------------------------------------

    def sync(self) -> None:
        """(Re)write passwd and acl from accounts.json, creating empty ones if need be."""
        with self._transaction():
            pass

    def ensure_services(
        self,
        wanted: Mapping[Role, tuple[str, str]],
        *,
        simulator_persons: Sequence[str] = (),
    ) -> dict[Role, Change]:
        """Each role's one account gets this (username, password); re-hashed only when the
        password no longer verifies. A simulator account also needs `simulator_persons`,
        the only persons whose device topics it may use. Always leaves passwd and acl."""
        for role, (username, password) in wanted.items():
            if role not in SERVICE_ROLES:
                raise BrokerAuthError(f"{role.value} is not a service role")
            check_service_username(username, role)
            check_password(password)
        persons = check_persons(simulator_persons) if Role.SIMULATOR in wanted else ()
        names = [u for u, _ in wanted.values()]
        if len(set(names)) != len(names):
            raise BrokerAuthError("two service roles were given the same username")
        changes: dict[Role, Change] = {}
        with self._transaction() as accounts:
            for role, (username, password) in wanted.items():
                changes[role] = self._ensure_service(
                    accounts, role, username, password, persons if role is Role.SIMULATOR else ()
                )
        return changes

    def remove_service(self, role: Role) -> str | None:
        """Delete the role's account (e.g. switch the simulator off); its username, or None
        when it had none."""
        if role not in SERVICE_ROLES:
            raise BrokerAuthError(f"{role.value} is not a service role")
        with self._transaction() as accounts:
            current = next((a for a in accounts.values() if a.role is role), None)
            if current is not None:
                del accounts[current.username]
        return None if current is None else current.username

    def _ensure_service(
        self,
        accounts: dict[str, Account],
        role: Role,
        username: str,
        password: str,
        persons: tuple[str, ...],
    ) -> Change:
        clash = accounts.get(username)
        if clash is not None and clash.role is not role:
            raise BrokerAuthError(
                f"username {username!r} already belongs to a {clash.role} account"
            )
        current = next((a for a in accounts.values() if a.role is role), None)
        if current is not None and current.username == username:
            if _verify(password, current.password_hash):
                if current.persons == persons:
                    return Change.UNCHANGED
                accounts[username] = Account(username, role, current.password_hash, persons=persons)
                return Change.UPDATED
            change = Change.UPDATED
        else:
            change = Change.CREATED if current is None else Change.REPLACED
            if current is not None:
                del accounts[current.username]
        accounts[username] = Account(username, role, self._hash(password), persons=persons)
        return change

    def add_device(
        self, person: str, device: str, password: str, *, rotate: bool = False
    ) -> Change:
        username = device_username(person, device)
        check_password(password)
        with self._transaction() as accounts:
            if username in accounts and not rotate:
                raise AccountExists(f"device {person}/{device} already has a broker account")
            change = Change.UPDATED if username in accounts else Change.CREATED
            accounts[username] = Account(
                username, Role.DEVICE, self._hash(password), person, device
            )
        return change

    def remove_devices(self, person: str, device: str | None = None) -> list[tuple[str, str]]:
        """Revoke one device, or all the person's devices; returns the (person, device) pairs."""
        check_id(person, "person")
        if device is not None:
            check_id(device, "device")
        removed: list[tuple[str, str]] = []
        with self._transaction() as accounts:
            for account in list(accounts.values()):
                if account.role is not Role.DEVICE or account.person != person:
                    continue
                if device is None or account.device == device:
                    assert account.device is not None  # checked when loaded
                    removed.append((person, account.device))
                    del accounts[account.username]
        return sorted(removed)

    # --- plumbing --------------------------------------------------------------------

    def _hash(self, password: str) -> str:
        return hash_password(password, iterations=self.iterations)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[dict[str, Account]]:
        """Lock, load, let the caller change the accounts, then rewrite all three files.
        Nothing is written if the caller raises."""
        try:
            self._prepare_dir()
            lock_path = self.auth_dir / _LOCK_FILE
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise _write_error(self.auth_dir, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            path = self.auth_dir / ACCOUNTS_FILE
            try:
                text = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                text = ""
            accounts = _parse(text, path) if text else {}
            yield accounts
            ordered_accounts = ordered(accounts.values())
            try:
                self._write(ACCOUNTS_FILE, _dump(ordered_accounts))
                self._write(PASSWD_FILE, render_passwd(ordered_accounts))
                self._write(ACL_FILE, render_acl(ordered_accounts, self.ha_prefix))
                self._write(_LOCK_FILE, None)
            except OSError as exc:
                raise _write_error(self.auth_dir, exc) from None
        finally:
            os.close(fd)

    def _prepare_dir(self) -> None:
        self.auth_dir.mkdir(parents=True, exist_ok=True)
        if self.owner is not None:
            os.chown(self.auth_dir, *self.owner)
        if stat.S_IMODE(self.auth_dir.stat().st_mode) != 0o700:
            os.chmod(self.auth_dir, 0o700)

    def _file_owner(self) -> tuple[int, int] | None:
        if self.owner is not None:
            return self.owner
        if os.geteuid() == 0:
            st = self.auth_dir.stat()
            return st.st_uid, st.st_gid
        return None

    def _write(self, name: str, text: str | None) -> None:
        """Atomically replace `name` when its content changed (text None: keep content, fix
        owner and mode only)."""
        path = self.auth_dir / name
        owner = self._file_owner()
        if text is None or _same_content(path, text):
            st = path.stat()
            if owner is not None and (st.st_uid, st.st_gid) != owner:
                os.chown(path, *owner)
            if stat.S_IMODE(st.st_mode) != 0o600:
                os.chmod(path, 0o600)
            return
        # 0600 and the broker's owner before the rename: mosquitto never finds it unreadable.
        write_durable(path, text, mode=0o600, owner=owner)


def _write_error(auth_dir: Path, exc: OSError) -> BrokerAuthError:
    return BrokerAuthError(
        f"cannot write the broker auth dir {auth_dir}: {exc.strerror}"
        " (run as the broker's user or as root)"
    )


def _same_content(path: Path, text: str) -> bool:
    try:
        return path.read_bytes() == text.encode("utf-8")
    except FileNotFoundError:
        return False


def _dump(accounts: list[Account]) -> str:
    rows: list[dict[str, str | list[str]]] = []
    for a in accounts:
        row: dict[str, str | list[str]] = {
            "username": a.username,
            "role": a.role.value,
            "hash": a.password_hash,
        }
        if a.role is Role.DEVICE:
            assert a.person is not None and a.device is not None
            row |= {"person": a.person, "device": a.device}
        if a.persons:
            row["persons"] = list(a.persons)
        rows.append(row)
    return json.dumps({"version": _VERSION, "accounts": rows}, indent=2) + "\n"


def _parse(text: str, path: Path) -> dict[str, Account]:
    """accounts.json -> {username: Account}. Errors name the entry, never its hash."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BrokerAuthError(f"{path}: not JSON (line {exc.lineno})") from None
    if not isinstance(doc, dict) or doc.get("version") != _VERSION:
        raise BrokerAuthError(f"{path}: expected {{'version': {_VERSION}, 'accounts': [...]}}")
    rows = doc.get("accounts")
    if not isinstance(rows, list):
        raise BrokerAuthError(f"{path}: 'accounts' must be a list")
    accounts: dict[str, Account] = {}
    seen_roles: set[Role] = set()
    for i, row in enumerate(rows):
        try:
            account = _account(row)
        except (BrokerAuthError, KeyError, TypeError, ValueError) as exc:
            detail = exc if isinstance(exc, BrokerAuthError) else "missing or invalid field"
            raise BrokerAuthError(f"{path}: account #{i + 1}: {detail}") from None
        if account.role is Role.SIMULATOR and not account.persons:
            # A registry from before simulators were limited to persons: its simulator could
            # write anyone's topics. Dropped (the simulator is off); `init` can recreate it.
            continue
        if account.username in accounts:
            raise BrokerAuthError(f"{path}: account #{i + 1}: duplicate username")
        if account.role is not Role.DEVICE:
            if account.role in seen_roles:
                raise BrokerAuthError(f"{path}: account #{i + 1}: a second {account.role} account")
            seen_roles.add(account.role)
        accounts[account.username] = account
    return accounts


def _account(row: Any) -> Account:
    role = Role(row["role"])
    username = row["username"]
    password_hash = row["hash"]
    if not isinstance(username, str) or not isinstance(password_hash, str):
        raise TypeError
    parse_hash(password_hash)
    if role is Role.DEVICE:
        person, device = row["person"], row["device"]
        if not isinstance(person, str) or not isinstance(device, str):
            raise TypeError
        if device_username(person, device) != username:
            raise BrokerAuthError("username is not person.device")
        return Account(username, role, password_hash, person, device)
    check_service_username(username, role)
    if role is Role.SIMULATOR:
        persons = row.get("persons", [])
        if not isinstance(persons, list) or not all(isinstance(p, str) for p in persons):
            raise TypeError
        return Account(
            username, role, password_hash, persons=check_persons(persons) if persons else ()
        )
    return Account(username, role, password_hash)
