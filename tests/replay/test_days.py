"""The ordinary-day library through the replay: generated days are reproducible and valid
traces, ordinary days are quiet, every deterioration reaches the people the tier table names.
(The full measurement, 7 days per persona on fresh seeds, is `healthgw days score`;
docs/clinical.md §9 has its numbers.)"""

from __future__ import annotations

import asyncio

import pytest

from gateway.household.model import load_household
from healthgw.replay.days import DEFAULT_LIBRARY, deterioration_score, persona_burden
from simulators.days.day import trace
from simulators.days.spec import load_library

LIB = load_library(DEFAULT_LIBRARY)
HH = load_household(LIB.household)
SEED = 11  # not a tuning seed (docs/clinical.md §9)


def test_the_library_has_the_personas_and_deteriorations_the_issue_asks_for() -> None:
    assert len(LIB.personas) >= 8 and len(LIB.deteriorations) >= 6
    for p in LIB.personas.values():
        assert p.sources, f"{p.id} cites no source"
        assert HH.person(p.person) is not None


def test_a_persona_day_is_reproducible_and_in_time_order() -> None:
    a = trace(LIB, "elsie", days=1, seed=5)
    assert a == trace(LIB, "elsie", days=1, seed=5) and a != trace(LIB, "elsie", days=1, seed=6)
    assert [x["ts"] for x in a] == sorted(x["ts"] for x in a)
    assert 1200 < sum(1 for x in a if x["device"] == "elsie-watch") < 1440  # gaps and charging
    assert sum(1 for x in a if x["device"] == "elsie-cuff") >= 2


@pytest.mark.parametrize("persona", sorted(LIB.personas))
def test_an_ordinary_day_texts_nobody(persona: str) -> None:
    b, _ = asyncio.run(persona_burden(LIB, HH, persona, seed=SEED, days=1))
    assert b.texts == {"family": 0, "clinician": 0, "ambulance": 0}
    assert b.hard_sos == 0 and b.prompts <= 1


@pytest.mark.parametrize("det", sorted(LIB.deteriorations))
def test_every_deterioration_reaches_the_people_it_should(det: str) -> None:
    d = LIB.deteriorations[det]
    score, _ = asyncio.run(deterioration_score(LIB, HH, d, seed=SEED))
    assert score.first_past is not None
    for role in d.expect:
        assert score.delay(role) is not None, f"{role} was never texted"
