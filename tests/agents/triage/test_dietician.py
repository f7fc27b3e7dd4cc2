"""Diet and weight complaints go to the dietician; digestive symptoms stay with the
gastroenterologist, eating disorders with the psychiatrist, thyroid weight gain with the
endocrinologist. Paraphrases written for this test (none is a KB fragment), checked one by one
on the trained classifier and, for a few, through the whole assistant (closed loop)."""

from __future__ import annotations

import pytest

from agents.eval.scenarios import Expect, Scenario, run_scenarios
from agents.triage.classifier import Triage
from agents.triage.kb import CONDITIONS

DIET: tuple[str, ...] = (
    "I've gained a lot of weight and want help with my diet",
    "I can't stop snacking",
    "my eating is all over the place",
    "I want to lose some weight",
    "I've put on a lot of weight recently and need help with what I eat",
    "I keep eating junk food late at night",
    "I've been overeating and gaining weight",
    "I need to lose weight, my clothes don't fit anymore",
    "I eat too much and can't control my portions",
    "my diet is terrible, I eat takeaways every day",
    "I want help with my eating habits",
    "I've gained 10 kilos since Christmas",
    "my weight keeps going up",
    "I'm always hungry and keep snacking between meals",
    "I need advice on what to eat to lose weight",
    "I eat a lot of sweets and crisps",
    "my eating habits are really bad",
    "I want to get fit and lose my belly",
    "I have a sweet tooth and can't stop eating chocolate",
    "I don't eat properly, just snacks all day",
    "I want to eat better",
    "my doctor said I need to lose weight",
    "I comfort eat when I'm stressed and I've gained weight",
    "I eat irregularly and I'm gaining weight",
    "my meals are irregular and unhealthy",
    "I've become overweight",
    "I need to watch what I eat",
    "I need help with portion control",
    "I eat too much fatty food and want to eat healthier",
    "I want to cut down on sugar",
    "my tummy is getting bigger and I want to lose weight",
    "I want to improve my nutrition",
    "I'd like to see someone about my weight",
    "I keep eating biscuits at work",
    "I drink too much fizzy pop and eat crisps",
    "I want to get my weight down before my wedding",
    "I'm too heavy and want advice on food",
    "what I eat is really unhealthy",
    "I'm putting on weight and want to eat more healthily",
    "I eat very late and never have breakfast",
    "help me with my eating",
)

GASTRO: tuple[str, ...] = (
    "stomach pain and diarrhoea",
    "I have stomach pain and diarrhea",
    "I get heartburn after eating",
    "I've been vomiting and have stomach cramps",
    "I feel bloated and constipated",
    "there is blood in my stool",
    "acid reflux every night",
    "my stomach hurts after I eat and I feel sick",
    "I have had diarrhoea for a week",
    "pain in my lower right abdomen",
    "food gets stuck when I swallow",
    "I keep burping and my tummy is swollen",
    "I've had loose stools and cramps after meals",
    "my stomach is upset after eating dairy",
    "I get diarrhoea after eating fatty food",
    "I feel full very quickly and have stomach pain",
    "stomach cramps after every meal",
    "I have tummy pain and loose stools",
    "I vomit after eating",
    "constant indigestion and bloating",
    "I've been constipated for two weeks with belly pain",
    "my poo is black and I have stomach ache",
)

OTHERS: tuple[tuple[str, str], ...] = (
    ("I make myself sick after meals so I don't gain weight", "psychiatrist"),
    ("I've been starving myself to stay thin", "psychiatrist"),
    ("I'm gaining weight, always cold and my thyroid test was abnormal", "endocrinologist"),
)


def test_paraphrases_are_not_training_fragments() -> None:
    fragments = {s.lower() for c in CONDITIONS for s in c.symptoms}
    used = [t for t in (*DIET, *GASTRO, *(t for t, _ in OTHERS)) if t.lower() in fragments]
    assert used == []


@pytest.mark.parametrize("text", DIET)
def test_diet_and_weight_complaints_go_to_the_dietician(trained_triage: Triage, text: str) -> None:
    r = trained_triage.classify(text)
    assert (r.specialty, r.vague) == ("dietician", False), r.ranked[:3]


@pytest.mark.parametrize("text", GASTRO)
def test_digestive_symptoms_stay_with_the_gastroenterologist(
    trained_triage: Triage, text: str
) -> None:
    r = trained_triage.classify(text)
    assert (r.specialty, r.vague) == ("gastroenterologist", False), r.ranked[:3]


@pytest.mark.parametrize(("text", "specialty"), OTHERS)
def test_eating_disorders_and_thyroid_weight_are_not_the_dieticians(
    trained_triage: Triage, text: str, specialty: str
) -> None:
    assert trained_triage.classify(text).specialty == specialty


async def test_the_assistant_books_the_dietician_for_diet_stories(trained_triage: Triage) -> None:
    stories = [
        ("diet1", "I can't stop snacking", "dietician"),
        ("diet2", "my eating is all over the place and I've put on weight", "dietician"),
        ("diet3", "I've gained a lot of weight and want help with my diet", "dietician"),
        ("gi1", "stomach pain and diarrhoea for a few days", "gastroenterologist"),
    ]
    scenarios = [
        Scenario(
            id=i,
            utterance=u,
            details=["a few months"],
            accept=True,
            expect=Expect(specialization=spec, booked=True),
        )
        for i, u, spec in stories
    ]
    report = await run_scenarios(scenarios, trained_triage)
    got = {r.id: (r.chosen, r.booked, r.run_category) for r in report.results}
    assert got["diet1"][:2] == ("dietician", True) and got["diet1"][2] == "dietician"
    assert got["diet2"][:2] == ("dietician", True)
    assert got["diet3"][:2] == ("dietician", True)
    assert got["gi1"][:2] == ("gastroenterologist", True) and got["gi1"][2] != "dietician"
