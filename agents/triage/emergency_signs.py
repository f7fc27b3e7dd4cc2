"""The NHS "call 999" red flags in lay words: the patterns agents.triage.emergency judges a
sentence with. Kept apart from the checks so each list reads as the source it comes from
(docs/clinical.md, "The assistant's emergency route"): SWASFT and SECAmb "when to call 999",
the FAST stroke signs, NICE NG143's red features in a feverish child.

Each pattern is written for text normalised by agents.triage.red_flags.norm_chat (casefolded,
apostrophes restored) with denied symptoms already dropped.
"""

from __future__ import annotations

import re

# A time span in minutes or hours ("for the last half hour", "over an hour now", "25 mins"):
# chest pain that has lasted it is not a twinge. Days and weeks are a booking's.
SPAN = (
    r"(?:(?:for|over|more than|about|around|nearly|almost|the last|the past|at least|"
    r"going|been)\s+)*(?:\d+|a|an|half an?|half|twenty|thirty|forty|ten|fifteen) "
    r"(?:minutes?|mins?|hours?|hrs?|hour)\b"
)
# Onset today, in so many words: what makes confusion, one-sided weakness or a headache sudden.
TODAY = (
    r"sudden\w*|all of a sudden|out of (?:nowhere|the blue)|just now|this (?:morning|afternoon|"
    r"evening)|tonight|today|right now|in the (?:last|past) (?:hour|few hours|\d+ hours?)|"
    r"(?:minutes?|mins?|an hour|hours?) ago|since (?:about |around )?(?:\d+|lunch|breakfast|"
    r"dinner|tea|this morning|last night|yesterday)|(?:was|were|seemed) (?:completely |totally |"
    r"perfectly )?(?:normal|fine|ok|okay) (?:yesterday|this morning|earlier|an hour ago)|"
    r"came on (?:instantly|suddenly|out of nowhere)|instantly|overnight"
)
TODAY_RX = re.compile(r"\b(?:" + TODAY + r")\b")
# Happening now, in so many words ("I think I'm having a heart attack").
HAVING = (
    r"(?:i'm|i am|he's|he is|she's|she is|they're|is|think (?:i'm|he's|she's|it's|its|i am|"
    r"he is|she is|mum is|dad is)|might be|could be|may be) having"
)
# A fear or a risk named is not the event: "I'm scared of a stroke because my mum had one".
FEAR = re.compile(
    r"\b(?:scared|afraid|terrified|frightened|worried|anxious|paranoid|fear|risk|chance) "
    r"(?:of|about) (?:\w+ ){0,2}(?:stroke|heart attack)s?\b[^.;!?]*"
)

