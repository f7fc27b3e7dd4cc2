"""The codes an export uses: LOINC and UCUM per vital (the FHIR vital-signs profiles),
SNOMED CT for NEWS2, HL7 code systems, and deterministic ids (`urn:uuid:` fullUrls).

docs/fhir.md lists them with their sources."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

LOINC = "http://loinc.org"
UCUM = "http://unitsofmeasure.org"
SNOMED = "http://snomed.info/sct"
OBS_CATEGORY = "http://terminology.hl7.org/CodeSystem/observation-category"
INTERPRETATION = "http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation"
ABSENT = "http://terminology.hl7.org/CodeSystem/data-absent-reason"
STATISTICS = "http://terminology.hl7.org/CodeSystem/observation-statistics"
COMM_CATEGORY = "http://terminology.hl7.org/CodeSystem/communication-category"
SD = "http://hl7.org/fhir/StructureDefinition/"
# Our own code systems (no published code fits): the NEWS2 chart rows and the hub's ids.
NEWS2_PARAMETER = "https://healthgw.dev/fhir/CodeSystem/news2-parameter"
PERSON_ID = "https://healthgw.dev/fhir/NamingSystem/person-id"
DEVICE_ID = "https://healthgw.dev/fhir/NamingSystem/device-id"
TEL = "urn:ietf:rfc:3966"

VITAL_SIGNS_CATEGORY = {
    "coding": [{"system": OBS_CATEGORY, "code": "vital-signs", "display": "Vital Signs"}],
    "text": "Vital Signs",
}
SURVEY_CATEGORY = {
    "coding": [{"system": OBS_CATEGORY, "code": "survey", "display": "Survey"}],
    "text": "Survey",
}
NEWS2_CODE = {
    "coding": [
        {
            "system": SNOMED,
            "code": "1104051000000101",
            "display": "Royal College of Physicians National Early Warning Score 2 (NEWS2)"
            " total score",
        }
    ],
    "text": "NEWS2 total score",
}


@dataclass(frozen=True, slots=True)
class VitalCode:
    """One vital's Observation: its profile, LOINC coding(s), and UCUM unit."""

    profile: str
    codings: tuple[tuple[str, str], ...]  # (LOINC code, display)
    text: str
    unit: str  # UCUM code (also the human unit)

    def code(self) -> dict[str, object]:
        return {
            "coding": [{"system": LOINC, "code": c, "display": d} for c, d in self.codings],
            "text": self.text,
        }


VITAL_CODES: dict[str, VitalCode] = {
    "heart_rate": VitalCode(SD + "heartrate", (("8867-4", "Heart rate"),), "Heart rate", "/min"),
    "respiratory_rate": VitalCode(
        SD + "resprate", (("9279-1", "Respiratory rate"),), "Respiratory rate", "/min"
    ),
    "spo2": VitalCode(
        SD + "oxygensat",
        (
            ("2708-6", "Oxygen saturation in Arterial blood"),
            ("59408-5", "Oxygen saturation in Arterial blood by Pulse oximetry"),
        ),
        "Oxygen saturation (pulse oximetry)",
        "%",
    ),
    "body_temperature": VitalCode(
        SD + "bodytemp", (("8310-5", "Body temperature"),), "Body temperature", "Cel"
    ),
    # A wrist or ring sensor reads the skin: not the body-temperature profile (its code is
    # fixed to 8310-5), only the vital-signs base profile.
    "skin_temperature": VitalCode(
        SD + "vitalsigns", (("39106-0", "Temperature of Skin"),), "Skin temperature", "Cel"
    ),
}
BP_PROFILE = SD + "bp"
BP_CODE = {
    "coding": [
        {"system": LOINC, "code": "85354-9", "display": "Blood pressure panel with all children"
         " optional"}
    ],
    "text": "Blood pressure",
}  # fmt: skip
BP_COMPONENTS = {
    "systolic_bp": ("8480-6", "Systolic blood pressure"),
    "diastolic_bp": ("8462-4", "Diastolic blood pressure"),
}
BP_UNIT = "mm[Hg]"

# gateway/monitor/ranges.py RangeClass -> v3 ObservationInterpretation (normal carries none).
INTERPRETATIONS = {
    "low": ("L", "Low"),
    "high": ("H", "High"),
    "critical_low": ("LL", "Critical low"),
    "critical_high": ("HH", "Critical high"),
}
# The chart rows of gateway/monitor/news2.py, as our NEWS2 components say them.
NEWS2_PARAMETER_TEXT = {
    "respiratory_rate": "NEWS2 respiration rate score",
    "spo2": "NEWS2 oxygen saturation score",
    "supplemental_o2": "NEWS2 air or oxygen score",
    "systolic_bp": "NEWS2 systolic blood pressure score",
    "heart_rate": "NEWS2 pulse score",
    "consciousness": "NEWS2 consciousness score",
    "temperature_c": "NEWS2 temperature score",
}


def quantity(value: float, unit: str) -> dict[str, object]:
    return {"value": value, "unit": unit, "system": UCUM, "code": unit}


def absent(code: str, display: str) -> dict[str, object]:
    return {"coding": [{"system": ABSENT, "code": code, "display": display}], "text": display}


NOT_MEASURED = absent("not-performed", "Not Performed")
IMPOSSIBLE = absent("error", "Error")  # a value no human can have: the device was wrong


def interpretation(range_class: str) -> list[dict[str, object]] | None:
    hit = INTERPRETATIONS.get(range_class)
    if hit is None:
        return None
    code, display = hit
    return [{"coding": [{"system": INTERPRETATION, "code": code, "display": display}]}]


_NS = uuid.NAMESPACE_URL.bytes + b"healthgw/fhir/"
_VARIANT = "89ab89ab89ab89ab"


def uid(name: str) -> str:
    """uuid5-style (SHA-1, version 5, RFC 4122 variant) id of `name`: the same export gives
    the same ids. Hand-built: uuid.uuid5 costs four times as much, per Observation."""
    h = hashlib.sha1(_NS + name.encode(), usedforsecurity=False).hexdigest()
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{_VARIANT[int(h[16], 16)]}{h[17:20]}-{h[20:32]}"


def iso(ts: float) -> str:
    """Epoch seconds as an instant with its zone (vs-1: precise to the day at least)."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
