"""Named things that point to one kind of specialist: a condition the person names ("my
psoriasis", "gout"), a test or its result ("PSA came back high", "eGFR 45", "TSH"), a procedure
("colonoscopy found polyps", "smear test abnormal"), a treatment ("on warfarin", "dialysis").

The classifier (agents.triage.classifier) learns from lay symptom sentences and reads these
names poorly: "an abnormal prostate blood test" has no symptom in it. Each cue here is what the
NHS condition and test pages say about who diagnoses or treats it (docs/agents.md, "Cues"), so
it is evidence, weighed with the classifier's: `Triage.classify` multiplies the specialty by
the strongest tier that names it (`weights`): a named condition or sign CUE_WEIGHT, a named
test STRONG_WEIGHT, that test with an abnormal result or a value RESULT_WEIGHT, and what the
person asks for outright (diet help for a diagnosed condition, a check with nothing wrong, a
one-off episode fine since) ASK_WEIGHT. Two cues of different specialties split the evidence,
and a split complaint is asked about, then sent to a general physician.

Also here, the words shared by two organs or by body and mind, read in context (`REREAD`):
"hearing voices" is not about the ears, "a sore that won't heal on my nose" is about the skin,
not the nose. Each rewrite replaces the misleading words before the classifier sees them.
"""

from __future__ import annotations

import functools
import re

_GP = "general physician"