# --- chest pain that may be a heart attack ------------------------------------------------
CHEST = (
    r"(?:chest|heart) (?:pains?|tightness|pressure|heaviness|discomfort|ache)"
    r"|(?:pain|pains|tightness|pressure|heaviness|discomfort|crushing|squeezing|ache|burning)"
    r"(?: \w+){0,3} (?:in|across|on|over|through|around) (?:\w+ ){0,4}?chest"
    r"|chest (?:\w+ ){0,3}(?:feels|is|felt|was|went|has been|been|gone) (?:\w+ ){0,2}?"
    r"(?:tight|heavy|crushed|squeezed|painful|sore|hurting)"
    r"|(?:tight|heavy|crushing|squeezing|painful) chest"
    r"|chest and (?:his |her |my )?(?:left )?arm"
    r"|" + HAVING + r" a heart attack|elephant (?:sat|sitting|on) (?:on )?(?:my|his|her) chest"
    r"|angina|band (?:round|around|across) (?:my|his|her|the) chest"
    r"|clutch\w* (?:at )?(?:my|his|her|their) chest"
    r"|elephant (?:sat|sitting|standing) on (?:him|her|me|them)"
)
# On its own, chest pain with these is a heart attack until shown otherwise (NHS: chest pain
# that does not go away, spreads to the arm, jaw, neck or back, with sweating or sickness).
CHEST_ACUTE = (
    r"right now|at the moment|currently|as we speak|at rest|while (?:i'm |he's |she's )?"
    r"(?:resting|sitting|sat|lying|asleep|watching)|sitting (?:still|down)|sat (?:down|watching)"
    r"|woke (?:me|him|her) up|lying down|even lying"
    r"|(?:won't|doesn't|does not|isn't|is not|not|hasn't|has not|haven't|wont) (?:\w+ )?"
    r"(?:go away|go off|going away|gone away|gone off|eas\w*|settl\w*|stop\w*|let up|shift\w*|"
    r"working|helping)"
    r"|" + SPAN + r"|since (?:about |around )?(?:\d+|this morning|breakfast|lunch)"
    r"|crushing|squeez\w*|like an? (?:elephant|weight|vice|vise|band)|band (?:tighten\w*|round)"
    r"|worst (?:pain|i've|ever)|" + HAVING + r" a heart attack"
    r"|suddenly|sudden|came on|started (?:an? hour|this morning|tonight|just now|earlier)"
    r"|grey|gray|clammy|sweat\w*|cold sweat|feel(?:s|ing)? (?:\w+ )?(?:sick|faint)|been sick"
    r"|vomit\w*|nause\w*"
    r"|(?:spread\w*|going|radiat\w*|moving|shoot\w*|through) (?:up |down |in|into |to |"
    r"through )?(?:to |into )?(?:my |his |her |the )?(?:left |right |both )?"
    r"(?:arms?|jaw|neck|back)|chest and (?:his |her |my )?(?:left )?arm"
)
# Brought on by effort and relieved by rest: stable angina, a cardiologist's booking.
EXERTIONAL = re.compile(
    r"\b(?:when|whenever|if|as soon as|every time) (?:i|he|she|they|we) (?:walk|climb|run|"
    r"jog|exercise|hurry|rush|go up|do|carry|exert|play|work out|dance|swim|cycle|garden)"
    r"|\bon (?:the )?(?:stairs|exertion|hills?)|\bup (?:the )?(?:stairs|hills?)"
    r"|\b(?:during|after) (?:exercise|exertion|a walk|walks|my walk|the gym|running)"
    r"|\b(?:goes|go|went|eases|settles|stops|wears) (?:off |away )?(?:when|after|once|if) "
    r"(?:i |he |she )?(?:rest|stop|sit)"
)
# An acute marker that outweighs an exertional trigger: it is there now, or will not settle.
CHEST_STILL = re.compile(
    r"\b(?:right now|at the moment|at rest|as we speak|while (?:resting|sitting|lying)"
    r"|(?:won't|doesn't|does not|isn't|hasn't|not) (?:\w+ )?(?:go away|going away|gone away|"
    r"go off|gone off|eas\w*|settl\w*|stop\w*|working|helping)|even (?:when|at|after) (?:i |he |she )?rest\w*"
    r"|crushing|" + SPAN + r")"
)
# Heartburn after food, a chest that "feels heavy with sadness": the words, not the emergency.
CHEST_NOT = re.compile(
    r"\b(?:after (?:eating|meals?|food|dinner|tea)|when i eat|heartburn|indigestion|acid|"
    r"reflux|sadness|grief|heavy heart|heartbroken|when (?:i'm |i am |i get )?(?:anxious|stressed|"
    r"nervous|worried))\b"
)
NOT_INDIGESTION = re.compile(r"\bnot (?:like )?(?:my |the )?usual (?:indigestion|heartburn)")

