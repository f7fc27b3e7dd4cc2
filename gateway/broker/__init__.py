"""The secured broker's accounts: who may connect to mosquitto and which topics each may use.

`accounts.json` in the auth dir is the source of truth (hashes only, never passwords). The
broker's `passwd` and `acl` files are regenerated from it on every change, so they never
drift apart. `healthgw devices ...` (gateway/broker/commands.py) is the front end.
"""

from __future__ import annotations

from gateway.broker.model import Account, BrokerAuthError, Role
from gateway.broker.passwords import generate_password, hash_password, verify_password
from gateway.broker.store import AuthStore, Change

__all__ = [
    "Account",
    "AuthStore",
    "BrokerAuthError",
    "Change",
    "Role",
    "generate_password",
    "hash_password",
    "verify_password",
]
