"""Every resource of an export through fhir.resources R4B and the profile checks."""

from __future__ import annotations

import json
from typing import Any

from fhir.resources.R4B import get_fhir_model_class
from fhir.resources.R4B.bundle import Bundle

from gateway.export import ExportRequest, ExportSource, stream
from tests.gateway.export.vital_signs_profile import generic_problems, vital_signs_problems

NOW = 1_790_000_000.0


def export_bytes(src: ExportSource, req: ExportRequest) -> bytes:
    return b"".join(stream(src, req, now=NOW))


def _refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        out = [value["reference"]] if isinstance(value.get("reference"), str) else []
        for v in value.values():
            out += _refs(v)
        return out
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    return []


def validate(blob: bytes) -> dict[str, Any]:
    """Parse with the library (the round trip), validate each resource on its own too, run
    the profile checks; every reference must resolve inside the Bundle. The Bundle as JSON."""
    model = Bundle.model_validate_json(blob)
    assert model.type == "collection"
    bundle: dict[str, Any] = json.loads(blob)
    urls = [e["fullUrl"] for e in bundle["entry"]]
    assert len(urls) == len(set(urls)), "fullUrls are not unique"
    assert all(u.startswith("urn:uuid:") for u in urls)
    known = set(urls)
    problems: list[str] = []
    for e in bundle["entry"]:
        res = e["resource"]
        get_fhir_model_class(res["resourceType"]).model_validate(res)
        assert e["fullUrl"] == "urn:uuid:" + res["id"]
        if res["resourceType"] == "Observation":
            vital = any(c["coding"][0]["code"] == "vital-signs" for c in res["category"])
            found = vital_signs_problems(res) if vital else generic_problems(res)
            problems += [f"{res['id']}: {p}" for p in found]
        dangling = [r for r in _refs(res) if r not in known]
        assert not dangling, f"{res['resourceType']} refers outside the Bundle: {dangling}"
    assert not problems, problems[:20]
    # The model's own JSON parses back to the same resources (the library's round trip).
    again = Bundle.model_validate_json(model.model_dump_json())
    assert len(again.entry or []) == len(bundle["entry"])
    return bundle


def resources(bundle: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e["resource"] for e in bundle["entry"] if e["resource"]["resourceType"] == kind]


def loinc(obs: dict[str, Any]) -> str:
    return str(obs["code"]["coding"][0]["code"])