# --- stroke (FAST) ----------------------------------------------------------------------
STROKE = (
    r"(?:face|mouth|smile|lip)(?: \w+){0,4}? (?:suddenly |gone |all |kind of |a bit |really )?"
    r"(?:dropp\w*|droop\w*|droopy|sag\w*|lopsided|fallen|slipped|twisted|crooked|wonky|uneven)"
    r"|(?:droop\w*|droopy|lopsided|crooked|wonky|uneven) (?:face|mouth|smile)"
    r"|slurr\w*|(?:speech|words|talking|voice) (?:is |are |was |has |have |went |gone )?"
    r"(?:become |gone |all )?(?:slurred|garbled|jumbled|muddled|nonsense)"
    r"|(?:can't|cannot|couldn't|could not|unable to|can not) (?:lift|raise|move|hold up) "
    r"(?:his|her|my|their|one|either|the) (?:left |right )?arms?"
    r"|(?:arm|leg|hand|side) (?:has |is |just )?(?:suddenly )?(?:went|gone|became) "
    r"(?:weak|numb|dead|limp|floppy|heavy)"
    r"|sudden(?:ly)? (?:weak\w*|numb\w*|paraly\w*|(?:can't|cannot) (?:move|feel))"
    r"|(?:suddenly|all of a sudden) (?:lost (?:the )?(?:sight|vision)|went blind|gone blind|"
    r"(?:can't|cannot|couldn't) (?:see|speak|talk|understand|hear|walk|stand|find (?:the |his |"
    r"her |my )?words|get (?:the |his |her |my )?words out|move (?:his|her|my|one|the) "
    r"(?:arm|leg|side)))|(?:arm|hand|leg) (?:\w+ )?(?:keeps? )?drift\w* down"
    r"|sudden (?:loss of )?(?:sight|vision) loss"
    r"|sudden(?:ly)? (?:lost|loss of) (?:the )?(?:sight|vision)"
    r"|" + HAVING + r" a stroke|(?:looks|look|seems|seem) like (?:a|she's having a|he's having a) "
    r"stroke"
)
# Weakness or numbness down one side is a stroke sign when it came on suddenly (NHS); on its
# own it is also a neuropathy's or an old injury's, for a neurologist.
ONE_SIDE = re.compile(
    r"\b(?:weak|numb|weakness|numbness|paraly\w*|tingl\w*)(?: in| on| down)? "
    r"(?:(?:his|her|my|their|the) )?(?:left |right |whole )?(?:side of (?:his|her|my|the) )?"
    r"(?:one|left|right|whole) side"
    r"|\b(?:left|right) (?:hand|arm|leg|side) (?:is |has gone |went |feels |felt )?"
    r"(?:\w+ )?(?:weak|numb|dead|heavy|useless)"
)
# An old stroke's lasting signs, reviewed: "since her stroke in 2021 her speech is slurred
# when she's tired, nothing new".
NOT_STROKE = re.compile(
    r"\b(?:had|has had|have had|after|since|recovering from|recovered from|history of|"
    r"years? ago|months? ago|last year|previous|old|mini)\b[^.;!?]{0,30}\bstroke"
    r"|\bstroke (?:risk|clinic|nurse|survivor|rehab\w*|years ago|in (?:19|20)\d\d)"
    r"|\bheat ?stroke|\bstroke (?:his|her|my) (?:hair|back|cat|dog)"
    r"|\bnothing new\b|\bsame as (?:always|ever|usual)\b|\bfor years\b"
)

