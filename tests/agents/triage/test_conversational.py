"""Conversational phrasings: euphemisms, rambling with filler, family history, test requests,
indirect descriptions and lay body words. Written by hand without looking at the KB fragments
and never used for training or for building the lexicon; a check of generalisation to the way
people actually talk."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.triage.classifier import Triage
from gateway.household.model import SPECIALIZATIONS

CONVERSATIONAL: tuple[tuple[str, str], ...] = (
    # general physician
    (
        "honestly I just feel like I've been hit by a bus, shivery and hot and everything aches",
        "general physician",
    ),
    ("haven't had a check-up in about five years, probably about time", "general physician"),
    ("work wants a doctor's note because I was off sick with a bug all week", "general physician"),
    ("my little girl is burning up and won't eat anything, poor thing", "general physician"),
    # cardiologist
    ("my ticker does this flip-flop thing when I'm lying in bed", "cardiologist"),
    (
        "my dad had a heart attack at 50 and my brother too, I want my heart checked out",
        "cardiologist",
    ),
    (
        "sort of a tight squeezing feeling behind my breastbone when I rush for the bus",
        "cardiologist",
    ),
    ("the nurse said my pressure was through the roof again", "cardiologist"),
    # pulmonologist
    (
        "I can't really put my finger on it but I get puffed out just walking to the shops and "
        "there's this whistling when I breathe",
        "pulmonologist",
    ),
    ("this chesty cough has hung around since winter and I keep bringing up gunk", "pulmonologist"),
    (
        "my wife says I stop breathing in the night and then gasp, I'm shattered all day",
        "pulmonologist",
    ),
    ("smoked for 40 years and I want my lungs looked at", "pulmonologist"),
    # gastroenterologist
    ("a sour taste creeping up my throat after dinner most nights", "gastroenterologist"),
    ("my gut's been a mess, either running to the loo or totally blocked up", "gastroenterologist"),
    ("there was bright red blood on the paper when I wiped after going", "gastroenterologist"),
    (
        "my mum had bowel cancer so I think I should be tested, I'm turning 45",
        "gastroenterologist",
    ),
    ("my belly blows up like a balloon after every meal", "gastroenterologist"),
    # neurologist
    (
        "these pounding heads come on with zigzag lights in my vision and I have to lie in the dark",
        "neurologist",
    ),
    ("my nan keeps forgetting who we are and getting lost in her own street", "neurologist"),
    (
        "pins and needles down one side that came and went, and my words came out jumbled",
        "neurologist",
    ),
    ("I blacked out and my partner said I was jerking on the floor", "neurologist"),
    # orthopedist
    ("went over on my ankle at football and it's swollen like a grapefruit", "orthopedist"),
    ("my back went when I picked up the shopping and I can barely stand straight", "orthopedist"),
    ("my knee gives way on the stairs and makes a grinding noise", "orthopedist"),
    ("came off my bike and my wrist is really sore and bent looking", "orthopedist"),
    # dermatologist
    ("I've got these angry red itchy patches on my elbows that flake off", "dermatologist"),
    ("a freckle on my shoulder has gone darker and bigger and a bit ragged", "dermatologist"),
    ("my teenager's face is covered in spots and it's knocking his confidence", "dermatologist"),
    ("my hair is coming out in clumps in the shower", "dermatologist"),
    # endocrinologist
    (
        "I'm freezing all the time even in summer, piling on weight and so sluggish",
        "endocrinologist",
    ),
    ("I'm always parched and up all night to wee, my gran had sugar diabetes", "endocrinologist"),
    (
        "there's a swelling at the front of my neck and I've gone all jittery and sweaty",
        "endocrinologist",
    ),
    ("my sugars are all over the place even with the insulin", "endocrinologist"),
    # nephrologist
    ("the GP said my kidney numbers on the blood test are getting worse", "nephrologist"),
    ("my wee has gone really frothy and my ankles are puffing up", "nephrologist"),
    ("I'm on dialysis and want to be seen about a transplant", "nephrologist"),
    ("polycystic kidneys run in my family, can I get checked", "nephrologist"),
    # urologist
    ("things aren't working downstairs like they used to, if you know what I mean", "urologist"),
    ("can't keep it up anymore and it's getting embarrassing", "urologist"),
    ("it stings like mad when I go to the toilet and I'm going every ten minutes", "urologist"),
    ("my husband dribbles and takes forever to get going at the urinal", "urologist"),
    ("one of my testicles feels heavy and has a lump on it", "urologist"),
    # gynecologist
    ("my monthlies are so heavy I'm flooding through everything", "gynecologist"),
    ("we've been trying for a baby for two years with no luck", "gynecologist"),
    ("I've got an itchy discharge down there that smells funny", "gynecologist"),
    ("hot sweats and mood swings, I think it's the change", "gynecologist"),
    ("I'm due a smear test and I've had some bleeding after sex", "gynecologist"),
    # ophthalmologist
    ("everything looks foggy like I'm peering through a dirty window", "ophthalmologist"),
    ("there are little black specks drifting across when I look at the sky", "ophthalmologist"),
    ("my eye is all gunky and pink and stuck shut when I wake up", "ophthalmologist"),
    ("glaucoma runs in the family so I'd like my pressure checked", "ophthalmologist"),
    # ent specialist
    ("there's a constant buzzing in my ears, especially when it's quiet", "ent specialist"),
    ("my lad keeps getting tonsillitis, that's the fourth time this year", "ent specialist"),
    ("I can't hear the telly properly and everyone says I'm shouting", "ent specialist"),
    ("my nose is permanently bunged up and I can't smell a thing", "ent specialist"),
    # psychiatrist
    ("I just can't be bothered with anything anymore and I cry for no reason", "psychiatrist"),
    ("my mind races all night and I feel on edge all the time", "psychiatrist"),
    ("I've had dark thoughts and I don't see the point of things", "psychiatrist"),
    (
        "I check the door locks twenty times before I can leave, it's taking over my life",
        "psychiatrist",
    ),
    # oncologist
    (
        "my sister had breast cancer and so did my aunt, I want to get tested for the gene",
        "oncologist",
    ),
    ("I've been losing weight without trying and found a hard lump in my armpit", "oncologist"),
    ("I finished chemo last year and need a follow-up about my scans", "oncologist"),
    ("the biopsy came back and they said it's malignant, who do I see now", "oncologist"),
    # rheumatologist
    ("my fingers are stiff as anything first thing and the knuckles are puffy", "rheumatologist"),
    (
        "my big toe went red hot and agony overnight, can't even bear the sheet on it",
        "rheumatologist",
    ),
    ("I ache in all my joints and get a butterfly rash on my face in the sun", "rheumatologist"),
    ("my mum has rheumatoid and now my hands are starting to swell", "rheumatologist"),
    # hematologist
    ("I bruise super easily and get nosebleeds that won't stop", "hematologist"),
    (
        "my mum had a blood clot in her leg at 40, should I be tested for a clotting disorder",
        "hematologist",
    ),
    (
        "my iron keeps coming back low even though I take tablets, I'm pale and shattered",
        "hematologist",
    ),
    ("my gums bleed loads and I've got little red dots all over my legs", "hematologist"),
    # dietician
    (
        "I want to sort out my eating, I've put on three stone and need a proper plan",
        "dietician",
    ),
    ("I've just been told I'm coeliac and have no idea what I can eat now", "dietician"),
    ("my son is a really fussy eater and I'm worried he's not getting enough", "dietician"),
    ("I'm training for a marathon and want advice on what to eat", "dietician"),
)


@pytest.fixture(scope="module")
def triage(triage_cache_dir: Path, training_seconds: float) -> Iterator[Triage]:
    yield Triage.load(triage_cache_dir)


def test_conversational_set_covers_every_specialty() -> None:
    counts = {s: sum(1 for _, y in CONVERSATIONAL if y == s) for s in SPECIALIZATIONS}
    assert min(counts.values()) >= 3, counts
    assert len(CONVERSATIONAL) >= 60
    assert {y for _, y in CONVERSATIONAL} <= set(SPECIALIZATIONS)


def test_conversational_accuracy(triage: Triage) -> None:
    misses = []
    for text, want in CONVERSATIONAL:
        got = triage.classify(text)
        if got.specialty != want:
            misses.append((text, want, got.specialty, round(got.confidence, 2)))
    acc = 1 - len(misses) / len(CONVERSATIONAL)
    print(f"\nconversational accuracy: {acc:.3f} on {len(CONVERSATIONAL)}; misses:")
    for m in misses:
        print("  ", m)
    assert acc >= 0.88  # 0.93 when written (0.77 before the lay lexicon and new templates)
