"""One person's FHIR R4B resources as plain dicts: Patient, Device, the vital-signs
Observations of one reading (or of one summary window), NEWS2, and Communication.

Plain dicts from fixed shapes, not library models: a month of readings is millions of
Observations, and validating each with pydantic would take minutes. tests/gateway/export/
validates every resource of their exports with fhir.resources R4B and the vital-signs profile
checks the library does not make."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from gateway.contract.device_kinds import kind_of
from gateway.contract.vitals import BY_NAME
from gateway.export import codes
from gateway.household.model import Contact, Person
from gateway.monitor.news2 import News2Result
from gateway.monitor.profile import Profile
from gateway.monitor.ranges import (
    VitalRange,
    classify,
    news2_applicable,
    ranges_for,
    spo2_scale_for,
)

Resource = dict[str, Any]
Entry = tuple[str, Resource]  # (fullUrl, resource)
# Scalar vitals an export turns into Observations, in the order they are written.
SCALARS = ("heart_rate", "respiratory_rate", "spo2", "temperature_c")


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    ref: str  # urn:uuid:...
    body_temperature: bool  # measures body (core) temperature, not skin
    wrist: bool  # a consumer wrist/finger sensor (SpO2 ranges for wrist readings)


@dataclass(slots=True)
class Subject:
    """What every Observation of one person's export needs, computed once."""

    person: Person
    patient_ref: str
    ranges: Mapping[str, VitalRange]
    wrist_ranges: Mapping[str, VitalRange]
    news2_applies: bool
    spo2_scale: int
    devices: dict[str, DeviceInfo] = field(default_factory=dict)

    @classmethod
    def of(cls, person: Person, day: date) -> Subject:
        profile = Profile.from_person(person, day)
        out = cls(
            person=person,
            patient_ref="urn:uuid:" + codes.uid(f"patient/{person.id}"),
            ranges=ranges_for(profile),
            wrist_ranges=ranges_for(profile, wrist=True),
            news2_applies=news2_applicable(profile),
            spo2_scale=spo2_scale_for(profile),
        )
        for d in person.devices:
            trust = kind_of(d.kind).trust("temperature_c", core_temperature=d.core_temperature)
            out.devices[d.id] = DeviceInfo(
                "urn:uuid:" + codes.uid(f"device/{person.id}/{d.id}"),
                body_temperature=trust == "clinical",
                wrist=kind_of(d.kind).trust("spo2") == "wrist",
            )
        return out

    def device(self, device_id: str) -> tuple[DeviceInfo, bool]:
        """The device's info, and whether it is new (not in the household file)."""
        info = self.devices.get(device_id)
        if info is not None:
            return info, False
        # A device since removed from the household: its readings are still the person's.
        info = DeviceInfo(
            "urn:uuid:" + codes.uid(f"device/{self.person.id}/{device_id}"), False, True
        )
        self.devices[device_id] = info
        return info, True


def patient(subject: Subject, *, include_name: bool) -> Entry:
    p = subject.person
    res: Resource = {
        "resourceType": "Patient",
        "id": subject.patient_ref[9:],
        "identifier": [{"system": codes.PERSON_ID, "value": p.id}],
        "gender": p.sex if p.sex in ("female", "male") else "other",
        "birthDate": p.birth_date.isoformat(),
    }
    if include_name:
        parts = p.name.split()
        name: dict[str, Any] = {"use": "usual", "text": p.name}
        if len(parts) > 1:
            name |= {"family": parts[-1], "given": parts[:-1]}
        res["name"] = [name]
    return subject.patient_ref, res


def device(subject: Subject, device_id: str) -> Entry:
    info, _ = subject.device(device_id)
    d = next((d for d in subject.person.devices if d.id == device_id), None)
    kind = kind_of(d.kind) if d is not None else None
    res: Resource = {
        "resourceType": "Device",
        "id": info.ref[9:],
        "identifier": [{"system": codes.DEVICE_ID, "value": device_id}],
        "status": "active" if d is not None else "inactive",
        "deviceName": [{"name": device_id, "type": "user-friendly-name"}],
        "type": {"text": kind.label if kind else "device no longer in the household file"},
        "patient": {"reference": subject.patient_ref},
    }
    if kind is not None:
        res["deviceName"].append({"name": kind.name, "type": "model-name"})
        if d is not None and d.core_temperature:
            res["note"] = [{"text": "measures core (body) temperature"}]
    return info.ref, res