# --- breathing ---------------------------------------------------------------------------
BREATH = (
    r"(?:can't|cannot|can not|couldn't|could not|unable to|struggling to|fighting to|"
    r"fighting for|gasping for|gasping|struggles to|hardly|barely) ?(?:breathe|breathing|"
    r"breath|air|get (?:my|his|her|a|their) breath)"
    r"|(?:blue|grey|gray) (?:lips|tongue)"
    r"|(?:he's|she's|hes|shes|he is|she is|they're|baby's|baby is|he|she) (?:\w+ )?(?:going|gone|"
    r"turning|"
    r"turned) (?:a bit |slightly |really )?(?:grey|gray|blue)"
    r"|too (?:breathless|out of breath) to (?:talk|speak|finish|get)"
    r"|(?:can't|cannot|can|could) (?:hardly |barely )?(?:speak|talk|finish|say) (?:in )?"
    r"(?:full |a full |whole |a )?sentences?|(?:can|could) (?:hardly|barely) (?:talk|speak)"
    r"|(?:is|he's|she's|i'm|baby's|he is|she is|i am) choking"
    r"|(?:severe\w*|really bad|very bad|terribly) (?:short of breath|breathless\w*)"
    r"|(?:really |very |so )?(?:bad|severe) asthma attack|(?:inhaler|puffer|nebuli[sz]er)"
    r"(?: \w+){0,10}? (?:doing nothing|not working|isn't working|not helping|isn't helping|"
    r"no help|no use|doesn't help)"
    r"|stopped breathing|not breathing"
    r"|sudden(?:ly)? (?:\w+ )?(?:breathless\w*|short of breath|shortness of breath|out of breath)"
)
# Signs that are an emergency whatever the situation: blue lips, pink froth, neck muscles.
BREATH_SEVERE = re.compile(
    r"\b(?:(?:lips|tongue|face|skin)(?: \w+){0,3} (?:blue|bluish|blueish|grey|gray|greyish|"
    r"purple|dusky)|(?:pink|pinkish|frothy)(?: \w+){0,2} (?:froth|frothy|phlegm|spit|stuff|"
    r"sputum)|bubbl\w* (?:\w+ )?(?:in|from) (?:his|her|my|their) chest|using (?:his|her|my|their) "
    r"(?:neck|tummy|stomach) muscles|suffocat\w* even (?:sitting|lying|resting))"
)
# Breath that will not come back even at rest, or since an hour ago, is not asthma's usual.
CATCH_BREATH = re.compile(r"\b(?:can't|cannot|couldn't) catch (?:my|his|her|their) breath")
AT_REST = re.compile(
    r"\b(?:even (?:sat|sitting|at rest|resting|lying|when (?:i'm |he's |she's )?resting)|"
    r"at all|getting worse|started (?:an? |about an? )?(?:hour|\d+ min\w*) ago|right now)\b"
)
# A situation that makes it recurring and for a booking: "I can't breathe through my nose",
# "can't catch my breath when I walk", "when I lie flat".
BREATH_SITUATIONAL = re.compile(
    r"^\W*(?:\w+\W+){0,2}?(?:through (?:my|his|her|the|one|their) (?:nose|nostril)|when|whenever|"
    r"if|after|unless|well|as well|properly|easily|normally|like (?:i|he|she|they) used to|"
    r"any ?more|on the|up the|going up|during|"
    r"at night|in the night|lying|while (?:walking|"
    r"climbing|running|exercising|lying)|sometimes|every)"
)
# Just before the words: a feeling described ("I feel like I can't breathe": panic) or a
# night-time pattern ("I wake up gasping": heart failure), both for a booking.
BREATH_FELT = re.compile(
    r"(?:feel(?:s|ing)? like|felt like|as if|as though|like|(?:wake|woke|waking) (?:up )?|"
    r"at night|panic\w*|anxious|anxiety|terrified|scared|frightened|in (?:my|his|her) sleep|"
    r"pillows? or|or else|otherwise|unless)"
    r"\W*(?:\w+\W+){0,2}$"
)

