"""Lay words, euphemisms and indirect descriptions mapped to the plainer vocabulary of the triage
knowledge base ("ticker" -> heart, "can't keep it up" -> erection problems).

Separate from the training generator because it is not only used for training: the classifier's
vectorisers run lay_expand on every text, training sentences and queries alike. Editing the
lexicon changes what the model sees, so the classifier's model key hashes this file too.
"""

from __future__ import annotations

import functools
import re

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
    # Black, tar-like stools are digested blood from the upper gut (not a cardiac sign, even
    # with the lightheadedness that blood loss brings).
    (
        r"black (and )?tarry|tarry|(stools?|poos?|motions) (\w+ ){0,2}(black|like tar)",
        "black tarry stools blood in stool",
    ),
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
    (
        r"stare\w* (into space|blankly|into nothing)|blank (spells|episodes|moments)|"
        r"zon\w* out for (a few )?seconds|(switch\w*|shut\w*) off for (a few )?seconds",
        "staring spells absence seizures",
    ),
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
    (
        r"parched|always thirsty|drink\w* loads|(constantly|so|really|very|permanently) thirsty|"
        r"thirsty all the time|drink\w* (litres|liters|gallons|pints|jugs) of water",
        "thirsty",
    ),
    (
        r"(weeing|peeing|urinating|going to the (loo|toilet)) (all the time|constantly|a lot|"
        r"every (half )?hour)|up (all night|every hour) (weeing|peeing)",
        "frequent urination",
    ),
    (r"my sugars?|sugar (levels?|readings?)|sugar diabetes|diabetic", "blood sugar diabetes"),
    (r"jittery|shaky|sweaty", "shaky sweating"),
    (r"piling on|put on|packed on|ballooned", "gained weight"),
    # kidneys, bladder
    (r"frothy|bubbly|foamy", "foamy urine"),
    (
        r"kidney (numbers|results|bloods|levels|tests?)|egfr|kidneys? (were|was|are|is|got|"
        r"have been|has been|came back) (flagged|abnormal|bad|low|poor|off|not working|"
        r"playing up|struggling|failing)",
        "kidney function",
    ),
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
        r"(felt|feel|feeling|been|am|i'm) (so |very |really |pretty |quite )?(low|down|flat)\b|"
        r"(stopped|don't|can't|no longer) enjoy\w*|lost interest|no interest in",
        "depressed low mood",
    ),
    (
        r"wak\w* (up )?(at|around|by) [2345] ?(am|a\.m\.|o'clock|in the morning)|"
        r"wak\w* (up )?(too early|in the early hours)",
        "early waking insomnia",
    ),
    (
        r"on edge|wound up|nervy|nerves|worrying|worry all the time|racing thoughts|mind races",
        "anxious",
    ),
    # Attacks of fear of dying, and a heart found sound after tests, are panic's (the heart
    # words of such attacks otherwise pull towards cardiology).
    (
        r"(sure|convinced|certain|think|thought|feel like|felt like) i('m| am| was) (going to|"
        r"gonna|about to) die|(impending )?sense of doom|"
        r"(heart|cardiac|ecg|ekg) (tests?|checks?|scans?|traces?) (\w+ ){0,3}(normal|clear|fine)|"
        r"nothing wrong with my heart",
        "panic attacks",
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
    # A clot that runs in the family, or a test for why clots happen, is a blood specialist's.
    (
        r"(tested|checked|screened|a test) for (a |any )?(clotting|bleeding|blood) (disorder|"
        r"condition|problem)|(sister|brother|mum|mom|mother|dad|father)('s)? (had|has) (one|a clot|"
        r"clots) too",
        "clots run in my family thrombophilia",
    ),
    (r"anaemi\w*|anemi\w*|iron (is |was |keeps coming back )?low", "anemia low iron"),
    (r"red dots|tiny red spots|pinpricks", "bleeding spots platelets"),
    # food
    (
        r"eating habits|my eating|what to eat|what i can eat|proper plan|eat healthier|"
        r"(what|which foods?) (i'm|i am|i'd be) allowed to eat|allowed to eat|"
        r"(what|which foods?) (i|we) (should|can|could|ought to) (eat|have)|foods? to avoid|"
        r"eating plan|meal plan",
        "diet nutrition",
    ),
    (r"fussy eater|picky eater|won't eat vegetables", "child nutrition"),
    # What and how much someone eats is a diet matter (not a stomach one).
    (
        r"snack\w*|grazing|junk food|fast food|takeaways?|sweets|crisps|biscuits|chocolate|"
        r"fizzy drinks|sugary drinks|sweet tooth|overeat\w*|comfort eat\w*|portion\w*|"
        r"meals? (are|is) (irregular|unhealthy|all over the place)|"
        r"(skip\w*|never (have|eat)|no time for) breakfast|eat(ing)? (very |really )?late",
        "diet nutrition",
    ),
    # ... unless it is an eating disorder (a psychiatrist's).
    (
        r"make myself (sick|throw up|vomit)|starv(e|ing) myself|purg(e|ing)|"
        r"so (that )?i (don't|won't|do not) (gain|put on) weight|"
        r"(scared|afraid|terrified) of (gaining|putting on) weight",
        "an eating disorder bulimia anorexia",
    ),
    (
        r"lose (my|the) (belly|tummy|gut|stomach)|trim my waist\w*|piled on the pounds",
        "weight loss",
    ),
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