# specialty -> patterns (lowercase, on text with curly quotes straightened)
CUES: dict[str, tuple[str, ...]] = {
    "cardiologist": (
        r"ecg|ekg|echo(?:cardiogram)?|heart (?:monitor|scan|murmur|failure|valve|rhythm)|"
        r"atrial fibrillation|afib|a-fib|angina|arrhythmia|pacemaker|stent|troponin|bnp|"
        r"heart (?:beat|is) (?:skipping|irregular)|skipped beats?|irregular (?:heart ?beat|pulse)|"
        r"palpitations?|(?:tight\w*|pain|pressure|heav\w*|discomfort)[^.;]{0,30}chest[^.;]{0,80}"
        r"(?:walk\w*|stairs|hills?|exert\w*|exercis\w*|hurry\w*|climb\w*)",
    ),
    "pulmonologist": (
        r"spirometry|peak flow|lung function|chest x-?ray|copd|emphysema|bronchiectasis|"
        r"asthma|inhaler|wheez\w*|sleep apno\w*|(?:stop|stops|stopped) breathing (?:in|at|during) "
        r"(?:my|his|her|the) (?:sleep|night)|snor\w* (?:and|with) (?:gasp|chok|stop)|"
        r"cough(?:ing)? up (?:phlegm|mucus|sputum)|(?:long|persistent|chronic) cough|"
        r"smoker'?s cough|lung nodule|spot on (?:my|his|her) lung",
    ),
    "gastroenterologist": (
        r"colonoscopy|endoscopy|gastroscopy|fit test|calprotectin|\bibs\b|irritable bowel|"
        r"crohn'?s|colitis|coeliac|celiac|ttg|gluten|acid reflux|heartburn|\bgerd\b|"
        r"gallstones?|liver (?:function|tests?|enzymes|results?)|\blfts?\b|fatty liver|"
        r"hepatitis|jaundice|yellow (?:skin|eyes)|blood in (?:my |his |her )?(?:poo|stools?)|"
        r"black (?:poo|stools?)|polyps?|change in (?:my |his |her )?bowel|bowel habits?|"
        r"difficulty swallowing|food (?:gets |getting )?stuck",
    ),
    "neurologist": (
        r"epilep\w*|seizures?|migraines?|parkinson'?s?|multiple sclerosis|"
        r"neuropath\w*|tremor|shak\w* hands?|mri of (?:my|his|her|the) (?:brain|head|spine)|"
        r"\beeg\b|nerve (?:conduction|damage|pain)|trapped nerve|bell'?s palsy|"
        r"memory|forgetful\w*|dementia|alzheimer'?s?|restless legs?|"
        r"keeps? (?:asking|repeating|saying) the same|got lost (?:driving|walking|going)|"
        r"stares? (?:\w+ ){0,3}for (?:a )?few seconds|switch\w* off|zon\w* out|absence seizures?|"
        r"(?:has|having|have|gets?) absences|"
        r"eyelids? flicker\w*|blank (?:spells|episodes|moments)|"
        r"numb(?:ness)? in (?:my |his |her )?(?:feet|hands|toes)",
    ),
    "orthopedist": (
        r"fracture|broken (?:bone|wrist|ankle|arm|leg|hip|toe|finger)|sprain\w*|ligament|"
        r"\bacl\b|meniscus|cartilage|tendon|tendinitis|rotator cuff|frozen shoulder|"
        r"tennis elbow|golfer'?s elbow|carpal tunnel|sciatica|slipped disc|herniated disc|"
        r"bunion|hip replacement|knee replacement|osteoarthritis|wear and tear|scoliosis|"
        r"plantar fasciitis|achilles|"
        r"(?:hip|knee)s?\b.{0,160}?\barthritis|arthritis in (?:my|his|her) (?:hip|knee)s?|"
        r"x-?rays? (?:\w+ ){0,2}(?:showed|shows|found) (?:\w+ ){0,3}(?:arthritis|wear|fracture|"
        r"break)|"
        r"(?:hip|knee|shoulder|groin|ankle)(?: \w+){0,8} (?:click\w*|catch\w*|lock\w*)|"
        r"sports? injur\w*|physio\w*|ball of (?:my|the|his|her) foot|"
        r"(?:standing|walking) on a (?:pebble|stone|marble)",
    ),
    "dermatologist": (
        r"moles?|skin (?:lesion|cancer|tag|growth|patch|rash|condition)|(?<!brain )(?<!liver )"
        r"(?<!lung )(?<!spine )lesion|eczema|"
        r"psoriasis|acne|rosacea|dermatitis|hives|urticaria|warts?|verruca|"
        r"itchy (?:skin|patch|patches|rash)|scaly|flaky (?:skin|patch)|blisters?|"
        r"(?:sore|scab|spot|patch|ulcer|lump|growth|bump)\b[^.;]{0,80}\b(?:won't|doesn't|does not|"
        r"isn't|hasn't|never|not) (?:\w+ )?(?:heal\w*|go away|gone away)|"
        r"keeps? (?:bleeding|crusting) (?:and|then)|"
        r"hair (?:loss|falling out)|alopecia|bald patch\w*|nail fungus|"
        r"pigment\w*|birthmark|freckle|hidradenitis|boils?",
    ),
    "endocrinologist": (
        r"thyroid|\btsh\b|\bt4\b|levothyroxine|hypothyroid\w*|hyperthyroid\w*|graves|"
        r"hashimoto'?s?|goitre|goiter|hba1c|a1c|diabet\w*|blood sugars?|glucose|insulin|"
        r"metformin|prolactin|cortisol|adrenal|pituitary|cushing'?s?|addison'?s?|"
        r"hormone (?:levels?|tests?|imbalance)|calcium (?:level|is) (?:high|raised)|"
        r"parathyroid|pcos|polycystic ovar\w*|puberty|(?:developing|budding) breasts|"
        r"breasts? (?:developing|budding)|pubic hair|growth spurt|shot up in height|"
        r"(?:short|small) for (?:his|her) age|not growing",
    ),
    "nephrologist": (
        r"egfr|creatinine|kidney function|kidneys? (?:results?|bloods|numbers|tests?)|"
        r"chronic kidney|\bckd\b|dialysis|protein in (?:my |his |her |the )?(?:urine|wee|pee)|"
        r"proteinuria|albumin|\bacr\b|foamy (?:urine|wee|pee)|frothy (?:urine|wee|pee)|"
        r"nephrotic|nephritis|polycystic kidney|"
        r"(?:urine|dip\w*|wee|pee) (?:\w+ ){0,4}(?:showed|shows|showing|found|had) (?:[\w+]+ ){0,2}"
        r"protein",
    ),
    "urologist": (
        r"\bpsa\b|prostate|kidney stones?|bladder (?:stone|problem|scope)|cystoscopy|"
        r"erect\w*|impoten\w*|vasectomy|testic\w*|scrotum|weak (?:urine )?stream|"
        r"blood in (?:my |his |her |the )?(?:urine|wee|pee)|pee(?:ing)? blood|"
        r"(?:recurrent|repeated|keep getting) (?:utis?|urine infections?|water infections?)|"
        r"dribbl\w*|urinary retention",
    ),
    "gynecologist": (
        r"smear|cervical screening|\bhpv\b|colposcopy|endometriosis|fibroids?|ovarian cysts?|"
        r"heavy periods?|periods? (?:are |have been )?(?:heavy|irregular|painful|stopped)|"
        r"missed periods?|bleeding (?:after|between) (?:sex|periods)|"
        r"(?:post|after)[- ]menopaus\w* bleed\w*|bleed\w* after (?:the )?menopause|menopaus\w*|"
        r"vaginal|discharge (?:down there|from (?:my|her) vagina)|pelvic pain|"
        r"contracepti\w*|\biud\b|the coil|prolapse|infertil\w*|trying to conceive|"
        r"(?:dragging|heavy|heaviness)(?: \w+){0,3} (?:down below|down there|in (?:my )?"
        r"(?:vagina|pelvis))|(?:something|a lump|a bulge)(?:'s| is)? coming down",
    ),
    "ophthalmologist": (
        r"glaucoma|cataracts?|macular|retina\w*|floaters|flashes of light|flashing lights|"
        r"blurr\w* vision|vision (?:is )?(?:blurr\w*|cloudy|wavy|distorted)|"
        r"eye (?:pressure|test|drops)|optician|(?:wavy|straight) lines (?:look|looking) wavy|"
        r"(?:red|sore|painful|dry|itchy|watery) eyes?|eyesight|shadow (?:in|over) (?:my|his|her) "
        r"vision|curtain",
    ),
    "ent specialist": (
        r"tinnitus|ringing in (?:my|his|her) ears?|hearing (?:loss|aid|test)|(?:going )?deaf|"
        r"can't hear|ear (?:infections?|ache|pain|wax|discharge)|earache|glue ear|"
        r"sinus\w*|nasal polyps?|blocked nose|(?:lost|losing|no|loss of) (?:my |his |her )?"
        r"(?:sense of )?smell|one[- ]sided (?:nasal|nose)|(?:one|left|right) nostril|"
        r"tonsil\w*|hoarse\w*|voice (?:has )?(?:gone|changed|croaky)|croaky|vertigo|"
        r"lump (?:in|on) (?:my|his|her|the) (?:neck|throat)|snor\w*|adenoids?|grommets?|"
        r"ears? (?:\w+ ){0,2}(?:leak\w*|discharg\w*|runn\w*|weep\w*|ooz\w*)|"
        r"hearing (?:\w+ ){0,4}(?:going|worse|getting worse|gone)",
    ),
    "psychiatrist": (
        r"hallucinat\w*|hearing voices|hears voices|"
        r"(?:voices|things|people) (?:that |who )?(?:aren't|are not|weren't|isn't) (?:really )?"
        r"there|"
        r"parano\w*|delusion\w*|psycho\w*|schizo\w*|bipolar|mania|manic|"
        r"(?:thinks|convinced|believes) (?:people|someone|they|the neighbours|we) (?:are|is) "
        r"(?:watching|following|poisoning|after|spying|plotting)|"
        r"depress\w*|low mood|anxiety|panic attacks?|\bocd\b|obsessive|compulsive|\bptsd\b|"
        r"flashbacks|eating disorder|anorexi\w*|bulimi\w*|\badhd\b|antidepressants?|"
        r"sertraline|citalopram|fluoxetine|mental health|suspicious of (?:me|us|everyone)|"
        r"talks? (?:a mile a minute|really fast|non-?stop)|spending sprees?|spent thousands|"
        r"grandios\w*",
    ),
    "oncologist": (
        r"cancer|tumou?r|malignan\w*|oncolog\w*|chemo\w*|radiotherapy|metasta\w*|"
        r"lymphoma|melanoma|mammogram|breast lump|lump in (?:my|her) breast|"
        r"ca-?125|(?:2|two)[- ]week wait|suspected cancer",
    ),
    "rheumatologist": (
        r"rheumatoid|lupus|\bsle\b|gout|psoriatic arthritis|ankylosing|spondyl\w*|"
        r"polymyalgia|vasculitis|sjogren'?s?|scleroderma|fibromyalgia|"
        r"rheumatoid factor|anti-?ccp|\bcrp\b|\besr\b|inflammatory (?:markers?|arthritis)|"
        r"(?:stiff|swollen) (?:joints|knuckles|fingers)|joints? (?:are |is )?(?:swollen|stiff)|"
        r"morning stiffness|stiff (?:every|in the) morning|osteoporosis|bone density|"
        r"butterfly rash|rash\b[^.;]{0,60}\bjoints?|joints?\b[^.;]{0,60}\brash",
    ),
    "hematologist": (
        r"ferritin|ha?emoglobin|platelets?|white (?:blood )?cells?|blood count|\bfbc\b|"
        r"anaemi\w*|anemi\w*|iron (?:is |levels? (?:are |is )?)?low|low iron|b12|folate|"
        r"warfarin|\binr\b|blood clots? in (?:my|his|her) (?:leg|lung)|\bdvt\b|thrombo\w*|sickle cell|thalassa?emia|"
        r"ha?emophilia|leuka?emia|myeloma|bruis\w* (?:easily|for no reason|all over)|"
        r"easy bruising|swollen glands (?:all over|everywhere)|von willebrand|"
        r"bleeding disorder|bleed\w* (?:a lot|loads|for ages|for hours) after|"
        r"nosebleeds? (?:that )?(?:go on|last|won't stop)",
    ),
    "dietician": (
        r"diet|dietitian|dietician|nutrition\w*|meal plans?|eating plan|what (?:to|i should|he "
        r"should|she should) eat|healthy eating|lose weight|weight loss plan|portion\w*|"
        r"calories|fussy eat\w*|picky eat\w*|fodmap|gluten[- ]free|food labels|"
        r"what (?:i|he|she|we) can (?:and can't )?eat|(?:help|go through|take (?:me|us) through)"
        r"(?: \w+){0,3} (?:diet|foods?)",
    ),
    _GP: (
        r"(?:a|common|head|heavy|bad|stinking|streaming|chesty) cold|"
        r"cold (?:and|with) (?:a )?(?:cough|runny|sore|blocked|temperature)|runny nose|"
        r"sniffl\w*|flu|flu-like|sore throat|chest infection|general check-?up|health check|"
        r"a bit of a cough|snott\w*|temp(?:erature)? of 3[7-9]|"
        r"(?:only|just) (?:happened )?(?:the )?once|one-?off|never happened (?:before|b4)",
    ),
}