# --- collapse, unconscious, fits ---------------------------------------------------------
COLLAPSE = (
    r"collaps\w*|unconscious|unresponsive|not responding|isn't responding|won't respond"
    r"|(?:won't|can't|cannot|couldn't|can not) (?:wake (?:him|her|them|up)|be woken|rouse)"
    r"|(?:won't|not|isn't) waking(?: up)?|(?:hard|difficult|impossible) to (?:wake|rouse)"
    r"|(?:hasn't|isn't|not|won't|hasnt) (?:come|coming) (?:round|around|to)\b"
    r"|(?:can't|cannot|couldn't) get (?:him|her|them) to (?:open|wake|respond|answer)"
    r"|knocked (?:out|unconscious)|out cold"
    r"|(?:fit|seizure|convulsion|fitting|seizing|convulsing)\w* (?:that |which )?"
    r"(?:won't|will not|isn't|is not|hasn't|not) (?:stop\w*|ending)"
    r"|(?:fit|seizure|fitting|seizing|convulsing|jerking)\w*[^.;!?]{0,40}? (?:for )?(?:about |"
    r"over |more than |nearly |almost )?(?:\d+|five|six|seven|eight|ten) (?:minutes?|mins?)"
    r"|(?:fit|seizure|fitting|jerking|shaking)\w*(?: \w+){0,6}? (?:it's |its |and )?(?:not|isn't|"
    r"won't) stopping|first (?:one )?ever|never had (?:one|a fit|a seizure) (?:before|in (?:his|her|my) life)|(?:is|he's|she's|it's) (?:having a (?:fit|seizure)|fitting|seizing)"
    r"|first (?:ever )?(?:fit|seizure)|(?:fit|seizure) for the first time"
    r"|(?:another|a second|one after another|back to back)[^.;!?]{0,30}without (?:coming round|"
    r"waking|coming to)|without coming (?:round|to) in between"
)
LONG_AGO = re.compile(
    r"\b(?:ago|last (?:week|month|year|summer|winter|spring|autumn)|over the years|for years|"
    r"for months|"
    r"in (?:19|20)\d\d|as a (?:child|kid|teenager)|once before|a while back|used to|"
    r"in (?:his|her|my) sleep)\b"
)
# "I can't lift my arm above my head / because of the stiffness": a shoulder's, not a stroke's.
ARM_JOINT = re.compile(
    r"\W*(?:\w+\W+){0,2}?(?:above|over|up to|past|because|due to|stiff\w*|pain\w*|hurt\w*|sore|"
    r"in the mornings?|without pain|to (?:brush|comb|reach|wash|dress|put|get))"
)
CAME_ROUND = re.compile(
    r"\b(?:came (?:a)?round|came to|after a (?:few )?(?:seconds|moment)|(?:was|were) fine after|"
    r"got up (?:straight away|again))\b"
)
RECENT = re.compile(r"\b(?:minutes?|mins?|an hour|an hr|hours?|hrs?) ago\b")
SUDDEN_WORD = re.compile(r"\bsudden\w*|\ball of a sudden\b")


# Getting worse, in so many words: with "sudden", what outweighs a usual-sounding qualifier.
WORSENING = re.compile(
    r"\b(?:getting worse|worse and worse|worsening|nothing like (?:my )?usual)\b"
)


def past(s: str) -> bool:
    """An event long past ("two years ago", "last month"), not minutes or hours ago."""
    return bool(LONG_AGO.search(s)) and not RECENT.search(s)


