"""The model's roles: what passes the checks is used, anything else falls back, and the
model never changes which tool runs."""

from __future__ import annotations

from agents.assistant.model_roles import Roles, grounded, numbers_ok, overlap, repetitive
from tests.llm_double import ScriptedModel


async def started(*items: object) -> ScriptedModel:
    m = ScriptedModel(list(items))  # type: ignore[arg-type]
    await m.start()
    return m


async def test_reason_used_only_when_it_is_about_this_step() -> None:
    draft = "The user accepted the slot."
    good = await started(
        {"reason": "The user accepted the offered slot.", "tool": "confirm_appointment"}
    )
    r = Roles(good)
    assert await r.reason(
        "Step: confirm\nDraft reason: " + draft, ["confirm_appointment"], draft
    ) == (
        "The user accepted the offered slot.",
        "confirm_appointment",
    )
    parrot = await started(
        {"reason": "chest pain when I climb stairs", "tool": "confirm_appointment"}
    )
    ctx = "User said: chest pain when I climb stairs\nDraft reason: " + draft
    assert (await Roles(parrot).reason(ctx, ["confirm_appointment"], draft))[0] == draft
    invented = await started(
        {"reason": "The user accepted the slot at 11:45.", "tool": "confirm_appointment"}
    )
    assert (await Roles(invented).reason(ctx, ["confirm_appointment"], draft))[0] == draft


async def test_say_keeps_every_fact_or_falls_back() -> None:
    tpl = "Dr. Nair (Cardiologist) is free on Tuesday 17 March at 09:00. Shall I book it?"
    facts = ("Dr. Nair (Cardiologist)", "09:00", "17")
    ok = await started(
        {
            "text": "Dr. Nair (Cardiologist) can see you on Tuesday 17 March at 09:00. Shall I book it?"
        }
    )
    assert "can see you" in await Roles(ok).say("offer", tpl, facts, question=True)
    dropped = await started({"text": "A doctor is free on Tuesday. Shall I book it?"})
    assert await Roles(dropped).say("offer", tpl, facts, question=True) == tpl
    not_a_question = await started(
        {"text": "Dr. Nair (Cardiologist) is free on Tuesday 17 March at 09:00."}
    )
    assert await Roles(not_a_question).say("offer", tpl, facts, question=True) == tpl
    failed = await started("timeout")
    r = Roles(failed)
    assert await r.say("offer", tpl, facts, question=True) == tpl
    assert r.summary()["caller"]["rejected"] == {"timeout": 1}


async def test_symptoms_must_be_the_users_words() -> None:
    said = "My knees ache every morning and my fingers are swollen"
    draft = "knees ache every morning, swollen fingers"  # agents.triage.condense's list
    ok = await started({"symptoms": "morning knee aches, swollen fingers"})
    assert await Roles(ok).symptoms(said, draft) == "morning knee aches, swollen fingers"
    invented = await started({"symptoms": "arthritis"})
    assert await Roles(invented).symptoms(said, draft) == draft
    loop = await started({"symptoms": "knee aches, knee aches, knee aches"})
    assert await Roles(loop).symptoms(said, draft) == draft


async def test_symptom_polish_may_not_drop_a_term() -> None:
    said = "I've been extremely fatigued with chills, body aches and a sore throat"
    draft = "fatigue, chills, body aches, sore throat"
    dropped = await started({"symptoms": "fatigue, body aches, sore throat"})
    r = Roles(dropped)
    assert await r.symptoms(said, draft) == draft
    assert r.summary()["symptoms"]["rejected"] == {"ungrounded": 1}
    polished = await started({"symptoms": "fatigue and chills, sore throat, body aches"})
    assert (
        await Roles(polished).symptoms(said, draft) == "fatigue and chills, sore throat, body aches"
    )


async def test_yes_no_and_absent_model() -> None:
    m = await started({"answer": "yes"}, {"answer": "unclear"})
    r = Roles(m)
    assert await r.yes_no("Shall I book it?", "go for it") == "yes"
    assert await r.yes_no("Shall I book it?", "hmm") == "unclear"
    off = Roles(None)
    assert not off.on
    assert await off.say("offer", "Text?", (), question=True) == "Text?"
    assert await off.reason("x", ["a"], "draft") == ("draft", None)
    assert await off.yes_no("q", "a") == "unclear"


def test_checks() -> None:
    assert numbers_ok("at 09:00 on 17", "Tuesday 17 March at 09:00")
    assert not numbers_ok("at 10:00", "at 09:00")
    assert grounded("swollen fingers", "my fingers are swollen")
    assert not grounded("arthritis", "my fingers are swollen")
    assert overlap("", "x") == 0.0
    assert (
        repetitive("pain, pain")
        and repetitive("chest chest chest")
        and not repetitive("chest pain")
    )
