"""The decision an event carries (who is told, what happens without an answer), as a value.
The monitor makes it (gateway/monitor/response.py, with the table and its sources); events,
agents and the escalation watcher read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

OnNoAnswer = Literal["none", "contacts", "hard_sos"]
LEVELS = ("record", "advise", "urgent", "urgent_family", "emergency")
# IEC 60601-1-8 alarm priorities per tier ("information": a signal, not an alarm).
PRIORITIES = ("information", "low", "medium", "medium", "high")


@dataclass(frozen=True, slots=True)
class Response:
    tier: int
    tell_wearer: bool
    ask: bool
    contacts_now: bool
    clinician_now: bool
    on_no_answer: OnNoAnswer

    @property
    def level(self) -> str:
        return LEVELS[self.tier]

    @property
    def priority(self) -> str:
        return PRIORITIES[self.tier]

    def to_dict(self) -> dict[str, Any]:
        return {
            "tier": self.tier,
            "level": self.level,
            "priority": self.priority,
            "tell_wearer": self.tell_wearer,
            "ask": self.ask,
            "contacts_now": self.contacts_now,
            "clinician_now": self.clinician_now,
            "on_no_answer": self.on_no_answer,
        }


RECORD = Response(0, False, False, False, False, "none")
