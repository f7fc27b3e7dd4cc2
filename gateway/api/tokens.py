"""API bearer tokens: strength rules, the generated admin token file, and role lookup.

No FastAPI here: the gateway checks its tokens at construction (refusing to start with a
weak one) before any web code is imported. Messages name the setting, never the token.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from gateway.base.errors import ConfigError
from gateway.base.files import write_durable

if TYPE_CHECKING:
    from gateway.base.settings import Settings

log = logging.getLogger(__name__)

Role = Literal["admin", "family", "viewer"]

MIN_TOKEN_LENGTH = 24
TOKEN_FILE = "api_token"
# Values copied from a template or typed as a stand-in; compared case-insensitively as
# prefixes, so "CHANGE-ME-please-0123456789" is refused as well.
PLACEHOLDER_PREFIXES = (
    "change-me",
    "changeme",
    "change_me",
    "replace-me",
    "replaceme",
    "replace_me",
    "your-",
    "your_",
    "<",
    "xxx",
    "secret",
    "password",
    "passwd",
    "token",
    "example",
    "placeholder",
    "dummy",
)
# A long run of one or two characters ("aaaa…", "0000…") is as guessable as a short token.
MIN_DISTINCT_CHARS = 8


class WeakTokenError(ConfigError):
    """An API token is empty, too short, a placeholder, or reused across roles."""


def token_problem(token: str) -> str | None:
    """Why `token` must not be used as an API token, or None when it is acceptable."""
    value = token.strip()
    if not value:
        return "is empty"
    if len(value) < MIN_TOKEN_LENGTH:
        return f"is shorter than {MIN_TOKEN_LENGTH} characters"
    if value.lower().startswith(PLACEHOLDER_PREFIXES):
        return "is a placeholder value"
    if len(set(value)) < MIN_DISTINCT_CHARS:
        return "repeats too few distinct characters"
    if value != token or any(c.isspace() for c in value):
        return "contains whitespace"
    return None


def check_token(token: str, what: str) -> None:
    problem = token_problem(token)
    if problem is not None:
        raise WeakTokenError(
            f"{what} {problem}; use a random value of at least {MIN_TOKEN_LENGTH} characters,"
            " e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )


def check_tokens(admin: str, family: Sequence[str], viewer: Sequence[str]) -> None:
    """Every token strong, and no token in two roles (the stronger role would win silently)."""
    check_token(admin, "HEALTHGW_API_TOKEN")
    for name, tokens in (("HEALTHGW_FAMILY_TOKENS", family), ("HEALTHGW_VIEWER_TOKENS", viewer)):
        for i, t in enumerate(tokens, start=1):
            check_token(t, f"{name} entry {i}")
    seen = [admin, *family, *viewer]
    if len(set(seen)) != len(seen):
        raise WeakTokenError("the same API token is configured twice (admin, family or viewer)")


def new_token() -> str:
    while True:  # a random token that trips a rule (e.g. starts "token") is astronomically rare
        token = secrets.token_urlsafe(32)
        if token_problem(token) is None:
            return token


def load_or_create(path: Path) -> str:
    """The admin token kept in `path`, made (or remade, when a crash left it empty or weak)."""
    try:
        current = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        current = None
    if current is not None:
        if token_problem(current) is None:
            if path.stat().st_mode & 0o077:
                log.warning("%s was readable by other users; restricting it to 0600", path)
                path.chmod(0o600)
            return current
        log.warning("%s holds no usable token (empty or weak); generating a new one", path)
    token = new_token()
    # 0600 from its first byte, and never found empty or partial after a crash.
    write_durable(path, token + "\n")
    log.warning("generated a new admin API token in %s", path)
    return token


def admin_token(settings: Settings, data_dir: Path) -> str:
    """The admin token for this gateway, after checking every configured API token.
    Raises WeakTokenError (a ConfigError): the gateway refuses to start."""
    family = [t.get_secret_value() for t in settings.family_tokens]
    viewer = [t.get_secret_value() for t in settings.viewer_tokens]
    if settings.api_token is not None:
        token = settings.api_token.get_secret_value()
    else:
        token = load_or_create(data_dir / TOKEN_FILE)
    check_tokens(token, family, viewer)
    return token


class Tokens:
    """The configured tokens and the role each grants."""

    def __init__(self, admin: str, family: Sequence[str] = (), viewer: Sequence[str] = ()) -> None:
        check_tokens(admin, family, viewer)
        self._by_role: tuple[tuple[Role, tuple[bytes, ...]], ...] = (
            ("admin", (admin.encode(),)),
            ("family", tuple(t.encode() for t in family)),
            ("viewer", tuple(t.encode() for t in viewer)),
        )
        self.admin = admin

    def role(self, token: str | None) -> Role | None:
        if not token:  # an empty credential never matches, whatever is configured
            return None
        given = token.encode()
        found: Role | None = None
        for role, tokens in self._by_role:
            for t in tokens:
                # Constant time, and every token compared: timing says nothing of the role.
                if hmac.compare_digest(given, t) and found is None:
                    found = role
        return found


class KeyHasher:
    """Rate-limit keys from tokens without keeping the tokens: HMAC with a per-process key,
    so the limiter's memory holds nothing that opens the API or can be brute-forced offline."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    def __call__(self, token: str) -> str:
        return hmac.new(self._key, token.encode(), hashlib.sha256).hexdigest()[:32]
