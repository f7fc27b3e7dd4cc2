"""The narrow interfaces components talk through, so each can be swapped in tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from gateway.base.errors import HealthGWError


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


class TextQueue(Protocol):
    """Durable outgoing-text queue (gateway.notify.dispatcher implements it)."""

    def submit(self, *, to: str, body: str, key: str, person: str, purpose: str) -> str:
        """Persist and queue one text; return its message id. Idempotent on `key`: a second
        submit with the same key returns the first id and sends nothing new. Returns quickly:
        sending happens on worker threads. An SOS text (purpose "sos:", "sos_end:",
        "soft_sos:") never waits for an fsync: it is queued first and its row fsynced off the
        caller's thread; any other text is fsynced before this returns."""
        ...


class SosHandler(Protocol):
    """Starts and ends hard SOS runs (agents.playbooks implements it; wired at one point)."""

    async def start(
        self, person: str, *, device: str | None, location: tuple[float, float] | None, trigger: str
    ) -> bool:
        """Start a hard SOS. False when one is already open for the person (nothing resent)."""
        ...

    async def end(self, person: str, *, device: str | None, trigger: str) -> bool:
        """End the open SOS. False when none is open."""
        ...


class ChatHandler(Protocol):
    """The assistant's conversations (agents.assistant.conversations implements it; wired at one point)."""

    async def say(self, person: str, text: str, session_id: str | None = None) -> str:
        """Hand one user message over; return the session id it went to. Never waits for the
        assistant's answer: replies go out on health/{person}/reply and to listeners."""
        ...

    def listen(self, person: str, fn: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Call `fn` with every reply payload for `person`; returns the unsubscribe function."""
        ...

    def session_open(self, session_id: str) -> bool:
        """Is the conversation still going (False once it ended or timed out)?"""
        ...

    def stats(self) -> dict[str, Any]: ...


class MedicationPort(Protocol):
    """Medication reminders (agents.medication.service implements it; wired at one point)."""

    async def propose(self, person: str, text: str) -> tuple[str | None, Any]: ...
    async def confirm(self, person: str, rx_id: str) -> dict[str, Any]: ...
    async def record_intake(self, person: str, medication: str, mg: float) -> dict[str, Any]: ...
    def stop_prescription(self, person: str, rx_id: str) -> bool: ...
    def prescriptions(self, person: str) -> list[dict[str, Any]]: ...
    def adherence(self, person: str, day: Any) -> dict[str, Any]: ...

    async def on_answer(
        self, person: str, prompt_id: str | None, answer: str | None, *, ok: bool | None = None
    ) -> bool:
        """taken / snooze / skip for a dose, or the yes / no (`answer`, else `ok`) to a
        `confirm` prompt; False when it is neither (the ack goes on to the "are you OK?"
        prompts)."""
        ...


class NothingToReport(HealthGWError, LookupError):
    """A report asked for a period in which nothing was recorded (the API's 404)."""


class ReportPort(Protocol):
    """Daily health reports (agents.reports.daily implements it; wired at one point)."""

    def list(self, person: str) -> list[str]: ...
    def html(self, person: str, day: Any) -> str | None: ...
    def view(self, person: str, day: Any) -> dict[str, Any] | None: ...
    async def make(self, person: str, day: Any) -> dict[str, Any]: ...
    def today(self) -> Any: ...  # the household's local date
    async def summary_pdf(self, person: str, since: Any, until: Any, *, by: str) -> bytes:
        """The clinician summary of `since`..`until` (local dates, inclusive) as a PDF,
        audited as exported by `by`. ValueError for a period it cannot cover (422),
        NothingToReport when nothing was recorded in it (404)."""
        ...


class LadderPort(Protocol):
    """SOS escalation until acknowledged (agents.playbooks.ladder implements it)."""

    async def ack(self, person: str, by: str) -> bool: ...
    async def ack_by_sms(self, phone: str, body: str) -> str | None: ...
    def status(self, person: str) -> dict[str, Any] | None: ...
