"""GET /v1/persons/{p}/fhir through the real app: admin whole, family redacted, viewer 403,
bad input a clear 4xx, every export audited (who, what, when) before it streams."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.export import ExportSource
from tests.gateway.api.stub import ADMIN, AUTH, StubBackend, make_app
from tests.gateway.export.checks import resources, validate
from tests.gateway.export.data import CONTACT_PHONE, Audit, make_source, standard_data

URL = "/v1/persons/{}/fhir"
PERIOD = {"since": "2026-05-28", "until": "2026-05-28T23:00:00Z"}


class ExportingBackend(StubBackend):
    def __init__(self, src: ExportSource) -> None:
        super().__init__()
        self.household = src.household
        self.src = src

    def export_source(self) -> ExportSource:
        return self.src


@pytest.fixture
def audit_and_client(tmp_path: Path) -> Iterator[tuple[Audit, TestClient]]:
    src, audit = make_source(tmp_path)
    standard_data(src)
    with TestClient(make_app(ExportingBackend(src))) as c:
        yield audit, c


def test_admin_gets_the_whole_bundle_and_it_is_audited(
    audit_and_client: tuple[Audit, TestClient],
) -> None:
    audit, client = audit_and_client
    r = client.get(URL.format("ann"), params=PERIOD, headers=AUTH["admin"])
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/fhir+json")
    assert r.headers["cache-control"] == "no-store"
    b = validate(r.content)
    assert CONTACT_PHONE in r.text and resources(b, "Patient")[0]["name"]
    (row,) = audit
    assert row["tool"] == "fhir_export" and row["actor"].startswith("api:admin:")
    assert ADMIN not in json.dumps(row) and row["ok"] is True
    assert row["args"]["person"] == "ann" and row["args"]["redacted"] is False
    assert row["args"]["since"] == "2026-05-28T00:00:00Z"


def test_family_gets_the_family_redactions(audit_and_client: tuple[Audit, TestClient]) -> None:
    audit, client = audit_and_client
    params = {**PERIOD, "name": "false", "downsample": "minute"}
    r = client.get(URL.format("ann"), params=params, headers=AUTH["family"])
    assert r.status_code == 200, r.text
    b = validate(r.content)
    assert CONTACT_PHONE not in r.text and "+447700900999" not in r.text
    assert "51.5072" not in r.text and "Ann Marie" not in r.text
    sos = resources(b, "Communication")[0]
    assert "[phone]" in sos["payload"][0]["contentString"]
    assert "[location]" in sos["payload"][0]["contentString"]
    assert audit[0]["actor"].startswith("api:family:") and audit[0]["args"]["redacted"] is True


def test_viewer_is_refused(audit_and_client: tuple[Audit, TestClient]) -> None:
    audit, client = audit_and_client
    r = client.get(URL.format("ann"), params=PERIOD, headers=AUTH["viewer"])
    assert r.status_code == 403 and not audit
    assert client.get(URL.format("ann"), params=PERIOD).status_code == 401


@pytest.mark.parametrize(
    ("person", "params", "status", "words"),
    [
        ("nobody", PERIOD, 404, "no such person"),
        ("ann", {"since": "2026-05-29", "until": "2026-05-28"}, 422, "ends before it starts"),
        ("ann", {"since": "last week", "until": "2026-05-28"}, 422, "ISO 8601"),
        ("ann", {"since": "2020-01-01", "until": "2020-02-01"}, 404, "no readings or texts"),
        ("ann", {**PERIOD, "downsample": "day"}, 422, ""),
        ("ann", {"since": "2026-05-28"}, 422, ""),
    ],
)
def test_bad_input_is_a_clear_4xx(
    audit_and_client: tuple[Audit, TestClient],
    person: str,
    params: dict[str, str],
    status: int,
    words: str,
) -> None:
    audit, client = audit_and_client
    r = client.get(URL.format(person), params=params, headers=AUTH["admin"])
    assert r.status_code == status, r.text
    assert words in json.dumps(r.json())
    if words:  # refused by the export (not by the schema): audited as refused
        (row,) = audit
        assert row["ok"] is False and row["error"].startswith(str(status))
        assert row["args"]["person"] == person
    else:
        assert not audit


def test_a_backend_without_export_is_503() -> None:
    with TestClient(make_app(StubBackend())) as client:
        r = client.get(URL.format("dad"), params=PERIOD, headers=AUTH["admin"])
    assert r.status_code == 503
