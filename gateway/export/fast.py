"""The hot path of an export: a reading's vital Observations and its NEWS2 as JSON text from
templates, the parts that never change encoded once per export. Byte for byte what encoding
fhir_resources' dicts gives (tests/gateway/export/test_fast.py holds them to it), at a
fraction of the cost: a month of 5-second readings is millions of Observations."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gateway.export import codes
from gateway.export import fhir_resources as fr
from gateway.monitor.news2 import News2Result

encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_CLASSES = ("normal", "low", "high", "critical_low", "critical_high")
_CACHE_MAX = 4096


def _inner(obj: Mapping[str, Any]) -> str:
    """An object's members without the braces (to splice into a template)."""
    return encode(obj)[1:-1]


class Templates:
    """Per export: each vital Observation's constant members, and NEWS2 bodies by score."""

    def __init__(self, subject: fr.Subject) -> None:
        self.subject = subject
        self.head: dict[str, str] = {}
        self.unit: dict[str, str] = {}
        for key, vc in codes.VITAL_CODES.items():
            res = fr.observation(subject, "", key, {}, "")
            del res["resourceType"], res["id"], res["device"]
            self.head[key] = _inner(res)
            self.unit[key] = _inner(codes.quantity(0, vc.unit)).split(",", 1)[1]
        self.interp = {c: "" for c in _CLASSES}
        for c in _CLASSES:
            found = codes.interpretation(c)
            if found is not None:
                self.interp[c] = ',"interpretation":' + encode(found)
        self.absent = ',"dataAbsentReason":' + encode(codes.IMPOSSIBLE)
        self.subject_ref = _inner({"subject": {"reference": subject.patient_ref}})
        self._news2: dict[tuple[Any, ...], str] = {}

    def vital(self, uid: str, key: str, when: str, device_ref: str, value: float, cls: str) -> str:
        """fr.observation + fr.set_value for one value at one instant, as JSON."""
        if cls == "implausible":
            tail = self.absent
        else:
            tail = f',"valueQuantity":{{"value":{value!r},{self.unit[key]}}}{self.interp[cls]}'
        return (
            f'{{"resourceType":"Observation","id":"{uid}",{self.head[key]},'
            f'"effectiveDateTime":"{when}","device":{{"reference":"{device_ref}"}}{tail}}}'
        )

    def news2(
        self, uid: str, effective: Mapping[str, Any], result: News2Result, derived: list[str]
    ) -> str:
        """fr.news2 as JSON; the members a score decides are encoded once per distinct score."""
        key = (
            result.total,
            result.level,
            tuple(result.parameters.items()),
            result.missing,
            result.assumed,
            result.spo2_scale,
        )
        body = self._news2.get(key)
        if body is None:
            res = fr.news2(self.subject, "", {}, result, [])
            for k in ("resourceType", "id", "status", "category", "code", "subject", "derivedFrom"):
                del res[k]
            body = _inner(res)
            if len(self._news2) >= _CACHE_MAX:
                self._news2.clear()
            self._news2[key] = body
        refs = ",".join(f'{{"reference":"{r}"}}' for r in derived)
        return (
            f'{{"resourceType":"Observation","id":"{uid}","status":"final",'
            f'"category":[{encode(codes.SURVEY_CATEGORY)}],"code":{_NEWS2_CODE},'
            f"{self.subject_ref},{_inner(effective)},{body},"
            f'"derivedFrom":[{refs}]}}'
        )


_NEWS2_CODE = encode(codes.NEWS2_CODE)
