"""Medicine tables for the medication-safety checks: ingredient limits, brand and combination
products with their strengths, drugs taken once a week or once a month, NSAIDs,
anticoagulants and condition synonyms. Every row names its source; docs/clinical.md §8
lists every row and the reasoning. Names are lower-case; strengths in mg.

Sources (abbreviations used in the rows):
  BNF      British National Formulary (monograph named in the row)
  BNFC     BNF for Children
  CKS      NICE Clinical Knowledge Summaries
  MHRA     MHRA Drug Safety Update (month and year in the row)
  NPSA     National Patient Safety Agency alert
  SmPC     Summary of Product Characteristics (electronic medicines compendium, emc)
  US label US OTC "Drug Facts" label (FDA monograph)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limit:
    """An adult maximum for one ingredient, per 24 hours and per dose (mg)."""

    ingredient: str
    max_mg_day: float
    max_mg_dose: float | None
    source: str


@dataclass(frozen=True, slots=True)
class Product:
    """A brand or combination product: what one unit (tablet, capsule, sachet, powder, or
    one ml of a liquid) contains. `family` is the bare name, which alone is ambiguous when the
    family has several members (co-codamol 8/500, 15/500, 30/500)."""

    name: str
    family: str
    form: str  # tablet | capsule | sachet | powder | ml
    per_unit: tuple[tuple[str, float], ...]
    source: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class KnownSchedule:
    """A medicine taken at most once per `period_days`. `doses_mg` restricts the rule to the
    strengths that are only ever given on that schedule (alendronic acid 70 mg is weekly, 10 mg
    is daily); None means every strength."""

    names: tuple[str, ...]
    period_days: int
    label: str
    doses_mg: tuple[float, ...] | None
    danger: str
    source: str


# Adult maximums. The OTC figure is used where it is lower than the prescribing maximum (it
# is what the household can check against the pack); the BNF prescribing maximum is noted.
LIMITS: tuple[Limit, ...] = (
    Limit("paracetamol", 4000, 1000, "BNF paracetamol: 0.5-1 g every 4-6 hours, max 4 g a day"),
    Limit("ibuprofen", 1200, 400, "BNF ibuprofen / SmPC Nurofen: OTC max 1.2 g a day "
          "(prescribed up to 2.4 g a day)"),
    Limit("aspirin", 4000, 1000, "BNF aspirin: analgesic 300-900 mg every 4-6 hours, max 4 g a day"),
    Limit("naproxen", 660, 500, "US label naproxen sodium 220 mg: max 3 in 24 hours; "
          "BNF naproxen: 250-500 mg a dose, prescribed up to 1 g a day"),
    Limit("diclofenac", 150, 75, "BNF diclofenac: max 150 mg a day"),
    Limit("celecoxib", 400, 200, "BNF celecoxib: max 400 mg a day"),
    Limit("codeine", 240, 60, "BNF codeine phosphate: 30-60 mg every 4 hours, max 240 mg a day"),
    Limit("dihydrocodeine", 240, 60, "BNF dihydrocodeine: 30 mg every 4-6 hours, max 240 mg a day"),
    Limit("pseudoephedrine", 240, 60, "SmPC Sudafed Decongestant: 60 mg every 4-6 hours, "
          "max 4 doses (240 mg) a day"),
    Limit("phenylephrine", 48.8, 12.2, "SmPC Lemsip Max Cold & Flu: 12.2 mg a sachet, "
          "max 4 sachets a day"),
    Limit("chlorphenamine", 24, 4, "BNF chlorphenamine: 4 mg every 4-6 hours, max 24 mg a day"),
    Limit("diphenhydramine", 300, 50, "US label (21 CFR 341.72): 25-50 mg every 4-6 hours, "
          "max 300 mg a day"),
    Limit("loratadine", 10, 10, "BNF loratadine: 10 mg once daily"),
    Limit("cetirizine", 10, 10, "BNF cetirizine: 10 mg once daily"),
)  # fmt: skip
LIMIT = {lim.ingredient: lim for lim in LIMITS}

# Other names of the same ingredient (the key is what is counted).
INGREDIENT_SYNONYMS: dict[str, tuple[str, ...]] = {
    "paracetamol": ("paracetamol", "acetaminophen", "apap"),
    "aspirin": ("aspirin", "acetylsalicylic acid"),
    "ibuprofen": ("ibuprofen",),
    "naproxen": ("naproxen",),
    "diclofenac": ("diclofenac",),
    "celecoxib": ("celecoxib",),
    "codeine": ("codeine",),
    "dihydrocodeine": ("dihydrocodeine",),
    "pseudoephedrine": ("pseudoephedrine",),
    "phenylephrine": ("phenylephrine",),
    "chlorphenamine": ("chlorphenamine", "chlorpheniramine"),
    "diphenhydramine": ("diphenhydramine",),
    "loratadine": ("loratadine",),
    "cetirizine": ("cetirizine",),
    "caffeine": ("caffeine",),
    "etoricoxib": ("etoricoxib",),
    "meloxicam": ("meloxicam",),
    "mefenamic acid": ("mefenamic acid",),
    "indometacin": ("indometacin", "indomethacin"),
    "ketoprofen": ("ketoprofen",),
    "piroxicam": ("piroxicam",),
    "etodolac": ("etodolac",),
    "nabumetone": ("nabumetone",),
    "flurbiprofen": ("flurbiprofen",),
    "dexketoprofen": ("dexketoprofen",),
    "ketorolac": ("ketorolac",),
}


def _ml(mg: float, per_ml: float) -> float:
    return mg / per_ml  # a liquid's strength per 1 ml, from "mg per N ml"


# fmt: off
PRODUCTS: tuple[Product, ...] = (
    Product("panadol", "panadol", "tablet", (("paracetamol", 500),),
            "SmPC Panadol Advance 500 mg tablets", ("panadol advance", "panadol original")),
    Product("panadol extra", "panadol extra", "tablet", (("paracetamol", 500), ("caffeine", 65)),
            "SmPC Panadol Extra Advance"),
    Product("tylenol regular strength", "tylenol", "tablet", (("paracetamol", 325),),
            "US label Tylenol Regular Strength (acetaminophen 325 mg)"),
    Product("tylenol extra strength", "tylenol", "tablet", (("paracetamol", 500),),
            "US label Tylenol Extra Strength (acetaminophen 500 mg)"),
    Product("tylenol 8 hr", "tylenol", "tablet", (("paracetamol", 650),),
            "US label Tylenol 8 HR Arthritis Pain (acetaminophen 650 mg)",
            ("tylenol arthritis",)),
    Product("calpol infant", "calpol", "ml", (("paracetamol", _ml(120, 5)),),
            "SmPC Calpol Infant Suspension 120 mg/5 ml", ("calpol infant suspension",)),
    Product("calpol six plus", "calpol", "ml", (("paracetamol", _ml(250, 5)),),
            "SmPC Calpol Six Plus Suspension 250 mg/5 ml", ("calpol 6+", "calpol six+")),
    Product("co-codamol 8/500", "co-codamol", "tablet", (("codeine", 8), ("paracetamol", 500)),
            "BNF co-codamol 8/500"),
    Product("co-codamol 15/500", "co-codamol", "tablet", (("codeine", 15), ("paracetamol", 500)),
            "BNF co-codamol 15/500"),
    Product("co-codamol 30/500", "co-codamol", "tablet", (("codeine", 30), ("paracetamol", 500)),
            "BNF co-codamol 30/500"),
    Product("co-dydramol 10/500", "co-dydramol", "tablet",
            (("dihydrocodeine", 10), ("paracetamol", 500)), "BNF co-dydramol 10/500"),
    Product("co-dydramol 20/500", "co-dydramol", "tablet",
            (("dihydrocodeine", 20), ("paracetamol", 500)), "BNF co-dydramol 20/500"),
    Product("co-dydramol 30/500", "co-dydramol", "tablet",
            (("dihydrocodeine", 30), ("paracetamol", 500)), "BNF co-dydramol 30/500"),
    Product("solpadeine plus", "solpadeine", "tablet",
            (("paracetamol", 500), ("codeine", 8), ("caffeine", 30)), "SmPC Solpadeine Plus"),
    Product("solpadeine max", "solpadeine", "tablet", (("paracetamol", 500), ("codeine", 12.8)),
            "SmPC Solpadeine Max"),
    Product("nurofen", "nurofen", "tablet", (("ibuprofen", 200),),
            "SmPC Nurofen 200 mg tablets", ("nurofen 200",)),
    Product("nurofen maximum strength", "nurofen", "tablet", (("ibuprofen", 400),),
            "SmPC Nurofen Maximum Strength 400 mg", ("nurofen express 400", "nurofen 400")),
    Product("nurofen for children", "nurofen for children", "ml", (("ibuprofen", _ml(100, 5)),),
            "SmPC Nurofen for Children 100 mg/5 ml oral suspension"),
    Product("nurofen plus", "nurofen plus", "tablet", (("ibuprofen", 200), ("codeine", 12.8)),
            "SmPC Nurofen Plus"),
    Product("advil", "advil", "tablet", (("ibuprofen", 200),), "US label Advil (ibuprofen 200 mg)"),
    Product("aleve", "aleve", "tablet", (("naproxen", 220),),
            "US label Aleve (naproxen sodium 220 mg)"),
    Product("anadin original", "anadin", "tablet", (("aspirin", 325), ("caffeine", 15)),
            "SmPC Anadin Original"),
    Product("anadin extra", "anadin", "tablet",
            (("aspirin", 300), ("paracetamol", 200), ("caffeine", 45)), "SmPC Anadin Extra"),
    Product("anadin paracetamol", "anadin", "tablet", (("paracetamol", 500),),
            "SmPC Anadin Paracetamol 500 mg"),
    Product("anadin ibuprofen", "anadin", "tablet", (("ibuprofen", 200),),
            "SmPC Anadin Ibuprofen 200 mg"),
    Product("disprin", "disprin", "tablet", (("aspirin", 300),), "SmPC Disprin 300 mg"),
    Product("alka-seltzer original", "alka-seltzer", "tablet", (("aspirin", 324),),
            "SmPC Alka-Seltzer Original (aspirin 324 mg)", ("alka seltzer",)),
    Product("excedrin extra strength", "excedrin", "tablet",
            (("paracetamol", 250), ("aspirin", 250), ("caffeine", 65)),
            "US label Excedrin Extra Strength", ("excedrin migraine",)),
    Product("lemsip max cold & flu", "lemsip", "sachet",
            (("paracetamol", 1000), ("phenylephrine", 12.2)),
            "SmPC Lemsip Max Cold & Flu Lemon (sachet)", ("lemsip max sachet", "lemsip max")),
    Product("lemsip cold & flu original", "lemsip", "sachet",
            (("paracetamol", 650), ("phenylephrine", 10)),
            "SmPC Lemsip Cold & Flu Lemon (sachet)", ("lemsip original", "lemsip lemon")),
    Product("lemsip max cold & flu capsules", "lemsip", "capsule",
            (("paracetamol", 500), ("caffeine", 25), ("phenylephrine", 6.1)),
            "SmPC Lemsip Max Cold & Flu Capsules", ("lemsip max capsules", "lemsip capsules")),
    Product("beechams powders", "beechams", "powder", (("aspirin", 600), ("caffeine", 50)),
            "SmPC Beechams Powders"),
    Product("beechams all in one", "beechams", "ml",
            (("paracetamol", _ml(500, 20)), ("phenylephrine", _ml(10, 20))),
            "SmPC Beechams All-in-One Oral Solution (per 20 ml)", ("beechams all-in-one",)),
    Product("beechams max strength", "beechams", "sachet",
            (("paracetamol", 1000), ("phenylephrine", 12.2)),
            "SmPC Beechams Cold & Flu Hot Lemon (sachet)", ("beechams hot lemon",)),
    Product("night nurse", "night nurse", "ml", (("paracetamol", _ml(1000, 20)),),
            "SmPC Night Nurse Oral Liquid (per 20 ml; also promethazine, dextromethorphan)"),
    Product("day nurse", "day nurse", "capsule",
            (("paracetamol", 500), ("pseudoephedrine", 30)),
            "SmPC Day Nurse Capsules (also pholcodine 5 mg)"),
    Product("sudafed", "sudafed", "tablet", (("pseudoephedrine", 60),),
            "SmPC Sudafed Decongestant Tablets 60 mg", ("sudafed decongestant",)),
    Product("piriton", "piriton", "tablet", (("chlorphenamine", 4),), "SmPC Piriton 4 mg tablets"),
    Product("clarityn", "clarityn", "tablet", (("loratadine", 10),), "SmPC Clarityn 10 mg"),
    Product("zirtek", "zirtek", "tablet", (("cetirizine", 10),), "SmPC Zirtek 10 mg"),
    Product("nytol", "nytol", "tablet", (("diphenhydramine", 25),), "SmPC Nytol 25 mg"),
)
# fmt: on

# Drugs taken once a week (or month): read as daily, they are refused with this danger.
# fmt: off
KNOWN_SCHEDULES: tuple[KnownSchedule, ...] = (
    KnownSchedule(("methotrexate", "maxtrex", "metoject", "nordimet", "zlatal", "jylamvo"), 7,
                  "once a week", None,
                  "taking methotrexate every day instead of once a week has caused fatal "
                  "overdoses",
                  "NPSA/2006/13 oral methotrexate alert; MHRA Drug Safety Update Sept 2020 "
                  "(once-weekly methotrexate: fatal overdose from daily dosing); BNF methotrexate"),
    KnownSchedule(("alendronic acid", "alendronate", "fosamax", "binosto"), 7, "once a week",
                  (70,), "70 mg every day is seven times the dose and can injure the gullet",
                  "BNF alendronic acid (10 mg daily or 70 mg once weekly); SmPC Fosamax Once "
                  "Weekly 70 mg"),
    KnownSchedule(("risedronate", "actonel"), 7, "once a week", (35,),
                  "35 mg every day is seven times the dose",
                  "BNF risedronate sodium (5 mg daily or 35 mg once weekly); SmPC Actonel Once "
                  "a Week 35 mg"),
    KnownSchedule(("ibandronic acid", "ibandronate", "bonviva"), 30, "once a month", (150,),
                  "150 mg is a once-a-month dose",
                  "BNF ibandronic acid (150 mg once a month); SmPC Bonviva 150 mg"),
    KnownSchedule(("semaglutide",), 7, "once a week", (0.25, 0.5, 1, 1.7, 2, 2.4),
                  "semaglutide injections are once a week (only the 3, 7 and 14 mg tablets are "
                  "daily); more often risks severe vomiting and dehydration",
                  "SmPC Ozempic, Wegovy (weekly injection); SmPC Rybelsus (daily tablet)"),
    KnownSchedule(("ozempic", "wegovy"), 7, "once a week", None,
                  "this injection is once a week; more often risks severe vomiting and "
                  "dehydration", "SmPC Ozempic; SmPC Wegovy"),
    KnownSchedule(("dulaglutide", "trulicity"), 7, "once a week", None,
                  "dulaglutide is a once-a-week injection", "SmPC Trulicity"),
    KnownSchedule(("tirzepatide", "mounjaro", "zepbound"), 7, "once a week", None,
                  "tirzepatide is a once-a-week injection", "SmPC Mounjaro"),
    KnownSchedule(("bydureon",), 7, "once a week", None,
                  "Bydureon is a once-a-week injection", "SmPC Bydureon 2 mg"),
    KnownSchedule(("exenatide",), 7, "once a week", (2,),
                  "exenatide 2 mg (prolonged release) is a once-a-week injection",
                  "SmPC Bydureon 2 mg (Byetta 5-10 micrograms is twice daily)"),
)
# fmt: on

# (ingredient, source). Aspirin counts only at analgesic doses (see dose_limits).
NSAIDS: dict[str, str] = {
    name: "BNF non-steroidal anti-inflammatory drugs; NICE CKS NSAIDs - prescribing issues"
    for name in ("ibuprofen", "naproxen", "diclofenac", "celecoxib", "etoricoxib", "meloxicam",
                 "mefenamic acid", "indometacin", "ketoprofen", "piroxicam", "etodolac",
                 "nabumetone", "flurbiprofen", "dexketoprofen", "ketorolac", "aspirin")
}  # fmt: skip
ASPIRIN_ANALGESIC_MG = 300.0  # BNF aspirin: analgesic doses start at 300 mg; 75 mg is antiplatelet

ANTICOAGULANTS: tuple[str, ...] = (
    "warfarin", "apixaban", "rivaroxaban", "edoxaban", "dabigatran", "heparin", "enoxaparin",
    "dalteparin", "tinzaparin", "acenocoumarol", "phenindione",
    # brands
    "coumadin", "eliquis", "xarelto", "lixiana", "pradaxa", "clexane", "fragmin", "innohep",
)  # fmt: skip

# Condition names the household may use -> the name the checks use (after lower-casing and
# turning spaces and hyphens into "_").
CONDITION_SYNONYMS: dict[str, str] = {
    **dict.fromkeys(("ckd", "chronic_kidney_disease", "kidney_disease", "renal_impairment",
                     "chronic_renal_failure", "renal_failure", "kidney_failure"), "ckd"),
    **dict.fromkeys(("hypertension", "high_blood_pressure", "htn"), "hypertension"),
    **dict.fromkeys(("heart_failure", "chf", "congestive_heart_failure", "cardiac_failure",
                     "hfref", "hfpef"), "heart_failure"),
    **dict.fromkeys(("pregnancy", "pregnant"), "pregnancy"),
    **dict.fromkeys(("liver_disease", "cirrhosis", "liver_cirrhosis", "hepatic_impairment",
                     "chronic_liver_disease", "liver_failure", "hepatic_failure"),
                    "liver_disease"),
    **dict.fromkeys(("heavy_alcohol_use", "alcohol", "alcohol_dependence", "alcoholism",
                     "alcohol_use_disorder", "alcohol_misuse", "alcohol_abuse"),
                    "heavy_alcohol_use"),
    **dict.fromkeys(("frail", "frailty", "frail_elderly"), "frail"),
    **dict.fromkeys(("peptic_ulcer", "stomach_ulcer", "duodenal_ulcer", "gastric_ulcer",
                     "gi_bleed", "gastrointestinal_bleeding"), "peptic_ulcer"),
}  # fmt: skip