# Named tests and their results, and what the person asks for outright: stronger than a named
# condition, since they say where the work is ("PSA 7.2, GP says I need a specialist; my knees
# ache too" is the urologist's; "diagnosed with IBS, I need help with the low FODMAP diet" is
# the dietician's).
STRONG: dict[str, tuple[str, ...]] = {
    "urologist": (r"\bpsa\b",),
    "nephrologist": (
        r"egfr|creatinine|kidney (?:function|numbers|results|bloods)|protein in (?:my |his |her "
        r"|the )?urine",
    ),
    "endocrinologist": (
        r"\btsh\b|\bt4\b|hba1c|prolactin|cortisol|thyroid (?:function|test|levels?)",
    ),
    "hematologist": (
        r"ferritin|platelets?|white (?:blood )?cells?|\binr\b|von willebrand|"
        r"lymphocytes?(?: count)?|neutrophils?|(?:full )?blood count|\bfbc\b|bleeding disorder",
    ),
    "gynecologist": (r"smear|cervical screening|\bhpv\b|colposcopy",),
    # The behaviours NICE NG69 lists for an eating disorder: a psychiatrist's, not the diet's.
    "psychiatrist": (
        r"eating disorder|anorexi\w*|bulimi\w*|(?:bathroom|toilet|loo) (?:straight |right )?after "
        r"(?:meals|eating|food)|cuts? (?:her|his|their|my) food (?:into )?(?:tiny|small)|"
        r"hid(?:es|ing) food|makes? (?:herself|himself|myself) sick",
    ),
    "gastroenterologist": (
        r"colonoscopy|endoscopy|gastroscopy|fit test|calprotectin|\blfts?\b|"
        r"liver (?:function|tests?|enzymes)",
    ),
    "cardiologist": (r"\becg\b|\bekg\b|echocardiogram|troponin|\bbnp\b",),
    "pulmonologist": (r"spirometry|lung function|sleep apno\w*",),
    "neurologist": (r"\beeg\b|mri of (?:my|his|her|the) (?:brain|head)",),
    "ophthalmologist": (r"eye pressure|optician (?:said|says|found|told)",),
    "ent specialist": (r"hearing test|audiogram",),
    "rheumatologist": (r"rheumatoid factor|anti-?ccp|\bana\b (?:test|positive)",),
    "dietician": (
        r"fodmap|gluten[- ]free diet|(?:help|go through|take (?:me|us) through)"
        r"(?: \w+){0,3} (?:diet|foods?)",
    ),
}
STRONG_WEIGHT = 20.0
# A named test with an abnormal result or a value ("PSA came back 7.8", "prolactin was high",
# "eGFR 42"): the work is that specialty's, whatever symptoms come with it.
RESULT_WEIGHT = 200.0
_RESULT = re.compile(
    r"\s*(?:(?:came back|come back|was|were|is|are|at|of|showed|shows)\s+)?(?:\w+ ){0,2}?"
    r"(?:high|low|raised|elevated|abnormal|borderline|up|down|irregular|flagged|positive|bad|"
    r"poor|worse|\d[\d.,/+]*)\b"
)

