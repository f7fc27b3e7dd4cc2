"""The word lists and sentence templates the triage training generator (agents.triage.synth)
draws from: paraphrase groups, openers, durations, closers, clause templates, hedges, the small
grammar of vague complaints and the evaluative adjectives.

Data only, kept apart from the generator's code so the code reads in one screen and the lists
can grow without touching it. Editing any list changes the generated training set, so the
classifier's model key hashes this file too.
"""

from __future__ import annotations

# Interchangeable lay phrasings. Any member found as a whole phrase may be swapped for another
# member of its group. Members of a group must be grammatically interchangeable.
PARAPHRASES: tuple[tuple[str, ...], ...] = (
    ("stomach", "tummy", "belly"),
    ("pee", "urinate", "wee", "pass urine"),
    ("peeing", "urinating", "passing urine"),
    ("short of breath", "breathless", "out of breath", "winded"),
    ("tired", "exhausted", "worn out", "drained"),
    ("throw up", "vomit", "be sick"),
    ("throwing up", "vomiting"),
    ("dizzy", "lightheaded", "woozy"),
    ("poop", "stool", "bowel movement"),
    ("diarrhea", "diarrhoea", "the runs", "loose motions"),
    ("painful", "sore"),
    ("hurts", "aches"),
    ("really", "very", "super", "quite"),
    ("weird", "strange", "odd"),
    ("lately", "recently", "these days"),
    ("i'm", "i am"),
    ("i've", "i have"),
    ("can't", "cannot"),
    ("doesn't", "does not"),
    ("won't", "will not"),
    ("a lot", "all the time", "constantly"),
    ("swollen", "puffy"),
    ("kid", "child"),
    ("feel", "get"),
    ("lump", "bump"),
    ("blood test", "blood work", "lab test"),
)

OPENERS: tuple[str, ...] = (
    "",
    "",
    "",
    "hi, ",
    "hello, ",
    "hi doctor, ",
    "so ",
    "well, ",
    "um, ",
    "ok so ",
    "good morning, ",
    "i need help, ",
    "i want to book an appointment, ",
    "booking for my mother, ",
    "for my husband: ",
    "about my son, ",
)

DURATIONS: tuple[str, ...] = (
    "for the past two weeks",
    "since yesterday",
    "for a few days",
    "for months now",
    "on and off for a year",
    "since last week",
    "for about a month",
    "since the weekend",
    "for a long time",
    "every day",
    "lately",
    "recently",
)

INTENSITY: tuple[str, ...] = ("really", "quite", "very", "a bit", "kind of", "so")

CLOSERS: tuple[str, ...] = (
    "",
    "",
    "",
    " what kind of doctor should i see?",
    " who should i book?",
    " which specialist do i need?",
    " is this serious?",
    " can i get an appointment?",
    " please help.",
    " what should i do?",
    " it's getting worse.",
    " it's been bothering me.",
)

# {a}, {b}, {c} are symptom fragments; {d} a duration.
TEMPLATES_1: tuple[str, ...] = (
    "{a}",
    "{a}.",
    "{a} {d}",
    "{d}, {a}",
    "i've got {a}",
    "i have {a}",
    "i've been having {a}",
    "lately {a}",
    "should i see someone about {a}?",
    "who treats {a}?",
    "what doctor do i need for {a}?",
    "problem: {a}",
    "i'm worried because {a}",
    "i noticed {a} {d}",
    "{a} and it's not getting better",
    "{a}, it started {d}",
    "it's about {a}",
    "the issue is {a}",
    "my main complaint is {a}",
    "{a}, any idea who i should see?",
)

TEMPLATES_2: tuple[str, ...] = (
    "{a} and {b}",
    "{a}, also {b}",
    "{a}. also {b}.",
    "i have {a} and {b}",
    "{d} {a} and {b}",
    "{a}. {b}. what should i do?",
    "{a}, plus {b}",
    "{a} and sometimes {b}",
    "{a}; {b}",
    "first {a}, now {b}",
    "{a} and on top of that {b}",
    "should i see someone about {a} and {b}?",
    "{a} {d}, and {b}",
    "{b} and {a}",
)

TEMPLATES_3: tuple[str, ...] = (
    "{a}, {b} and {c}",
    "{a}. {b}. {c}.",
    "i have {a}, {b}, and {c}",
    "{a} and {b}, also {c}",
    "{d}: {a}, {b}, {c}",
    "{a}; also {b} and {c}",
)

VAGUE_TEMPLATES: tuple[str, ...] = (
    "{v}",
    "{v}.",
    "{v} {d}",
    "{d} {v}",
    "{v}, what should i do?",
    "{v} and i don't know who to see",
    "{v}. {w}.",
    "{v}, {w}",
    "{v}, can you help?",
    "{v}, i need an appointment",
)

