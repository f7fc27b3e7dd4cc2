"""Deterministic generator of triage training sentences from the knowledge base.

Every sentence is built from one condition's lay symptom fragments (1-3 of them) dropped into a
clause-agnostic template, with optional openers, durations, intensity words and closing
questions, and then lightly paraphrased (tummy/belly/stomach, pee/urinate, ...). Some sentences
are prefixed with a vague complaint ("I am not feeling well, ...") but keep the specialty label,
so filler never outweighs a real symptom. Vague complaints on their own get the label "vague".
Conversational hedges ("i can't really put my finger on it but ...") and asides are added to both
kinds; some sentences use the condition's name in family-history and testing requests ("my mum
has gout, should i get tested?"). LAY_LEXICON / lay_expand map lay words and euphemisms to KB
vocabulary; the classifier applies it to every text it vectorises.

Output is lowercase and depends only on the seed.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Sequence

from agents.triage.kb import CONDITIONS, VAGUE_UTTERANCES, Condition

VAGUE = "vague"

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
_FEEL = ("i feel", "i've been feeling", "i'm feeling", "feeling", "i just feel", "i kind of feel")
_STATE = (
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
_WANT = ("i need to", "i want to", "i'd like to", "can i", "i think i should", "i have to")
_SEE = (
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
_SOMETHING = (
    "something is wrong",
    "something is off",
    "something isn't right",
    "something feels wrong",
    "something weird is going on",
    "things are not right",
    "everything feels off",
)
_HAVE = ("i have", "i've got", "i'm having", "i've been having", "there's")
_PROBLEM = (
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
_TAIL = ("", "", "", " lately", " with my body", " with my health", " with me", " these days")


def vague_phrase(rng: random.Random) -> str:
    """One lowercase complaint without specialty signal: from the KB list or the grammar."""
    kind = rng.randrange(5)
    if kind == 0:
        return f"{rng.choice(_FEEL)} {rng.choice(_STATE)}{rng.choice(_TAIL)}"
    if kind == 1:
        return (
            f"{rng.choice(_WANT)} {rng.choice(_SEE)}{rng.choice(('', ' about my health', ' soon'))}"
        )
    if kind == 2:
        return f"{rng.choice(_SOMETHING)}{rng.choice(_TAIL)}"
    if kind == 3:
        return f"{rng.choice(_HAVE)} {rng.choice(_PROBLEM)}{rng.choice(_TAIL)}"
    return rng.choice(VAGUE_UTTERANCES).lower()


def _compile_paraphrases() -> list[tuple[re.Pattern[str], tuple[str, ...]]]:
    out = []
    for group in PARAPHRASES:
        alts = "|".join(re.escape(p) for p in sorted(group, key=len, reverse=True))
        out.append((re.compile(rf"(?<![\w'])(?:{alts})(?![\w'])"), group))
    return out


_PARAPHRASE_RES = _compile_paraphrases()


# Lay words, euphemisms and indirect descriptions -> the plainer vocabulary the KB uses. Applied
# to every text the model sees (training and queries, via the vectorisers' preprocessor) by
# *appending* the plain terms, so the original words still count. Patterns are matched on
# lowercase text with curly apostrophes straightened.
LAY_LEXICON: tuple[tuple[str, str], ...] = (
    # body words
    (r"ticker", "heart"),
    (r"tummy|belly|gut|guts|insides", "stomach"),
    (r"wee|weeing|wees|widdle|tinkle|waterworks", "pee"),
    (r"downstairs|down below|down there|privates|private parts|nether regions", "private area"),
    (r"bum|backside|back passage", "bottom anus"),
    (r"noggin|noodle", "head"),
    (r"boobs?|bust|chest lump", "breast"),
    (r"peepers|eyeballs?", "eyes"),
    (r"telly|tv|conversations?", "hearing"),
    # sexual function
    (
        r"(get|getting|keep|keeping|stay|staying) it up|can't perform|won't stand up|"
        r"(not|aren't|isn't|ain't) working (properly |right )?(downstairs|down there|in the bedroom)|impoten\w*",
        "erection problems",
    ),
    (r"libido|sex drive", "sex drive"),
    # digestion
    (
        r"sour taste|bitter taste|repeating on me|burning (in|up) my (chest|throat)"
        r"|comes? back up|creep\w* up my throat",
        "acid reflux heartburn",
    ),
    (r"blows? up|like a balloon|gassy|farting|trapped (gas|wind)", "bloated gas"),
    (r"the runs|runny (poo|stools?)|loose (poo|stools?)|running to the (loo|toilet)", "diarrhea"),
    (r"bunged up|blocked up|can't go|backed up", "constipated blocked"),
    (r"poo|number two|number twos|motions", "stool bowel movement"),
    (r"on the (toilet )?paper|when i wipe\w*|after wiping", "blood in stool bottom"),
    (r"throwing up|chucking up|puking|being sick", "vomiting"),
    (r"queasy|sick to my stomach", "nauseous"),
    # breathing, heart
    (
        r"puffed out|out of puff|can't catch my breath|gasping|huffing and puffing",
        "short of breath",
    ),
    (r"whistl\w*", "wheezing"),
    (r"chesty|gunk|green stuff|crud", "phlegm cough"),
    (r"fags|ciggies|smoked", "smoker"),
    (
        r"(pressure|bp) (is|was|has been|keeps being) (through the roof|sky high|up|high)",
        "high blood pressure",
    ),
    (r"flip[- ]?flops?|thumping|pounding heart|somersaults?", "palpitations heart"),
    (r"tight\w* (chest|across my chest|behind my breastbone)|breastbone|crushing", "chest pain"),
    # nerves, head
    (r"pounding head|splitting head|heads\b|sore head", "headache"),
    (r"zigzag\w*|sparkl\w* lights|flashing lights", "migraine aura"),
    (r"pins and needles|fizzing|dead arm|dead leg", "tingling numbness"),
    (r"blacked out|passed out|keeled over|fainted|conked out", "fainting"),
    (r"(a|had a|having) fits?|jerking|shaking on the floor|convuls\w*", "seizure"),
    (r"forgetting|getting lost|losing track|scatterbrained", "memory loss forgetful"),
    (r"words? (came|come|coming) out (wrong|jumbled)|slurr\w*|jumbled", "slurred speech"),
    # bones, joints
    (r"went over on|rolled my|turned my|twisted my", "sprained"),
    (r"(my back went|put my back out|did my back in|back is killing)", "back pain"),
    (r"gives? way|giving way|buckl\w*", "knee unstable"),
    (r"grinding|creak\w*|crunch\w*", "joint grinding"),
    (r"came off my bike|fell off|took a tumble|had a fall|slipped", "fall injury"),
    # skin, hair
    (r"zits|breakouts?|blackheads|spotty", "acne pimples"),
    (r"freckle|beauty spot|birthmark", "mole"),
    (r"flak\w*|scaly|scales", "flaky skin"),
    (r"clumps|thinning|bald\w*|receding", "hair loss"),
    # hormones, sugar
    (r"freezing|cold all the time|always cold|feel the cold", "feel cold"),
    (r"parched|always thirsty|drink\w* loads", "thirsty"),
    (r"my sugars?|sugar (levels?|readings?)|sugar diabetes|diabetic", "blood sugar diabetes"),
    (r"jittery|shaky|sweaty", "shaky sweating"),
    (r"piling on|put on|packed on|ballooned", "gained weight"),
    # kidneys, bladder
    (r"frothy|bubbly|foamy", "foamy urine"),
    (r"kidney (numbers|results|bloods|levels)|egfr", "kidney function"),
    (r"dribbl\w*|weak stream|takes? (ages|forever) to (go|start|get going)", "weak urine flow"),
    (r"stings? (like mad )?when i (go|pee|wee)|burns when i (go|pee|wee)", "burning pee"),
    (r"(balls?|nuts|testicles?)", "testicle"),
    (r"leak\w*|wet myself|can't hold it", "bladder leaking"),
    # women's health
    (r"monthl(y|ies)|time of the month|aunt flo|on my period|cycle", "period"),
    (r"flooding|soaking through", "heavy periods"),
    (r"the change|hot sweats", "menopause"),
    (
        r"trying for a baby|trying to conceive|can't get pregnant|having a baby",
        "fertility pregnancy",
    ),
    (r"smear|pap test|coil|the pill", "gynecological check-up contraception"),
    (r"after sex|during sex|intercourse", "after sex gynecological"),
    # eyes, ears, nose, throat
    (r"foggy|misty|hazy|fuzzy|dirty window|cloudy vision", "blurry vision"),
    (r"specks|cobwebs|black dots|squiggles", "floaters"),
    (r"gunky|gooey|crusty|stuck shut|pink eye", "sticky eye discharge"),
    (r"buzzing|humming|hissing|whooshing", "ringing in my ears"),
    (
        r"hard of hearing|deaf\w*|can't hear|shouting|turn\w* up the (telly|tv|volume)",
        "hearing loss",
    ),
    (r"bunged up nose|stuffed up|snotty", "blocked nose"),
    (r"glands", "tonsils sore throat"),
    # mind
    (
        r"can't be bothered|no motivation|don't see the point|dark thoughts|down in the dumps|"
        r"low mood|crying|cry for no reason|feel empty|numb inside",
        "depressed low mood",
    ),
    (
        r"on edge|wound up|nervy|nerves|worrying|worry all the time|racing thoughts|mind races",
        "anxious",
    ),
    (r"check\w* (the )?(doors?|locks?|taps|oven)|counting things|rituals", "obsessive checking"),
    (r"drinking too much|booze|can't stop drinking", "alcohol substance use"),
    # cancer
    (r"chemo|radiotherapy", "cancer treatment"),
    (r"biopsy|malignant|tumou?r", "cancer tumor"),
    (r"gene test|genetic test\w*|brca|tested for the gene", "cancer genetic testing"),
    (r"losing weight without trying|weight (is )?falling off", "unexplained weight loss"),
    # blood
    (
        r"bruise\w* (so |super |really )?easily|bruise like|bruises everywhere|covered in bruises",
        "easy bruising",
    ),
    (r"thrombosis|dvt|clotting (problem|disorder|condition)", "clotting disorder blood clots"),
    (r"anaemi\w*|anemi\w*|iron (is |was |keeps coming back )?low", "anemia low iron"),
    (r"red dots|tiny red spots|pinpricks", "bleeding spots platelets"),
    # food
    (
        r"eating habits|my eating|what to eat|what i can eat|proper plan|eat healthier",
        "diet nutrition",
    ),
    (r"fussy eater|picky eater|won't eat vegetables", "child nutrition"),
    (r"\d+ (stone|pounds|kilos|lbs|kg)|(three|four|five|two) stone|overweight|chubby", "weight"),
    (r"coeliac", "celiac"),
    # family history and testing requests
    (
        r"runs? in (my|the) family|family history|my (mum|mom|mother|dad|father|sister|brother|"
        r"aunt|uncle|nan|gran|grandma|grandad|grandpa|grandmother|grandfather) (had|has|died of)",
        "runs in my family",
    ),
    (
        r"get (myself )?(tested|checked|screened)|be (tested|checked|screened)|screening",
        "get checked",
    ),
)

# One alternation with a named group per entry: a single scan finds every lay phrase (zero-width
# lookaheads, so matches may overlap).
_LAY_RE = re.compile(
    r"(?<![\w'])\b(?:"
    + "|".join(rf"(?=(?P<g{i}>{pat})(?![\w']))" for i, (pat, _) in enumerate(LAY_LEXICON))
    + ")"
)


@functools.lru_cache(maxsize=65536)
def lay_expand(text: str) -> str:
    """Lowercase `text` and append the plain KB terms of every lay phrase it contains.

    Used as the vectorisers' preprocessor, so training and queries are treated alike."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").lower()
    found = {int(str(m.lastgroup)[1:]) for m in _LAY_RE.finditer(text)}
    if not found:
        return text
    return f"{text} . {' '.join(LAY_LEXICON[i][1] for i in sorted(found))}"