# What settles it whatever else is said: an outright request for diet help for a diagnosed
# condition (the diagnosis is done; the diet is the work), and a single short episode with an
# obvious trigger, over and fine since (NHS palpitations and fainting pathways: primary care).
# Red flags never reach here: the emergency route runs first.
ASKS: dict[str, tuple[str, ...]] = {
    "dietician": (
        r"fodmap|gluten[- ]free diet|(?:help|go through|take (?:me|us) through|explain)"
        r"(?: \w+){0,3} (?:the |a |my |his |her )?(?:diet|foods?)|what (?:i|he|she|we) can "
        r"(?:and can't )?eat|(?:help|advice)(?: \w+){0,3} (?:how|what) (?:i|he|she|we) eat",
    ),
    _GP: (
        r"^(?=.*(?:(?:only|just) (?:happened )?(?:the )?once|one-?off|never happened "
        r"(?:before|b4)))(?=.*\b(?:fine|normal|ok|okay)\b)",
        r"^(?=.*\b(?:yesterday|last night|this morning)\b)(?=.*\b(?:been|was|felt|feel|"
        r"feeling) (?:\w+ )?(?:fine|normal|ok|okay) (?:since|after|now|today)\b)",
        # A check with nothing wrong: a general physician's health check (NHS Health Check).
        r"(?:nothing (?:wrong|the matter|specific)|no symptoms|feels? (?:fine|well))[^.]{0,100}"
        r"(?:check|looked at|checked)|(?:check|looked at|checked)[^.]{0,100}(?:nothing (?:wrong|"
        r"the matter|specific)|no symptoms|feels? (?:fine|well))",
    ),
}
ASK_WEIGHT = 10000.0