def vital_key(vital: str, info: DeviceInfo) -> str:
    """The VITAL_CODES key for one vital from one device (temperature: body or skin)."""
    if vital == "temperature_c":
        return "body_temperature" if info.body_temperature else "skin_temperature"
    return vital


def range_class(subject: Subject, vital: str, key: str, info: DeviceInfo, value: float) -> str:
    """normal, low, high, critical_low, critical_high or implausible (beyond any human)."""
    lo, hi = BY_NAME[vital].possible or (float("-inf"), float("inf"))
    if not lo <= value <= hi:
        return "implausible"
    if key == "skin_temperature":
        return "normal"  # a trend: no body-temperature band applies to the skin
    rng = (subject.wrist_ranges if info.wrist else subject.ranges)[vital]
    cls = str(classify(value, rng))
    return "normal" if cls == "implausible" else cls  # plausible to a human, off the band


def observation(
    subject: Subject,
    uid: str,
    key: str,
    effective: Mapping[str, Any],
    device_ref: str,
) -> Resource:
    vc = codes.VITAL_CODES[key]
    return {
        "resourceType": "Observation",
        "id": uid,
        "meta": {"profile": [vc.profile]},
        "status": "final",
        "category": [codes.VITAL_SIGNS_CATEGORY],
        "code": _CODES[key],
        "subject": {"reference": subject.patient_ref},
        **effective,
        "device": {"reference": device_ref},
    }


_CODES = {k: vc.code() for k, vc in codes.VITAL_CODES.items()}


def set_value(res: Resource, value: float, unit: str, cls: str) -> None:
    """valueQuantity, or dataAbsentReason for an impossible value (never both)."""
    if cls == "implausible":
        res["dataAbsentReason"] = codes.IMPOSSIBLE
        return
    res["valueQuantity"] = codes.quantity(value, unit)
    interp = codes.interpretation(cls)
    if interp is not None:
        res["interpretation"] = interp


def bp_panel(
    subject: Subject,
    uid: str,
    effective: Mapping[str, Any],
    info: DeviceInfo,
    values: Mapping[str, float | None],
) -> Resource:
    res: Resource = {
        "resourceType": "Observation",
        "id": uid,
        "meta": {"profile": [codes.BP_PROFILE]},
        "status": "final",
        "category": [codes.VITAL_SIGNS_CATEGORY],
        "code": codes.BP_CODE,
        "subject": {"reference": subject.patient_ref},
        **effective,
        "device": {"reference": info.ref},
        "component": [],
    }
    for vital, (loinc, display) in codes.BP_COMPONENTS.items():
        comp: Resource = {
            "code": {"coding": [{"system": codes.LOINC, "code": loinc, "display": display}]}
        }
        value = values.get(vital)
        if value is None:
            comp["dataAbsentReason"] = codes.NOT_MEASURED
        else:
            set_value(comp, value, codes.BP_UNIT, range_class(subject, vital, vital, info, value))
        res["component"].append(comp)
    return res


def statistics(res: Resource, low: float, high: float, n: int, unit: str) -> None:
    """A summary's minimum, maximum and count as components (codes of observation-statistics,
    never the Observation's own code, so obs-7 holds)."""
    res.setdefault("component", []).extend(
        [
            _stat("minimum", "Minimum", {"valueQuantity": codes.quantity(low, unit)}),
            _stat("maximum", "Maximum", {"valueQuantity": codes.quantity(high, unit)}),
            _stat("count", "Count", {"valueInteger": n}),
        ]
    )


def _stat(code: str, display: str, value: Mapping[str, Any]) -> Resource:
    return {"code": {"coding": [{"system": codes.STATISTICS, "code": code, "display": display}]},
            **value}  # fmt: skip


