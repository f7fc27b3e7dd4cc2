"""What the medication service tells a person's family: a missed dose and a medication warning,
each as an event and one text to every emergency contact.

Kept apart from agents.medication.service, which schedules and records doses: this is the only part
that reaches people other than the wearer, and its rules (each cause texted once per contact,
one failed contact not stopping the others, nothing medical in the logs) read best on their own.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from zoneinfo import ZoneInfo

from gateway.base.clock import Clock
from gateway.base.ports import TextQueue
from gateway.base.supervise import describe
from gateway.contract.topics import EventType, format_ts
from gateway.contract.values import Event
from gateway.contract.vital_words import user_text, words_only
from gateway.household.model import Household, Person

# The service's logger: these records were the service's before the split, and keep its name.
log = logging.getLogger("agents.medication.service")


@user_text
def missed_dose_text(name: str, when: str, medication: str) -> str:
    return f"{name} has not confirmed their {when} dose of {words_only(medication).title()}."


@user_text
def medication_warning_text(name: str, warnings: Sequence[str]) -> str:
    return f"Medication warning for {name}: {' '.join(warnings)}"


class FamilyAlerts:
    def __init__(
        self,
        household: Household,
        texts: TextQueue,
        clock: Clock,
        emit: Callable[[Event], Awaitable[None]],
        tz: ZoneInfo,
    ) -> None:
        self._household = household
        self._texts = texts
        self._clock = clock
        self._emit = emit
        self._tz = tz

    async def missed(self, person: str, dose_id: str, medication: str, scheduled: float) -> None:
        p = self._household.person(person)
        when = datetime.fromtimestamp(scheduled, self._tz).strftime("%H:%M")
        await self._emit(
            Event(
                EventType.MEDICATION_MISSED,
                person,
                self._clock.now(),
                {"dose_id": dose_id, "medication": medication, "scheduled": format_ts(scheduled)},
            )
        )
        if p is not None:
            self._text_family(
                p,
                missed_dose_text(p.name, when, medication),
                key=f"missed:{dose_id}",
                purpose="medication_missed:contact",
            )

    async def warn(self, person: str, warnings: list[str], *, key: str) -> None:
        p = self._household.person(person)
        await self._emit(
            Event(EventType.MEDICATION_WARNING, person, self._clock.now(), {"warnings": warnings})
        )
        if p is not None:
            self._text_family(
                p,
                medication_warning_text(p.name, warnings),
                key=f"medwarn:{key}",  # once per cause and contact
                purpose="medication_warning:contact",
            )

    def _text_family(self, p: Person, body: str, *, key: str, purpose: str) -> None:
        """One text to each emergency contact; the key makes a repeat of the same cause a
        no-op. A contact that cannot be queued does not stop the others."""
        for c in p.emergency_contacts:
            try:
                self._texts.submit(
                    to=c.phone, body=body, key=f"{key}:{c.phone[-4:]}", person=p.id,
                    purpose=purpose,
                )  # fmt: skip
            except Exception as exc:  # class and place only: a message may quote PHI
                log.error("reminders: could not queue a text to a contact (%s)", describe(exc))
