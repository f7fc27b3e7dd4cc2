"""One root exception for everything healthgw raises on purpose (the aiomqtt way)."""

from __future__ import annotations


class HealthGWError(Exception):
    """Root of every deliberate healthgw error."""


class ConfigError(HealthGWError):
    """Settings or the household file are invalid. The message lists every problem."""


class NotificationError(HealthGWError):
    """A text could not be handed to the provider."""

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


class StorageError(HealthGWError):
    """The local store failed."""


class UnsafeRequestError(HealthGWError, ValueError):
    """A request that must not be carried out for clinical safety (a weekly drug scheduled
    daily, aspirin for a child). The API answers 409 with the reason."""