def news2(
    subject: Subject,
    uid: str,
    effective: Mapping[str, Any],
    result: News2Result,
    derived: list[str],
) -> Resource:
    """NEWS2 as UK Core's early-warning-score pattern has it, as far as it fits: SNOMED CT
    total, valueInteger, a component per chart row (absent ones: not performed), derivedFrom
    the Observations scored."""
    comps: list[Resource] = []
    for name, points in result.parameters.items():
        comp: Resource = {
            "code": {
                "coding": [
                    {
                        "system": codes.NEWS2_PARAMETER,
                        "code": name,
                        "display": codes.NEWS2_PARAMETER_TEXT[name],
                    }
                ]
            }
        }
        if points is None:
            comp["dataAbsentReason"] = codes.NOT_MEASURED
        else:
            comp["valueInteger"] = points
        comps.append(comp)
    notes = [f"Clinical risk: {result.level}."]
    if result.missing:
        notes.append(
            "Partial score (a lower bound): not measured: " + ", ".join(result.missing) + "."
        )
    if result.assumed:
        notes.append("Assumed (0 points): " + ", ".join(result.assumed) + ".")
    if result.spo2_scale == 2:
        notes.append("SpO2 scored on scale 2 (hypercapnic respiratory failure).")
    return {
        "resourceType": "Observation",
        "id": uid,
        "status": "final",
        "category": [codes.SURVEY_CATEGORY],
        "code": codes.NEWS2_CODE,
        "subject": {"reference": subject.patient_ref},
        **effective,
        "valueInteger": result.total,
        "interpretation": [{"text": f"NEWS2 clinical risk {result.level}"}],
        "note": [{"text": " ".join(notes)}],
        "component": comps,
        "derivedFrom": [{"reference": r} for r in derived],
    }


_PRIORITY = {"sos": "stat", "soft_sos": "urgent", "sos_end": "urgent", "alert": "urgent"}


def communication(
    subject: Subject,
    row: Mapping[str, Any],
    about: list[str],
    scrub: Callable[[str], str] | None,
) -> Entry:
    """A text the hub sent (safety.db `messages`): to whom, when, what, and the Observations
    it was about. `scrub`: the family's redaction (phones and places leave the text; the
    recipient's number goes)."""
    ref = "urn:uuid:" + codes.uid(f"communication/{row['id']}")
    kind, _, role = str(row["purpose"]).partition(":")
    state = str(row["state"])
    recipient: Resource = {"display": _recipient_name(subject.person, str(row["to_phone"]), role)}
    if scrub is None:
        recipient["identifier"] = {"system": codes.TEL, "value": f"tel:{row['to_phone']}"}
    body = str(row["body"])
    res: Resource = {
        "resourceType": "Communication",
        "id": ref[9:],
        "status": {"sent": "completed", "failed": "not-done"}.get(state, "in-progress"),
        "category": [
            {
                "coding": [
                    {
                        "system": codes.COMM_CATEGORY,
                        "code": "alert" if kind in _PRIORITY else "notification",
                    }
                ],
                "text": kind,
            }
        ],
        "priority": _PRIORITY.get(kind, "routine"),
        "subject": {"reference": subject.patient_ref},
        "recipient": [recipient],
        "payload": [{"contentString": scrub(body) if scrub is not None else body}],
    }
    if about:
        res["about"] = [{"reference": r} for r in about]
    if state == "sent":
        res["sent"] = codes.iso(float(row["updated_at"]))
    else:
        res["note"] = [{"text": f"created {codes.iso(float(row['created_at']))}, not sent"
                                f" ({state})"}]  # fmt: skip
    return ref, res


def _recipient_name(person: Person, phone: str, role: str) -> str:
    contacts: list[Contact] = list(person.emergency_contacts)
    if person.clinician is not None:
        contacts.append(person.clinician)
    for c in contacts:
        if c.phone == phone:
            return f"{c.name} ({c.relation or role or 'contact'})"
    if person.phone == phone:
        return f"{person.name} (the person)"
    return role or "recipient"
