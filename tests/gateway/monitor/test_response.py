"""Who is told: the tier table of docs/clinical.md §6."""

from __future__ import annotations

import pytest

from gateway.monitor.profile import Profile
from gateway.monitor.response import decide, unconfirmed_value

ADULT, CHILD, PREGNANT = (
    Profile(age=45),
    Profile(age=6),
    Profile(age=30, conditions=frozenset({"pregnancy"})),
)


@pytest.mark.parametrize(
    ("profile", "severity", "tier", "contacts_now", "clinician_now", "on_no_answer"),
    [
        (ADULT, "abnormal", 1, False, False, "none"),
        (ADULT, "low-medium", 2, False, False, "contacts"),
        (ADULT, "critical", 2, False, False, "contacts"),
        (ADULT, "medium", 3, True, False, "contacts"),
        (ADULT, "high", 4, True, True, "hard_sos"),
        (ADULT, "intervention", 4, True, True, "hard_sos"),
        (CHILD, "abnormal", 1, False, False, "none"),
        (CHILD, "critical", 3, True, False, "contacts"),  # carers at once, never an ambulance
        (CHILD, "intervention", 4, True, True, "hard_sos"),
        (PREGNANT, "critical", 3, True, True, "contacts"),  # the midwife too
        (PREGNANT, "medium", 3, True, True, "contacts"),
    ],
)
def test_tiers(
    profile: Profile, severity: str, tier: int, contacts_now: bool, clinician_now: bool,
    on_no_answer: str,
) -> None:  # fmt: skip
    r = decide([("x", severity)], profile, retrospective=False)
    assert (r.tier, r.contacts_now, r.clinician_now, r.on_no_answer) == (
        tier, contacts_now, clinician_now, on_no_answer,
    )  # fmt: skip
    # Low priority (tier 1) is recorded and shown; every other tier tells and asks the wearer.
    assert r.tell_wearer == r.ask == (tier >= 2)
    assert r.priority == {1: "low", 2: "medium", 3: "medium", 4: "high"}[tier]


def test_during_an_open_hard_sos_nobody_is_asked_but_the_care_line_hears_an_emergency() -> None:
    r = decide([("x", "critical")], ADULT, retrospective=False, sos_open=True)
    assert (r.tier, r.tell_wearer, r.ask, r.contacts_now, r.on_no_answer) == (
        2, False, False, False, "none",
    )  # fmt: skip
    r = decide([("x", "intervention")], ADULT, retrospective=False, sos_open=True)
    assert r.clinician_now and not r.ask and not r.contacts_now


def test_the_worst_condition_decides() -> None:
    r = decide(
        [("a", "abnormal"), ("news2", "high"), ("b", "critical")], ADULT, retrospective=False
    )
    assert r.tier == 4 and r.level == "emergency"


def test_late_data_is_only_recorded() -> None:
    r = decide([("news2", "high")], ADULT, retrospective=True)
    assert (r.tier, r.tell_wearer, r.ask, r.contacts_now, r.on_no_answer) == (
        0, False, False, False, "none",
    )  # fmt: skip
    assert unconfirmed_value(moving=False, retrospective=True).ask is False


def test_an_unreadable_vital_is_asked_and_escalates() -> None:
    still = unconfirmed_value(moving=False, retrospective=False)
    assert (still.ask, still.tell_wearer, still.on_no_answer) == (True, False, "hard_sos")
    assert unconfirmed_value(moving=True, retrospective=False).on_no_answer == "contacts"