def paraphrase(text: str, rng: random.Random, p: float = 0.35) -> str:
    """Swap whole phrases for an equivalent member of their PARAPHRASES group with prob. p."""

    for pattern, group in _PARAPHRASE_RES:

        def swap(m: re.Match[str], group: tuple[str, ...] = group) -> str:
            if rng.random() >= p:
                return m.group(0)
            return rng.choice([g for g in group if g != m.group(0)] or list(group))

        text = pattern.sub(swap, text)
    return text


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
_GRADABLE = re.compile(r"\b(painful|sore|swollen|itchy|stiff|tired|weak|dizzy|bad|high|heavy)\b")


def _intensify(fragment: str, rng: random.Random) -> str:
    """Maybe put an intensity word before a pain/feeling adjective ("really sore"), or an
    evaluative adjective after a leading article ("a terrible cough")."""
    r = rng.random()
    if r < 0.3:
        m = _GRADABLE.search(fragment)
        if m is not None:
            return f"{fragment[: m.start()]}{rng.choice(INTENSITY)} {fragment[m.start() :]}"
    elif r < 0.5:
        a = re.match(r"(an?) ", fragment)
        if a is not None:
            adj = rng.choice(ADJECTIVES)
            article = "an" if adj[0] in "aeiou" else "a"
            return f"{article} {adj} {fragment[a.end() :]}"
    return fragment