# --- bleeding ----------------------------------------------------------------------------
BLEED = (
    r"(?:bleed\w*|blood|nose ?bleeds?)(?: \w+){0,8}? (?:won't|will not|doesn't|does not|isn't|can't|cannot|"
    r"not|wont) (?:\w+ )?(?:stop\w*|slow\w* down)"
    r"|(?:can't|cannot|couldn't) (?:stop|get) (?:the |it |his |her |my )?(?:bleed\w*|blood)"
    r"(?: to stop)?"
    r"|(?:vomit\w*|throw\w* up|threw up|sick(?:ing)? up|being sick|spew\w*) "
    r"(?:up )?(?:lots of |a lot of |loads of |fresh |bright red |dark |some |a bit of )?blood"
    r"|cough\w* up (?:lots of|a lot of|loads of|large amounts of|a cupful of|cups of) blood"
    r"|coffee[- ]?grounds?"
    r"|(?:blood|bleeding) (?:is )?(?:pouring|gushing|spurting|soaking)|soak\w* through"
    r"|(?:pouring|gushing|spurting|streaming) (?:with )?blood|(?:keeps?|still|just) (?:pouring|"
    r"gushing|spurting)|bleeding (?:massively|heavily|profusely|badly|like mad)"
    r"|(?:bleeding|blood) (?:heavily|everywhere) from"
)
# A lot of blood with the signs of losing it (NHS: heavy bleeding; faint, pale, racing heart).
MUCH_BLOOD = re.compile(
    r"\b(?:huge|large|massive|big|lot of|lots of|loads of|so much|full of)(?: amount of)?"
    r"(?: \w+){0,2} (?:blood|red)\b"
)
SHOCK = re.compile(
    r"\b(?:light-?headed|faint\w*|dizzy|pale|clammy|(?:heart|pulse) (?:is )?racing|"
    r"can't (?:really )?stand|cold and sweaty|shaky|pass(?:ing)? out)\b"
)
PREGNANT = re.compile(r"\bpregnan\w*|\b\d+ weeks? (?:gone|along)\b")
# Menstrual bleeding that will not stop is for a gynaecologist (NHS: heavy periods, see a GP).
NOT_BLEED = re.compile(r"\b(?:periods?|menstrua\w*|spotting|time of the month|pads?|tampons?)\b")

# --- anaphylaxis -------------------------------------------------------------------------
PART = r"(?:tongue|throat|lips?|face|mouth)"
SWELL = (
    rf"{PART}(?: and (?:my |his |her |the )?\w+)? (?:(?:are|is|has|have|been|started|"
    r"starting|getting|feels?|felt|looks?|gone|going|keeps?|is starting to|so|really|very|all)"
    r" )*(?:to )?(?:swell\w*|swollen|huge|massive|thick|funny|puff\w*|closing|closed|tight|"
    r"blown up)"
    rf"|swell\w* (?:of|in|up in|up of) (?:his |her |my |the )?{PART}"
)
SWELL_RX = re.compile(r"\b(?:" + SWELL + r")")
# Tongue or throat swelling is the airway; lips, face or eyes only with a trigger or a sign.
AIRWAY = re.compile(r"\b(?:tongue|throat)\b")
ALLERGY_CONTEXT = re.compile(
    r"\b(?:sting|stung|bite|bitten|nuts?|peanuts?|shellfish|prawns?|allerg\w*|breath\w*|"
    r"hives|wheez\w*|chok\w*|swallow\w*|dizzy|faint|antibiotic|tablet|injection|reaction|"
    r"hoarse|suddenly|just now|right now|minutes?)\b"
)
# A swelling that comes and goes, or has a dental cause, is for a booking.
NOT_ALLERGY = re.compile(
    r"\b(?:cold sore|tooth|dental|abscess|every morning|in the mornings|for (?:weeks|months)|"
    r"sometimes|often|whenever|every time|now and then)\b"
)

# --- head: sudden severe headache, meningitis, head injury --------------------------------
HEADACHE = re.compile(
    r"\bheadache|\bhead (?:is )?(?:killing|pounding|exploding)|explosion in (?:my|his|her) head"
)
HEAD_SEVERE = re.compile(
    r"\b(?:worst|never had (?:one|anything) like|thunderclap|explo\w*|like (?:a|being) "
    r"(?:hit|kicked|bang)|instantly|out of nowhere|came on (?:suddenly|in seconds)|"
    r"stiff neck|neck (?:is |feels )?(?:so |really |very )?stiff|light (?:is )?(?:\w+ )?"
    r"(?:hurts|hurting|killing)|can't (?:look at|stand) (?:the )?light|chin (?:on|to) (?:my |his |"
    r"her )?chest|sudden\w* "
    r"(?:\w+ ){0,2}(?:severe|excruciating|agoni[sz]ing|blinding|terrible))"
)
HEAD_INJURY = (
    r"(?:hit|bumped|banged|knocked|cracked|bashed|smacked)(?: \w+){0,2} head"
    r"|(?:knock|bang|blow|hit) (?:to|on) (?:the|his|her|my) head|head injury|car crash|"
    r"fell (?:off|from|down)"
)
INJURY_SIGNS = re.compile(
    r"\b(?:knocked out|unconscious|out cold|vomit\w*|being sick|been sick|sick (?:twice|again)|"
    r"drowsy|confused|won't wake|fluid|blood (?:\w+ ){0,4}(?:ears?|nose)|passed out|"
    r"can't remember)"
)
HEAD_INJURY_RX = re.compile(r"\b(?:" + HEAD_INJURY + r")")

