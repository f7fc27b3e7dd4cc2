"""FHIR export of one person's record over a period (docs/fhir.md): a Bundle (type
`collection`, FHIR R4B) with the Patient, their Devices, vital-signs Observations (LOINC,
UCUM), NEWS2 (SNOMED CT) and the texts the hub sent as Communications, streamed a page of
readings at a time. PHI: every export is audited; the API's family role gets it redacted.

- source.py: what an export reads (ExportSource), the checked request, the queries;
- fhir_resources.py: the resources, as plain dicts of fixed shapes;
- fhir_bundle.py: the streamed Bundle (`stream`);
- downsample.py: per-minute and per-hour summaries;
- codes.py: LOINC, UCUM, SNOMED CT and HL7 codes, deterministic ids;
- files.py: an export written to a file durably, and its retention.
"""

from gateway.export.fhir_bundle import stream
from gateway.export.files import default_path, prune_exports, register_retention, write_stream
from gateway.export.source import ExportError, ExportRequest, ExportSource, make_request

__all__ = [
    "ExportError",
    "ExportRequest",
    "ExportSource",
    "default_path",
    "make_request",
    "prune_exports",
    "register_retention",
    "stream",
    "write_stream",
]
