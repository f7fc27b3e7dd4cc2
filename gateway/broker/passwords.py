"""Mosquitto `$7$` password hashes (PBKDF2-HMAC-SHA512), the format mosquitto_passwd 2.0
writes: `$7$<iterations>$<base64 salt>$<base64 hash>`. Pure Python, so the gateway container
can manage the broker's password file without the mosquitto binary."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

from gateway.broker.model import BrokerAuthError

# mosquitto_passwd 2.0 uses 101 iterations. More costs the broker a few ms per CONNECT and
# slows offline guessing of a leaked file with a human-chosen service password.
ITERATIONS = 10_000
SALT_BYTES = 12  # as mosquitto_passwd; mosquitto 2.0 only accepts 12- or 64-byte salts
HASH_BYTES = 64
MAX_PASSWORD_CHARS = 1024


def generate_password() -> str:
    return secrets.token_urlsafe(18)


MIN_SERVICE_PASSWORD = 16
_PLACEHOLDERS = ("change-me", "changeme", "change_me", "password", "secret", "example")


def service_password_problem(password: str) -> str | None:
    """Why a service account's password (gateway, Home Assistant, simulator) from `.env` must
    not be used. The gateway's account may write every topic (acks for anyone included), so a
    placeholder copied from .env.example would be a publicly known key to the house."""
    if len(password) < MIN_SERVICE_PASSWORD:
        return f"is shorter than {MIN_SERVICE_PASSWORD} characters"
    if password.lower().startswith(_PLACEHOLDERS):
        return "is a placeholder value (from .env.example?)"
    if len(set(password)) < 6:
        return "repeats too few distinct characters"
    return None


def check_password(password: str) -> str:
    if not password:
        raise BrokerAuthError("the password is empty")
    if len(password) > MAX_PASSWORD_CHARS:
        raise BrokerAuthError(f"the password is longer than {MAX_PASSWORD_CHARS} characters")
    # mosquitto hashes a C string: a NUL would silently cut the password short.
    if any(c in password for c in "\x00\r\n"):
        raise BrokerAuthError("the password contains a NUL or line break")
    return password


def _pbkdf2(password: str, salt: bytes, iterations: int, length: int) -> bytes:
    return hashlib.pbkdf2_hmac("sha512", password.encode("utf-8"), salt, iterations, length)


def hash_password(password: str, *, iterations: int = ITERATIONS, salt: bytes | None = None) -> str:
    check_password(password)
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    digest = _pbkdf2(password, salt, iterations, HASH_BYTES)
    return f"$7${iterations}${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"


def parse_hash(encoded: str) -> tuple[int, bytes, bytes]:
    """(iterations, salt, digest); BrokerAuthError (without the hash) when malformed."""
    parts = encoded.split("$")
    try:
        if len(parts) != 5 or parts[0] or parts[1] != "7":
            raise ValueError
        iterations = int(parts[2])
        salt = base64.b64decode(parts[3], validate=True)
        digest = base64.b64decode(parts[4], validate=True)
    except (ValueError, binascii.Error):
        raise BrokerAuthError("not a mosquitto $7$ password hash") from None
    if iterations < 1 or len(salt) not in (12, 64) or len(digest) != HASH_BYTES:
        raise BrokerAuthError("not a mosquitto $7$ password hash")
    return iterations, salt, digest


def verify_password(password: str, encoded: str) -> bool:
    iterations, salt, digest = parse_hash(encoded)
    return hmac.compare_digest(_pbkdf2(password, salt, iterations, len(digest)), digest)
