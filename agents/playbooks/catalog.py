"""The playbooks: which steps each kind of run takes, and the next step of a run that is not in
the journal (teacher-forced evaluation, agents/eval/)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agents.assistant.trajectory import ToolCall
from agents.playbooks.hard_steps import (
    _end_assigned,
    _end_notify,
    _end_reason,
    _end_summary,
    _end_text_ambulance,
    _end_text_contacts,
    _hard_location,
    _hard_notify,
    _hard_search,
    _hard_summary,
    _hard_text_ambulance,
    _hard_text_contacts,
)
from agents.playbooks.journal import CATEGORY, Kind, SosError, SosRun
from agents.playbooks.soft_steps import _soft_clinician, _soft_contacts, _soft_end, _soft_notify
from agents.playbooks.steps import TRIGGERS, Playbook, Step, plan
from gateway.household.model import Person

PLAYBOOKS: dict[str, Playbook] = {
    "hard": Playbook(
        CATEGORY["hard"],
        "sos",
        (
            _hard_notify,
            _hard_location,
            _hard_search,
            _hard_text_ambulance,
            _hard_text_contacts,
            _hard_summary,
        ),
        _end_reason,
    ),
    "end": Playbook(
        CATEGORY["end"],
        "sos_end",
        (_end_notify, _end_assigned, _end_text_ambulance, _end_text_contacts, _end_summary),
        _end_reason,
    ),
    "soft": Playbook(
        CATEGORY["soft"],
        "soft_sos",
        (_soft_notify, _soft_contacts, _soft_clinician),
        _soft_end,
    ),
}


def trigger_for_turn(user_turn: str) -> str:
    """The trigger whose user state is `user_turn` (what a recorded trajectory shows)."""
    for key, t in TRIGGERS.items():
        if t.user_turn.casefold() == user_turn.strip().casefold():
            return key
    return "button"


def replay_step(
    kind: Kind,
    person: Person,
    done: Sequence[ToolCall],
    *,
    trigger: str = "button",
    params: Mapping[str, Any] | None = None,
) -> Step | None:
    """The playbook's next step after `done` (None: only <END> is left), for a run that is not
    in the journal (teacher-forced evaluation). A history that left the playbook's path is
    matched by tool only as far as it agrees."""
    now = 0.0
    run = SosRun(
        run_id="replay", person=person.id, kind=kind, trigger=trigger, device=None,
        state="open", status="running", step=0, location=None, ambulance_id=None,
        ambulance_phone=None, ends_run=None, params=dict(params or {}), trajectory={},
        started_at=now, updated_at=now,
    )  # fmt: skip
    pb = PLAYBOOKS[kind]
    try:
        got = plan(pb, run, person, done)
    except SosError:
        return None
    return None if got is None else got[1]
