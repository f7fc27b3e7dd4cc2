"""The narrow interfaces components talk through, so each can be swapped in tests."""

from __future__ import annotations

from typing import Any, Protocol


class Publisher(Protocol):
    """Publishes to the broker (the gateway's MQTT client, or a recorder in unit tests)."""

    async def publish(
        self,
        topic: str,
        payload: dict[str, Any] | str | bytes,
        *,
        qos: int = 1,
        retain: bool = False,
    ) -> None: ...


class SmsSender(Protocol):
    """Hands one text to a provider. Blocking: called from a worker thread, never the loop."""

    name: str

    def send(self, to: str, body: str) -> str:
        """Send; return the provider's message id. Raise NotificationError(transient=...)."""
        ...

    def was_sent(self, to: str, marker: str, since: float) -> bool | None:
        """After a crash mid-send: did a text to `to` containing `marker` go out since `since`?
        None when the provider cannot tell."""
        ...