# Conversational hedges and asides around a complaint; they carry no signal, so they are used
# for specialty and vague sentences alike.
HEDGES: tuple[str, ...] = (
    "i can't really put my finger on it but ",
    "i don't know if this is anything but ",
    "this might sound silly but ",
    "sorry to bother you, ",
    "it's a bit embarrassing but ",
    "not sure where to start, ",
    "to be honest ",
    "my partner made me book this, ",
    "i've been putting this off but ",
    "long story short, ",
    "basically ",
    "so the thing is ",
    "i keep meaning to mention it but ",
    "i'm probably overreacting but ",
    "my friend said i should ask, ",
)
ASIDES: tuple[str, ...] = (
    ", if that makes sense",
    ", not sure if it's related",
    ", anyway it's driving me mad",
    ", i've tried everything",
    ", i don't know what else to do",
    ", honestly",
    " and i'm fed up with it",
    ", it comes and goes",
    ", i just want it sorted",
    " and i can't seem to shake it",
)
RELATIVES: tuple[str, ...] = (
    "mum",
    "mom",
    "mother",
    "dad",
    "father",
    "sister",
    "brother",
    "aunt",
    "uncle",
    "grandmother",
    "grandfather",
    "cousin",
    "son",
    "daughter",
)
# {n} is a condition name, {r} a relative: family history, testing requests, known diagnoses.
NAME_TEMPLATES: tuple[str, ...] = (
    "my {r} has {n}, should i get tested?",
    "my {r} had {n} and i want to get checked",
    "{n} runs in my family, can i be screened?",
    "i was diagnosed with {n}",
    "i think i might have {n}",
    "i want to get checked for {n}",
    "my {r} was just diagnosed with {n}, what about me?",
    "follow-up appointment for my {n}",
    "could this be {n}?",
    "worried it's {n} because my {r} had it",
)
# Symptom fragment {a} framed by family history.
FAMILY_TEMPLATES: tuple[str, ...] = (
    "my {r} had the same thing, {a}",
    "{a}, and my {r} had something similar",
    "it runs in the family: {a}",
    "my {r} has it too, {a}",
)

# A vague complaint used as filler in front of a real symptom ("i am not feeling well, ...").
MIXED_TEMPLATES: tuple[str, ...] = (
    "{v}, {s}",
    "{v}. {s}.",
    "{v}: {s}",
    "{s}. {v}.",
    "{v} and {s}",
)

# A small grammar of generic complaints, so the vague class is learned from structure
# ("i've been feeling <state>", "i need to <see someone>", "something is <off>") rather than
# from a fixed list of sentences.
VAGUE_FEEL = (
    "i feel",
    "i've been feeling",
    "i'm feeling",
    "feeling",
    "i just feel",
    "i kind of feel",
)
VAGUE_STATE = (
    "off",
    "unwell",
    "not well",
    "not great",
    "not right",
    "weird",
    "strange",
    "bad",
    "awful",
    "rubbish",
    "poorly",
    "under the weather",
    "not myself",
    "out of sorts",
    "sick",
    "funny",
    "terrible",
    "not good",
    "not so good",
    "horrible",
)
VAGUE_WANT = ("i need to", "i want to", "i'd like to", "can i", "i think i should", "i have to")
VAGUE_SEE = (
    "see a doctor",
    "see someone",
    "talk to a doctor",
    "get checked",
    "see a specialist",
    "get some advice",
    "make an appointment",
    "get medical advice",
    "get looked at",
)
VAGUE_SOMETHING = (
    "something is wrong",
    "something is off",
    "something isn't right",
    "something feels wrong",
    "something weird is going on",
    "things are not right",
    "everything feels off",
)
VAGUE_HAVE = ("i have", "i've got", "i'm having", "i've been having", "there's")
VAGUE_PROBLEM = (
    "a problem",
    "some problems",
    "an issue",
    "some issues",
    "a few things going on",
    "some trouble",
    "some difficulties",
    "a health issue",
    "some symptoms",
    "a concern",
    "some pain",
    "some discomfort",
)
VAGUE_TAIL = ("", "", "", " lately", " with my body", " with my health", " with me", " these days")

# Evaluative adjectives that also occur in vague complaints ("i feel terrible"); putting them in
# front of symptom noun phrases ("a terrible earache") teaches the model they carry no signal.
ADJECTIVES: tuple[str, ...] = (
    "terrible",
    "bad",
    "awful",
    "horrible",
    "strange",
    "weird",
    "annoying",
)