def _tidy(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([,.;:?])", r"\1", text)
    text = re.sub(r"([.?])\.", r"\1", text)
    return text


# Share of specialty sentences that start with a vague complaint ("i feel off, ...").
MIX_VAGUE = 0.25
# Shares of specialty sentences built from the condition's name / from family history.
NAME_SHARE = 0.1
FAMILY_SHARE = 0.05
# Chances of a conversational hedge before / an aside after a sentence's body.
HEDGE_P = 0.2
ASIDE_P = 0.15


def _hedge(body: str, rng: random.Random) -> str:
    if rng.random() < HEDGE_P:
        body = rng.choice(HEDGES) + body
    if rng.random() < ASIDE_P:
        body = body.rstrip(".?!") + rng.choice(ASIDES)
    return body


def utterances(condition: Condition, rng: random.Random, n: int) -> list[str]:
    """n lowercase training sentences describing `condition` in lay terms."""
    symptoms = [s.lower() for s in condition.symptoms]
    out: list[str] = []
    for _ in range(n):
        r = rng.random()
        if r < NAME_SHARE:
            body = rng.choice(NAME_TEMPLATES).format(n=condition.name, r=rng.choice(RELATIVES))
        elif r < NAME_SHARE + FAMILY_SHARE:
            a = _intensify(rng.choice(symptoms), rng)
            body = rng.choice(FAMILY_TEMPLATES).format(a=a, r=rng.choice(RELATIVES))
        else:
            k = rng.choices((1, 2, 3), weights=(0.45, 0.4, 0.15))[0]
            k = min(k, len(symptoms))
            picked = [_intensify(s, rng) for s in rng.sample(symptoms, k)]
            template = rng.choice({1: TEMPLATES_1, 2: TEMPLATES_2, 3: TEMPLATES_3}[k])
            fields = dict(zip("abc", picked, strict=False))
            body = template.format(d=rng.choice(DURATIONS), **{x: fields.get(x, "") for x in "abc"})
            if rng.random() < MIX_VAGUE:
                body = rng.choice(MIXED_TEMPLATES).format(v=vague_phrase(rng), s=body)
        text = rng.choice(OPENERS) + _hedge(body, rng) + rng.choice(CLOSERS)
        out.append(_tidy(paraphrase(text, rng)))
    return out


def vague_utterances(rng: random.Random, n: int) -> list[str]:
    """n lowercase complaints that carry no specialty signal."""
    out: list[str] = []
    for _ in range(n):
        v, w = vague_phrase(rng), vague_phrase(rng)
        body = rng.choice(VAGUE_TEMPLATES).format(v=v, w=w, d=rng.choice(DURATIONS))
        text = rng.choice(OPENERS) + _hedge(body, rng) + rng.choice(CLOSERS)
        out.append(_tidy(paraphrase(text, rng)))
    return out


def training_set(
    seed: int = 0,
    per_condition: int = 30,
    conditions: Sequence[Condition] = CONDITIONS,
) -> tuple[list[str], list[str]]:
    """(texts, labels): every plain symptom fragment, `per_condition` generated sentences per
    condition, and vague complaints labelled VAGUE (about as many as an average specialty)."""
    rng = random.Random(seed)
    texts: list[str] = []
    labels: list[str] = []
    for cond in conditions:
        for s in cond.symptoms:
            texts.append(s.lower())
            labels.append(cond.specialty)
        for t in utterances(cond, rng, per_condition):
            texts.append(t)
            labels.append(cond.specialty)
    specialties = {c.specialty for c in conditions}
    n_vague = len(texts) // max(1, len(specialties))
    texts.extend(v.lower() for v in VAGUE_UTTERANCES)
    labels.extend(VAGUE for _ in VAGUE_UTTERANCES)
    for t in vague_utterances(rng, n_vague):
        texts.append(t)
        labels.append(VAGUE)
    return texts, labels