# --- sudden confusion --------------------------------------------------------------------
CONFUSED = re.compile(
    r"\b(?:confused|confusion|disorientat\w*|delirious|muddled|not making (?:any )?sense|"
    r"talking nonsense|(?:not|wasn't|isn't) making (?:any )?sense|can't get (?:any )?sense|"
    r"(?:can't|cannot|couldn't) (?:answer|tell (?:me|us)) (?:\w+ ){0,3}(?:questions?|what day|"
    r"where|address|name)|doesn't (?:know|recognise|recognize) "
    r"(?:where|who|us|me|what day)|acting (?:really |very )?(?:strange|odd|weird))"
)
GRADUAL = re.compile(
    r"\b(?:months?|years?|gradual\w*|slowly|over time|getting worse|more and more|dementia|"
    r"memory clinic|for weeks|keeps forgetting)\b"
)

# --- a child who is seriously unwell (NICE NG143 red features) ----------------------------
CHILD = (
    r"non[- ]?blanching"
    r"|(?:is|he's|she's|baby's|seems|so|really|very|gone|went|all|limp and) "
    r"(?:floppy|limp and unresponsive)"
    r"|(?:high[- ]pitched|weak|continuous)(?:,? (?:high[- ]pitched|weak))? (?:cry|crying|scream\w*)"
    r"|bulging (?:soft spot|fontanelle)"
    r"|(?:ribs|tummy|chest|skin|neck)(?: \w+){0,2} (?:suck\w*|pull\w*|draw\w*|caving) in"
    r"|grunting (?:with|on|at) (?:every|each) breath|grunting (?:when|as) (?:he|she|they) breathes?"
    r"|working (?:really |very |so )?hard to breathe"
    r"|(?:blue|bluish|grey|mottled|blotchy and (?:blue|bluish))(?: \w+)? (?:skin|lips|tongue)"
    r"|skin (?:looks |is )?(?:\w+ )?(?:and )?(?:blue|bluish|mottled)"
)


# The glass test (NHS, meningitis): spots or a rash that do not fade under a pressed glass.
NO_FADE = re.compile(
    r"\b(?:rash|spots|blotches|marks|dots)\b[^.;!?]{0,80}?\b(?:that |which )?(?:doesn't|does not|"
    r"won't|don't|didn't|isn't|aren't|not) (?:\w+ )?(?:fade|go away|disappear|blanch)"
)
GLASS = re.compile(r"\b(?:glass|press\w*|push\w*|blanch\w*)\b")

CHEST_RX = re.compile(r"\b(?:" + CHEST + r")")
CHEST_ACUTE_RX = re.compile(r"\b(?:" + CHEST_ACUTE + r")")
STROKE_RX = re.compile(r"\b(?:" + STROKE + r")")
BREATH_RX = re.compile(r"\b(?:" + BREATH + r")")
COLLAPSE_RX = re.compile(r"\b(?:" + COLLAPSE + r")")
BLEED_RX = re.compile(r"\b(?:" + BLEED + r")")
CHILD_RX = re.compile(r"\b(?:" + CHILD + r")")