# How much a cue multiplies its specialty's probability before renormalising. Enough to
# overturn a classifier that only half-knows (a lab result reads as nothing to it), not one
# that is sure of another specialty: a cue for a specialty 6x less likely stays behind.
CUE_WEIGHT = 6.0

_STRONG_RX: dict[str, re.Pattern[str]] = {
    spec: re.compile(r"(?<![\w'])(?:" + "|".join(pats) + r")(?![\w'])")
    for spec, pats in STRONG.items()
}
_ASK_RX: dict[str, re.Pattern[str]] = {
    spec: re.compile(r"(?<![\w'])(?:" + "|".join(pats) + r")") for spec, pats in ASKS.items()
}
_CUE_RX: dict[str, re.Pattern[str]] = {
    spec: re.compile(r"(?<![\w'])(?:" + "|".join(pats) + r")(?![\w'])")
    for spec, pats in CUES.items()
}

# Words shared by organs, or by body and mind, read in context: (pattern, replacement).
# Applied before classifying, so the misleading organ word is not there to count.
REREAD: tuple[tuple[str, str], ...] = (
    # Voices and visions are the mind's, not the ears' or eyes'.
    (
        r"hear(?:s|ing)? (?:voices|things|people)(?: (?:that|who))?(?: (?:aren't|are not|"
        r"weren't|isn't|is not) (?:really )?there)?|"
        r"see(?:s|ing)? [\w ]{1,40}? (?:that|who) (?:aren't|are not|weren't|isn't|is not) "
        r"(?:really )?there",
        "hallucinations",
    ),
    # A heavy heart or a chest heavy with sadness is low mood.
    (
        r"heavy heart|heart ?broken|broken heart|heart (?:is |was |has been )?(?:just |completely "
        r"|totally |really )?broken|(?:chest|heart) (?:feels |is )?heavy with "
        r"(?:sadness|grief|sorrow)",
        "low mood",
    ),
    # Heartburn is the gullet's.
    (r"heart ?burn", "acid reflux"),
    # Butterflies in the stomach are nerves.
    (r"butterflies in (?:my|his|her) (?:stomach|tummy)", "anxious"),
    # Snoring with pauses or gasps is sleep apnoea (a sleep/chest clinic's), not the nose's.
    (r"snor\w*[^.;]{0,80}(?:stop\w* breathing|gasp\w*|chok\w*|pauses?)", "sleep apnoea"),
    # Tingling in the thumb and first fingers, at night, is the wrist's (carpal tunnel).
    (
        r"(?:pins and needles|tingl\w*|numb\w*) in (?:my |his |her )?(?:thumb|first|index)"
        r"[^.;]{0,60}",
        "carpal tunnel",
    ),
    # A complaint the person sets aside is not the one to book for.
    (
        r"[^.,;!?]*\b(?:that's|thats|it's|its|that is) (?:just|only|prob\w*) (?:old age|my age|"
        r"age|nothing|normal|wear and tear)[^.,;!?]*|[^.,;!?]*\bnothing major\b[^.,;!?]*|"
        r"[^.,;!?]*\b(?:that's|thats|that is|it's|its) not (?:why|what) i'm[^.,;!?-]*|"
        # A fear named is not the complaint ("I'm scared it's a brain tumour after googling").
        r"\b(?:scared|afraid|worried|terrified|frightened|convinced|paranoid)(?: \w+){0,3} "
        r"(?:it's|its|it is|it might be|it could be|of) (?:a |an )?(?:brain |bowel |skin )?"
        r"(?:tumou?r|cancer)[^.,;!?]*",
        " ",
    ),
)
_REREAD_RX = tuple((re.compile(rf"(?<![\w'])(?:{p})(?![\w'])"), r) for p, r in REREAD)

