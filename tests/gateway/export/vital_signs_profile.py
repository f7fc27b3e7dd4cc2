"""The checks of the FHIR vital-signs profiles (R4 / R4B `observation-vitalsigns` and its
children: heartrate, resprate, oxygensat, bodytemp, bp) that fhir.resources does not make: it
validates the base resource's structure and types, never a profile's slices, fixed codes and
invariants. Each check names its source.

- vs-1: effectiveDateTime precise to the day at least (`$this is dateTime implies
  $this.toString().length() >= 10`);
- vs-2: without component or hasMember, a value[x] or a dataAbsentReason;
- vs-3: every component has a value[x] or a dataAbsentReason;
- obs-6: dataAbsentReason only when there is no value[x] (Observation and component);
- obs-7: a component coded like the Observation carries no value;
- category: the VSCat slice (1..1): observation-category `vital-signs`;
- subject 1..1 Reference(Patient); effective[x] 1..1 (dateTime or Period);
- code: each child profile's fixed LOINC code (oxygensat: 2708-6, and 59408-5 for pulse
  oximetry); valueQuantity: value, unit, system UCUM and code 1..1, the child's UCUM unit;
- bp: no value on the panel; SystolicBP 8480-6 and DiastolicBP 8462-4 components, once each,
  in mm[Hg] (or absent with a reason).
"""

from __future__ import annotations

import re
from typing import Any

SD = "http://hl7.org/fhir/StructureDefinition/"
LOINC = "http://loinc.org"
UCUM = "http://unitsofmeasure.org"
CATEGORY = "http://terminology.hl7.org/CodeSystem/observation-category"
INTERPRETATION = "http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation"
# child profile -> (required LOINC codes, allowed UCUM units)
CHILDREN: dict[str, tuple[set[str], set[str]]] = {
    SD + "heartrate": ({"8867-4"}, {"/min"}),
    SD + "resprate": ({"9279-1"}, {"/min"}),
    SD + "oxygensat": ({"2708-6", "59408-5"}, {"%"}),
    SD + "bodytemp": ({"8310-5"}, {"Cel", "[degF]"}),
    SD + "bp": ({"85354-9"}, set()),
}
BP_PARTS = {"8480-6": "systolic", "8462-4": "diastolic"}
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}")
_VALUE_KEYS = ("valueQuantity", "valueCodeableConcept", "valueString", "valueBoolean",
               "valueInteger", "valueRange", "valueRatio", "valueSampledData", "valueTime",
               "valueDateTime", "valuePeriod")  # fmt: skip


def _value(x: dict[str, Any]) -> str | None:
    return next((k for k in _VALUE_KEYS if k in x), None)


def _codes(concept: dict[str, Any], system: str) -> set[str]:
    return {c["code"] for c in concept.get("coding", []) if c.get("system") == system}


def _quantity(q: dict[str, Any], units: set[str], where: str) -> list[str]:
    out = [f"{where}: valueQuantity.{k} missing" for k in ("value", "unit", "system", "code")
           if q.get(k) in (None, "")]  # fmt: skip
    if q.get("system") != UCUM:
        out.append(f"{where}: valueQuantity.system is not UCUM")
    if units and q.get("code") not in units:
        out.append(f"{where}: UCUM code {q.get('code')!r} not in {sorted(units)}")
    return out


def generic_problems(obs: dict[str, Any]) -> list[str]:
    """obs-6, obs-7 and vs-3-like checks every Observation must pass (NEWS2 included)."""
    out: list[str] = []
    if _value(obs) and "dataAbsentReason" in obs:
        out.append("obs-6: value and dataAbsentReason both present")
    own = {(c.get("system"), c.get("code")) for c in obs.get("code", {}).get("coding", [])}
    for i, comp in enumerate(obs.get("component", [])):
        has = _value(comp)
        if has and "dataAbsentReason" in comp:
            out.append(f"obs-6: component {i} has a value and a dataAbsentReason")
        if not has and "dataAbsentReason" not in comp:
            out.append(f"vs-3: component {i} has neither value nor dataAbsentReason")
        codes = {(c.get("system"), c.get("code")) for c in comp.get("code", {}).get("coding", [])}
        if has and codes & own:
            out.append(f"obs-7: component {i} coded like the Observation carries a value")
    return out


def vital_signs_problems(obs: dict[str, Any]) -> list[str]:
    """Everything wrong with one Observation that claims a vital-signs profile."""
    out = generic_problems(obs)
    profiles = set(obs.get("meta", {}).get("profile", []))
    if not profiles & ({SD + "vitalsigns"} | set(CHILDREN)):
        return [*out, "no vital-signs profile claimed"]
    if obs.get("status") not in {"registered", "preliminary", "final", "amended"}:
        out.append(f"status {obs.get('status')!r} is not a result status")
    if not any("vital-signs" in _codes(c, CATEGORY) for c in obs.get("category", [])):
        out.append("category: no observation-category vital-signs (VSCat)")
    if not str(obs.get("subject", {}).get("reference", "")):
        out.append("subject: missing (1..1)")
    if "effectiveDateTime" in obs:
        if not _DAY.match(obs["effectiveDateTime"]):
            out.append("vs-1: effectiveDateTime not precise to the day")
    elif "effectivePeriod" in obs:
        if not _DAY.match(obs["effectivePeriod"].get("start", "")):
            out.append("vs-1: effectivePeriod.start not precise to the day")
    else:
        out.append("effective[x]: missing (1..1)")
    if not obs.get("code", {}).get("coding"):
        out.append("code: no coding")
    bare = not obs.get("component") and not obs.get("hasMember")
    if bare and not _value(obs) and "dataAbsentReason" not in obs:
        out.append("vs-2: neither value[x] nor dataAbsentReason")
    if "valueQuantity" in obs:
        units = set().union(*(CHILDREN[p][1] for p in profiles if p in CHILDREN))
        out += _quantity(obs["valueQuantity"], units, "Observation")
    for p in profiles & set(CHILDREN):
        need, _ = CHILDREN[p]
        missing = need - _codes(obs["code"], LOINC)
        if missing:
            out.append(f"{p.rsplit('/', 1)[1]}: code lacks LOINC {sorted(missing)}")
    if SD + "bp" in profiles:
        out += _bp(obs)
    for concept in obs.get("interpretation", []):
        if not _codes(concept, INTERPRETATION):
            out.append("interpretation: not a v3 ObservationInterpretation code")
    return out


def _bp(obs: dict[str, Any]) -> list[str]:
    out = []
    if _value(obs):
        out.append("bp: the panel itself carries a value")
    seen: dict[str, int] = {}
    for comp in obs.get("component", []):
        for code in _codes(comp.get("code", {}), LOINC) & set(BP_PARTS):
            seen[code] = seen.get(code, 0) + 1
            if "valueQuantity" in comp:
                out += _quantity(comp["valueQuantity"], {"mm[Hg]"}, BP_PARTS[code])
    for code, name in BP_PARTS.items():
        if seen.get(code) != 1:
            out.append(f"bp: {name} component ({code}) {seen.get(code, 0)} times, not once")
    return out
