"""The Bundle: every resource valid (library + vital-signs profile checks), the codes and
units, body vs skin temperature, the BP panel, absent values, interpretation, NEWS2 and its
derivedFrom, Communications, downsampling, reproducibility and paging."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.api.redact import scrub_text
from gateway.export import ExportError, ExportSource, make_request, source, stream
from tests.gateway.export.checks import NOW, export_bytes, loinc, resources, validate
from tests.gateway.export.data import CONTACT_PHONE, T0, make_source, standard_data

SINCE, UNTIL = "2026-05-28", "2026-05-29"


@pytest.fixture
def src(tmp_path: Path) -> ExportSource:
    s, _ = make_source(tmp_path)
    standard_data(s)
    return s


def export(src: ExportSource, person: str = "ann", **kw: Any) -> dict[str, Any]:
    return validate(export_bytes(src, make_request(src, person, SINCE, UNTIL, **kw)))


def by_device(bundle: dict[str, Any]) -> dict[str, str]:
    """Device fullUrl -> device id."""
    return {"urn:uuid:" + d["id"]: d["identifier"][0]["value"] for d in resources(bundle, "Device")}


def test_every_resource_validates_and_the_shape_is_a_gp_record(src: ExportSource) -> None:
    b = export(src)
    assert b["type"] == "collection"
    first = b["entry"][0]["resource"]
    assert first["resourceType"] == "Patient"
    assert first["name"][0]["family"] == "Smith" and first["birthDate"] == "1950-01-02"
    assert first["gender"] == "female"
    devices = by_device(b)
    assert set(devices.values()) == {"ann-watch", "ann-therm", "ann-cuff", "ann-ox",
                                     "ann-patch", "old-watch"}  # fmt: skip
    obs = resources(b, "Observation")
    codes = {loinc(o) for o in obs}
    assert codes >= {"8867-4", "9279-1", "2708-6", "8310-5", "39106-0", "85354-9"}
    assert len(resources(b, "Communication")) == 2


def test_units_are_ucum(src: ExportSource) -> None:
    units = {loinc(o): o["valueQuantity"]["code"] for o in resources(export(src), "Observation")
             if "valueQuantity" in o}  # fmt: skip
    assert units["8867-4"] == units["9279-1"] == "/min"
    assert units["2708-6"] == "%" and units["8310-5"] == units["39106-0"] == "Cel"


def test_spo2_says_pulse_oximetry(src: ExportSource) -> None:
    spo2 = [o for o in resources(export(src), "Observation") if loinc(o) == "2708-6"]
    assert spo2 and all([c["code"] for c in o["code"]["coding"]] == ["2708-6", "59408-5"]
                        for o in spo2)  # fmt: skip


def test_body_temperature_only_from_a_device_that_measures_it(src: ExportSource) -> None:
    b = export(src)
    devices = by_device(b)
    temps = [o for o in resources(b, "Observation") if loinc(o) in ("8310-5", "39106-0")]
    body = {devices[o["device"]["reference"]] for o in temps if loinc(o) == "8310-5"}
    skin = {devices[o["device"]["reference"]] for o in temps if loinc(o) == "39106-0"}
    assert body == {"ann-therm", "ann-patch"}  # a thermometer; a patch said core_temperature
    assert skin == {"ann-watch"}
    for o in temps:
        profile = o["meta"]["profile"][0].rsplit("/", 1)[1]
        assert profile == ("bodytemp" if loinc(o) == "8310-5" else "vitalsigns")
    fever = next(o for o in temps if o["valueQuantity"]["value"] == 38.6)
    assert fever["interpretation"][0]["coding"][0]["code"] in ("H", "HH")
    assert all("interpretation" not in o for o in temps if loinc(o) == "39106-0")


def test_blood_pressure_is_a_panel_with_two_components(src: ExportSource) -> None:
    panels = [o for o in resources(export(src), "Observation") if loinc(o) == "85354-9"]
    assert len(panels) == 2
    whole, half = panels
    assert "valueQuantity" not in whole
    parts = {c["code"]["coding"][0]["code"]: c for c in whole["component"]}
    assert parts["8480-6"]["valueQuantity"] == {"value": 128.0, "unit": "mm[Hg]",
        "system": "http://unitsofmeasure.org", "code": "mm[Hg]"}  # fmt: skip
    parts = {c["code"]["coding"][0]["code"]: c for c in half["component"]}
    assert "valueQuantity" not in parts["8462-4"]
    assert parts["8462-4"]["dataAbsentReason"]["coding"][0]["code"] == "not-performed"
    assert parts["8480-6"]["interpretation"][0]["coding"][0]["code"] in ("L", "LL")


def test_absent_reason_never_with_a_value_and_abnormal_is_interpreted(src: ExportSource) -> None:
    hr = [o for o in resources(export(src), "Observation") if loinc(o) == "8867-4"]
    impossible = [o for o in hr if "dataAbsentReason" in o]
    assert len(impossible) == 1 and "valueQuantity" not in impossible[0]
    assert impossible[0]["dataAbsentReason"]["coding"][0]["code"] == "error"
    assert all(("valueQuantity" in o) != ("dataAbsentReason" in o) for o in hr)
    high = next(o for o in hr if o.get("valueQuantity", {}).get("value") == 135.0)
    assert high["interpretation"][0]["coding"][0]["code"] in ("H", "HH")
    normal = next(o for o in hr if o.get("valueQuantity", {}).get("value") == 72.0)
    assert "interpretation" not in normal


def test_news2_is_snomed_partial_and_derived_from_the_bundle(src: ExportSource) -> None:
    b = export(src)
    obs = resources(b, "Observation")
    by_url = {"urn:uuid:" + o["id"]: o for o in obs}
    news = [o for o in obs if o["code"]["coding"][0]["code"] == "1104051000000101"]
    assert news
    for n in news:
        assert n["code"]["coding"][0]["system"] == "http://snomed.info/sct"
        assert isinstance(n["valueInteger"], int) and "dataAbsentReason" not in n
        sources = [by_url[r["reference"]] for r in n["derivedFrom"]]
        assert sources and all(s["effectiveDateTime"] == n["effectiveDateTime"] for s in sources)
        assert "39106-0" not in {loinc(s) for s in sources}  # skin temperature is never scored
        absent = {c["code"]["coding"][0]["code"] for c in n["component"]
                  if "dataAbsentReason" in c}  # fmt: skip
        note = n["note"][0]["text"]
        if absent:
            assert "Partial score" in note and all(a in note for a in absent)
    watch = next(n for n in news if "systolic_bp" in n["note"][0]["text"])
    assert "temperature_c" in watch["note"][0]["text"]  # the watch's skin temperature is missing


@pytest.mark.parametrize("person", ["kid", "mum"])
def test_no_news2_for_a_child_or_in_pregnancy(src: ExportSource, person: str) -> None:
    obs = resources(export(src, person), "Observation")
    assert obs and not [o for o in obs if o["code"]["coding"][0]["system"].endswith("sct")]


def test_communications_say_to_whom_when_what_and_about(src: ExportSource) -> None:
    b = export(src)
    obs_urls = {"urn:uuid:" + o["id"] for o in resources(b, "Observation")}
    sos, alert = resources(b, "Communication")
    assert sos["recipient"][0]["display"] == "Ben Smith (son)"
    assert sos["recipient"][0]["identifier"]["value"] == f"tel:{CONTACT_PHONE}"
    assert sos["priority"] == "stat" and sos["status"] == "completed" and "sent" in sos
    assert "+447700900999" in sos["payload"][0]["contentString"]  # admin: whole
    assert sos["about"] and {a["reference"] for a in sos["about"]} <= obs_urls
    assert alert["status"] == "not-done" and "not sent" in alert["note"][0]["text"]


def test_family_copy_is_redacted_and_without_name_option(src: ExportSource) -> None:
    blob = export_bytes(src, make_request(src, "ann", SINCE, UNTIL, scrub=scrub_text,
                                          include_name=False))  # fmt: skip
    b = validate(blob)
    text = blob.decode()
    assert CONTACT_PHONE not in text and "+447700900999" not in text and "51.5072" not in text
    patient = resources(b, "Patient")[0]
    assert "name" not in patient and "Ann" not in json.dumps(patient)
    assert patient["identifier"][0]["value"] == "ann"


@pytest.mark.parametrize("size", ["minute", "hour"])
def test_downsampled_bundle_validates(src: ExportSource, size: str) -> None:
    b = export(src, downsample=size)
    obs = resources(b, "Observation")
    hr = [o for o in obs if loinc(o) == "8867-4"]
    assert all("effectivePeriod" in o for o in obs)
    stats = {c["code"]["coding"][0]["code"]: c for c in hr[0]["component"]}
    assert set(stats) == {"minimum", "maximum", "count"}
    assert stats["minimum"]["valueQuantity"]["value"] <= hr[0]["valueQuantity"]["value"]
    assert stats["maximum"]["valueQuantity"]["value"] >= hr[0]["valueQuantity"]["value"]
    watch_hr = sum(1 for o in hr if o["device"]["reference"] in by_device(b)
                   and by_device(b)[o["device"]["reference"]] == "ann-watch")  # fmt: skip
    window = 60 if size == "minute" else 3600
    assert watch_hr == len({(T0 + 5 * i) // window for i in range(120)})  # one per window
    # 400 bpm never entered a mean
    assert max(o["component"][1]["valueQuantity"]["value"] for o in hr) < 400
    assert len(obs) < 200  # far fewer than the raw export's
    assert resources(b, "Communication")[0]["about"]


def test_exports_are_reproducible_and_paging_does_not_change_them(
    src: ExportSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    req = make_request(src, "ann", SINCE, UNTIL)
    whole = export_bytes(src, req)
    monkeypatch.setattr(source, "CHUNK_ROWS", 7)
    assert export_bytes(src, req) == whole  # keyset pages of 7 readings give the same Bundle
    # ...yielded a page at a time (the stream never holds the period): 126 readings of Ann's
    chunks = list(stream(src, req, now=NOW))
    assert len(chunks) >= 126 // 7 and max(map(len, chunks)) < len(whole) // 8


def test_time_parsing(src: ExportSource) -> None:
    req = make_request(src, "ann", "2026-05-28T20:27:00Z", "2026-05-28T20:30:00+00:00")
    assert (req.since, req.until) == (T0 + 20, T0 + 200)
    day = make_request(src, "ann", SINCE, SINCE)  # an until date includes its day
    assert day.until - day.since == 86400


@pytest.mark.parametrize(
    ("person", "since", "until", "status"),
    [
        ("nobody", SINCE, UNTIL, 404),
        ("ann", UNTIL, SINCE, 422),
        ("ann", "2026-05-28T10:00", "2026-05-28T09:00", 422),
        ("ann", "yesterday", UNTIL, 422),
        ("ann", SINCE, "2026-13-01", 422),
        ("ann", "2020-01-01", "2020-01-31", 404),  # nothing in the period
    ],
)
def test_bad_input_is_refused(
    src: ExportSource, person: str, since: str, until: str, status: int
) -> None:
    with pytest.raises(ExportError) as err:
        make_request(src, person, since, until)
    assert err.value.status == status and str(err.value)
