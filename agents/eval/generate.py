"""Synthetic trajectories for all seven categories, as the brief describes: names, ids, dates
and places randomised, the tool list shuffled, reasons and messages phrased in varied ways.

Appointment flows (general, counter, negative, dietician) are scripted here from the brief's
flow descriptions and the triage knowledge base, independently of the live policy, so
evaluating the agent on them is a real check. Schedules use the documented conventions
(morning 09:00-12:00, afternoon 12:00-17:00, no preference: tomorrow 09:00-17:00). SOS flows
(hard, end, soft) come from the playbook builders: they are the fixed sequences the brief
prescribes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import date, datetime, time, timedelta
from typing import Any

from agents.assistant.schedule import slot_text
from agents.assistant.trajectory import ToolCall, Trajectory
from agents.eval.predictor import TOOLS, soft_params
from agents.playbooks.catalog import replay_step
from agents.playbooks.soft_texts import soft_user_turn
from agents.playbooks.steps import Step
from agents.triage.kb import CONDITIONS, FOLLOW_UPS, VAGUE_UTTERANCES, Condition
from gateway.contract.topics import Location
from gateway.household.model import Contact, Person

CATEGORIES = ("general", "counter", "negative", "dietician", "hard_sos", "end_sos", "soft_sos")

FIRST = ("Nadia", "Tomas", "Amara", "Li", "Sofia", "Kwame", "Ines", "Raj", "Hana", "Oskar",
         "Maya", "Diego", "Yuki", "Fatima", "Leo", "Zara", "Ivan", "Chloe", "Omar", "Greta")  # fmt: skip
LAST = ("Haddad", "Berg", "Okafor", "Wei", "Rossi", "Mensah", "Silva", "Patel", "Sato",
        "Nilsson", "Cohen", "Garcia", "Novak", "Khan", "Moreau", "Ali", "Fischer", "Reid")  # fmt: skip
PREFIX = {
    "general physician": "GP", "cardiologist": "CARD", "pulmonologist": "PULM",
    "gastroenterologist": "GAST", "neurologist": "NEUR", "orthopedist": "ORTH",
    "dermatologist": "DERM", "endocrinologist": "ENDO", "nephrologist": "NEPH",
    "urologist": "UROL", "gynecologist": "GYNE", "ophthalmologist": "OPHT",
    "ent specialist": "ENT", "psychiatrist": "PSYC", "oncologist": "ONCO",
    "rheumatologist": "RHEU", "hematologist": "HEMA", "dietician": "DIET",
}  # fmt: skip

MORNING, AFTERNOON, WORKDAY = (time(9), time(12)), (time(12), time(17)), (time(9), time(17))

OPENERS = ("I have {s}.", "I've been having {s}.", "For the past few days I've had {s}.",
           "{S}.", "Lately I get {s}.", "I keep getting {s}.", "I'm worried about {s}.")  # fmt: skip
YES = ("Yes, please book it.", "Yes please", "Sure, go ahead.", "OK, book it.", "Yes, that works.")
NO = ("No, not right now.", "No thanks.", "Not now, maybe later.", "No, I'll wait.")
DONT_KNOW = ("I don't know", "Any time is fine", "No preference", "Whenever")
REASONS = {
    "past": ("The user reports {s}; check whether this happened before.",
             "Clear symptoms; look at earlier complaints first.",
             "Check the history for similar complaints."),
    "schedule": ("Ask when the user is free before searching for a specialist.",
                 "A slot must fit the user's schedule; ask for it."),
    "search": ("The symptoms ({s}) fit a {spec}.", "These symptoms are for a {spec}.",
               "A {spec} is the right specialist here."),
    "offer": ("{name} is free; offer the slot.", "A slot was found; ask the user."),
    "confirm": ("The user accepted the slot.", "The user said yes; book it."),
    "save": ("The appointment is booked; record it in the history.",
             "Booked; save the appointment history."),
    "store": ("The appointment is saved; keep the symptoms.", "Store the symptoms for later."),
    "store_no": ("The user declined; keep the symptoms for later.",
                 "No booking; store the symptoms."),
    "notify": ("Symptoms stored; tell the user.", "Tell the user what was done."),
    "follow_up": ("The symptoms are too vague to choose a specialist; ask a follow-up question first.",
                  "Too little to go on; ask the user for more detail."),
    "end": ("Done.", "The task is complete.", "Everything is done."),
}  # fmt: skip
ACTIONS = {
    "past": ("Use retrieve_past_complaints for similar complaints.",
             "Call retrieve_past_complaints."),
    "schedule": ("Ask the user for a preferred date and time.",
                 "Use get_input_from_user to ask for a suitable time."),
    "search": ("Use get_available_specialists for a {spec}.",
               "Call get_available_specialists with the schedule."),
    "offer": ("Offer the slot to the user.", "Ask the user whether to book the slot."),
    "confirm": ("Confirm the appointment.", "Call confirm_appointment."),
    "save": ("Save the appointment history.", "Call save_appointment_history."),
    "store": ("Store the symptoms.", "Call store_symptoms."),
    "notify": ("Notify the user.", "Call notify_user."),
    "follow_up": ("Ask the user a follow-up question about their symptoms.",
                  "Use get_input_from_user for more detail."),
}  # fmt: skip
SCHEDULE_QUESTIONS = (
    "Which day and time would suit you for an appointment?",
    "When would you be free for an appointment?",
    "What day and time works best for you?",
)
OFFERS = (
    "{name} is free on {when}. Shall I book it?",
    "I found {name} on {when}. Would you like me to book it?",
    "{name} has a slot on {when}. Do you want it?",
)
BOOKED = (
    "Your appointment with {name} is booked for {when}. I have saved your symptoms so the "
    "doctor can see them.",
    "Booked: {name} on {when}. Your symptoms are saved.",
    "You are booked with {name} on {when}. I saved your symptoms for the doctor.",
)
DECLINED = (
    "I have noted your symptoms. Tell me whenever you would like me to book an appointment.",
    "Your symptoms are saved. Ask me any time if you want an appointment.",
)


def _when(d: datetime) -> str:
    return f"{d:%A} {d.day} {d:%B} at {d:%H:%M}"


def _uid(rng: random.Random) -> str:
    letters = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(4))
    return f"{letters}{rng.randint(100000, 999999)}"


def _phone(rng: random.Random) -> str:
    return f"+4477009{rng.randint(10000, 99999)}"


def _schedule(rng: random.Random, today: date) -> tuple[str, date, tuple[time, time]]:
    """(what the user says, the date, the time range) by the documented conventions."""
    kind = rng.randrange(6)
    if kind == 0:
        return "Tomorrow morning", today + timedelta(days=1), MORNING
    if kind == 1:
        return "Tomorrow afternoon", today + timedelta(days=1), AFTERNOON
    if kind == 2:
        monday = today + timedelta(days=7 - today.weekday())
        return "Any weekday morning next week", monday, MORNING
    if kind == 3:
        k = rng.randrange(5)
        name = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")[k]
        ahead = (k - today.weekday()) % 7 or 7
        part, rng_ = rng.choice((("morning", MORNING), ("afternoon", AFTERNOON)))
        return f"{name} {part}", today + timedelta(days=ahead), rng_
    if kind == 4:
        d = today + timedelta(days=rng.randint(3, 20))
        return f"On {d.day} {d:%B} at 10am", d, (time(10), time(11))
    return rng.choice(DONT_KNOW), today + timedelta(days=1), WORKDAY


def _slot(rng: random.Random, day: date, rng_: tuple[time, time]) -> tuple[datetime, datetime]:
    d = day + timedelta(days=rng.choice((0, 0, 0, 1, 2)))
    start_h = rng_[0].hour
    span = max(1, rng_[1].hour - start_h)
    start = datetime.combine(d, time(start_h)) + timedelta(minutes=30 * rng.randrange(span * 2))
    if start.time() >= rng_[1]:
        start = datetime.combine(d, rng_[0])
    return start, start + timedelta(minutes=30)


def _states_start(rng: random.Random) -> tuple[Trajectory, str, str, datetime]:
    name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    uid = _uid(rng)
    ts = datetime(2026, 1, 1, 8) + timedelta(
        days=rng.randrange(700), minutes=rng.randrange(12 * 60)
    )
    traj = Trajectory(uid, name, ts.isoformat(timespec="seconds"))
    return traj, uid, name, ts


def _with_tools(traj: Trajectory, rng: random.Random, category: str) -> dict[str, Any]:
    d = traj.to_dict()
    d["category"] = category
    tools = list(TOOLS)
    rng.shuffle(tools)
    d["interaction_trajectory"][0]["value"]["tools"] = tools
    return d


def _pick(rng: random.Random, key: str, **kw: str) -> str:
    return rng.choice(REASONS[key]).format(**kw)


def _act(rng: random.Random, key: str, **kw: str) -> str:
    return rng.choice(ACTIONS[key]).format(**kw)


def _fragments(rng: random.Random, c: Condition) -> list[str]:
    return rng.sample(list(c.symptoms), k=min(len(c.symptoms), rng.choice((1, 2, 2, 3))))


def _utterance(rng: random.Random, frags: Sequence[str]) -> str:
    s = frags[0] if len(frags) == 1 else ", ".join(frags[:-1]) + " and " + frags[-1]
    return rng.choice(OPENERS).format(s=s, S=s[0].upper() + s[1:])


def appointment(rng: random.Random, category: str) -> dict[str, Any]:
    pool = [c for c in CONDITIONS if (c.specialty == "dietician") == (category == "dietician")]
    cond = rng.choice(pool)
    spec = cond.specialty
    frags = _fragments(rng, cond)
    symptoms = ", ".join(frags)
    traj, uid, _, ts = _states_start(rng)
    if category == "counter":
        traj.user(rng.choice(VAGUE_UTTERANCES))
        topic = rng.choice(sorted(FOLLOW_UPS))
        q = rng.choice(FOLLOW_UPS[topic])
        traj.step(_pick(rng, "follow_up"), _act(rng, "follow_up"), "get_input_from_user",
                  {"user_id": uid, "questions": q}, _utterance(rng, frags))  # fmt: skip
    else:
        traj.user(_utterance(rng, frags))
    past: list[dict[str, str]] = []
    if rng.random() < 0.3:
        d = ts.date() - timedelta(days=rng.randint(20, 400))
        past = [{"date": d.isoformat(), "symptoms": rng.choice(cond.symptoms)}]
    traj.step(_pick(rng, "past", s=symptoms), _act(rng, "past"), "retrieve_past_complaints",
              {"user_id": uid, "symptoms": symptoms}, past)  # fmt: skip
    said, day, rng_ = _schedule(rng, ts.date())
    traj.step(_pick(rng, "schedule"), _act(rng, "schedule"), "get_input_from_user",
              {"user_id": uid, "questions": rng.choice(SCHEDULE_QUESTIONS)}, said)  # fmt: skip
    sched = {"date": day.isoformat(), "time_range": f"{rng_[0]:%H:%M}-{rng_[1]:%H:%M}"}
    sid = f"{PREFIX[spec]}-{rng.randint(100, 999)}"
    doc = f"Dr. {rng.choice(FIRST)} {rng.choice(LAST)} ({spec.title().replace('Ent ', 'ENT ')})"
    start, end = _slot(rng, day, rng_)
    found = {
        "specialist_id": sid,
        "name": doc,
        "available_slot": {"date": start.date().isoformat(), "time": f"{start:%H:%M}-{end:%H:%M}"},
    }
    traj.step(_pick(rng, "search", s=symptoms, spec=spec), _act(rng, "search", spec=spec),
              "get_available_specialists",
              {"symptoms": symptoms, "specialization": spec, "user_schedule": sched}, found)  # fmt: skip
    accept = category != "negative"
    traj.step(_pick(rng, "offer", name=doc), _act(rng, "offer"), "get_input_from_user",
              {"user_id": uid, "questions": rng.choice(OFFERS).format(name=doc, when=_when(start))},
              rng.choice(YES if accept else NO))  # fmt: skip
    slot = slot_text(start, end)
    stamp = ts.isoformat(timespec="seconds")
    if accept:
        traj.step(
            _pick(rng, "confirm"),
            _act(rng, "confirm"),
            "confirm_appointment",
            {"user_id": uid, "specialist_id": sid, "appointment_time_date": slot},
            True,
        )
        traj.step(
            _pick(rng, "save"),
            _act(rng, "save"),
            "save_appointment_history",
            {
                "user_id": uid,
                "symptoms": symptoms,
                "specialist_id": sid,
                "appointment_time_date": slot,
            },
            True,
        )
        traj.step(
            _pick(rng, "store"),
            _act(rng, "store"),
            "store_symptoms",
            {"user_id": uid, "symptoms": symptoms, "timestamp": stamp},
            True,
        )
        msg = rng.choice(BOOKED).format(name=doc, when=_when(start))
    else:
        traj.step(
            _pick(rng, "store_no"),
            _act(rng, "store"),
            "store_symptoms",
            {"user_id": uid, "symptoms": symptoms, "timestamp": stamp},
            True,
        )
        msg = rng.choice(DECLINED)  # fmt: skip
    traj.step(
        _pick(rng, "notify"),
        _act(rng, "notify"),
        "notify_user",
        {"user_id": uid, "message": msg},
        True,
    )
    traj.end(_pick(rng, "end"))
    return _with_tools(traj, rng, category)


def _person(rng: random.Random, uid: str, name: str) -> Person:
    contacts = [
        Contact(name=f"{rng.choice(FIRST)} {rng.choice(LAST)}", phone=_phone(rng))
        for _ in range(rng.randint(1, 3))
    ]
    return Person(
        id=uid, name=name, birth_date=date(1950 + rng.randrange(50), 1 + rng.randrange(12), 1),
        sex=rng.choice(("female", "male")),
        location=Location(latitude=round(rng.uniform(50, 55), 5),
                          longitude=round(rng.uniform(-3, 1), 5)),
        emergency_contacts=contacts,
    )  # fmt: skip


def sos(rng: random.Random, category: str) -> dict[str, Any]:
    from agents.playbooks.steps import TRIGGERS  # the user turns the runner records

    traj, uid, name, _ = _states_start(rng)
    person = _person(rng, uid, name)
    kind = {"hard_sos": "hard", "end_sos": "end", "soft_sos": "soft"}[category]
    params: dict[str, Any] | None = None
    trigger = "button"
    if kind == "hard":
        trigger = rng.choice(sorted(TRIGGERS))
        traj.user(TRIGGERS[trigger].user_turn)
    elif kind == "end":
        traj.user(rng.choice(("End SOS", "SOS ended by the user", "Cancel SOS: false alarm")))
    else:
        vitals = rng.sample(
            [("spo2", rng.randint(82, 90)), ("heart_rate", rng.randint(120, 160)),
             ("respiratory_rate", rng.randint(25, 32)), ("systolic_bp", rng.randint(80, 89)),
             ("temperature_c", round(rng.uniform(39.2, 40.5), 1))],
            k=rng.randint(1, 3),
        )  # fmt: skip
        turn = soft_user_turn({k: {"value": v} for k, v in vitals})
        traj.user(turn)
        params = soft_params(turn)
    done: list[ToolCall] = []
    here = (person.location.latitude + rng.uniform(-0.01, 0.01),
            person.location.longitude + rng.uniform(-0.01, 0.01))  # fmt: skip
    amb = {"ambulance_id": f"AMB-{rng.randint(10, 99)}", "phone_no": _phone(rng)}
    while True:
        step: Step | None = replay_step(kind, person, done, trigger=trigger, params=params)  # type: ignore[arg-type]
        if step is None:
            break
        result: Any = True
        if step.tool == "get_location":
            result = {"latitude": round(here[0], 5), "longitude": round(here[1], 5)}
        elif step.tool in ("search_ambulance", "get_assigned_ambulance"):
            result = dict(amb)
        traj.step(step.reason, step.action, step.tool, step.params, result)
        done.append(ToolCall(step.reason, step.action, step.tool, step.params, result))
    traj.end(
        "The user has been informed."
        if kind == "soft"
        else "Everything is done and the user has been told."
    )
    return _with_tools(traj, rng, category)


def generate(
    n: int, *, seed: int = 0, categories: Sequence[str] = CATEGORIES
) -> list[dict[str, Any]]:
    """`n` trajectories, cycling through `categories`, reproducible for a seed."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        cat = categories[i % len(categories)]
        out.append(sos(rng, cat) if cat.endswith("_sos") else appointment(rng, cat))
    return out