# "A problem down there" is a man's or a boy's urological, a woman's gynaecological: the lay
# lexicon reads it as the latter, so a male subject says which.
_MALE = re.compile(
    r"(?<![\w'])(?:boy|son|husband|he|he's|his|him|dad|father|brother|grandad|grandpa|man|"
    r"partner's (?:balls|willy)|penis|willy|balls|testic\w*|scrotum)(?![\w'])"
)
_DOWN_THERE = re.compile(
    r"(?<![\w'])(?:down there|downstairs|down below|privates|private parts)(?![\w'])"
)

# Where the skin is the complaint, the body part does not decide: "a mole on my ear", "a sore
# on my nose that bleeds", "a rash on my eyelid" are for a dermatologist. The location words
# go when a skin word is there and no sense or organ function is described.
_SKIN = re.compile(
    r"(?<![\w'])(?:moles?|lesion|rash|eczema|psoriasis|warts?|scab|crust\w*|patch of skin|"
    r"skin|scaly|blisters?|freckle|birthmark|(?:sore|spot|patch|ulcer|lump|growth)\b[^.;]{0,80}"
    r"\b(?:won't|doesn't|does not|isn't|hasn't|never|not) (?:\w+ )?heal\w*)(?![\w'])"
)
_PLACE = re.compile(
    r"(?<![\w'])(?:on|near|by|behind|above|under|around|inside|in) (?:the |my |his |her |their )?"
    r"(?:(?:left|right|top|side|tip|bridge|back|corner) (?:of )?(?:the |my |his |her )?)?"
    r"(?:ears?|earlobe|nose|nostril|eyelids?|eyes?|eyebrows?|lips?|cheeks?|face|forehead|"
    r"scalp|neck|chest|back|breast|legs?|shins?|arms?|hands?|feet|foot|toes?|fingers?|groin|"
    r"penis|vulva|chin|temple|shoulders?)(?![\w'])"
)
# ... unless the organ's own function is the complaint (hearing, sight, breathing, smell).
_FUNCTION = re.compile(
    r"(?<![\w'])(?:hear\w*|deaf|vision|sight|see|seeing|blind|blurr\w*|breath\w*|smell|"
    r"swallow\w*|discharge|ringing|tinnitus|lump in (?:my|his|her) breast|nipple)(?![\w'])"
)


@functools.lru_cache(maxsize=4096)
def reread(text: str) -> str:
    """`text` (lowercase) with shared words read in context (REREAD) and, where the skin is
    the complaint, the body part's words taken out."""
    for rx, repl in _REREAD_RX:
        text = rx.sub(repl, text)
    if _MALE.search(text):
        text = _DOWN_THERE.sub("penis testicles", text)
    if _SKIN.search(text) and not _FUNCTION.search(text):
        text = _PLACE.sub(" ", text)
    return " ".join(text.split())


# A test that came back normal points away from its specialty ("the ECG was normal" after a
# panic attack): the test's name and its result go before cues are looked for.
_NORMAL_RESULT = re.compile(
    r"[\w-]+(?: [\w-]+){0,6} (?:was|were|is|are|came back|come back|all|looked|showed)"
    r"(?: \w+){0,2} (?:normal|clear|fine|ok|okay|nothing)\b"
)


@functools.lru_cache(maxsize=4096)
def weights(text: str) -> dict[str, float]:
    """Specialty -> how much `text` (lowercase, denied symptoms dropped, reread) names it: a
    cue CUE_WEIGHT, a test or request STRONG_WEIGHT; specialties named by nothing are absent."""
    text = _NORMAL_RESULT.sub(" ", text)
    out = {spec: CUE_WEIGHT for spec, rx in _CUE_RX.items() if rx.search(text)}
    for spec, rx in _STRONG_RX.items():
        for m in rx.finditer(text):
            got = RESULT_WEIGHT if _RESULT.match(text, m.end()) else STRONG_WEIGHT
            out[spec] = max(out.get(spec, 0.0), got)
    out.update({spec: ASK_WEIGHT for spec, rx in _ASK_RX.items() if rx.search(text)})
    return out
