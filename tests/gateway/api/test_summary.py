"""GET /v1/persons/{person}/summary.pdf through the real app over the real reports side (on a
thread here; the hub makes it in the report child): the PDF for admin and family, 403 for a
viewer, clear 4xx for bad input, and an audit row per export naming who asked."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from agents.reports.daily import EXPORT_TOOL, DailyReports
from tests.agents.reports.test_clinician import (
    EVENTS,
    HH,
    Audit,
    Clock,
    FakeStore,
    readings,
    stores,
)
from tests.gateway.api.stub import AUTH, FAMILY, StubBackend, make_app

URL = "/v1/persons/grandma/summary.pdf"


@pytest.fixture
def audit() -> Audit:
    return Audit()


@pytest.fixture
def client(tmp_path: Path, audit: Audit) -> Iterator[TestClient]:
    meds, safety = stores(tmp_path)
    backend = StubBackend()
    backend.household = HH
    backend.reports = DailyReports(FakeStore(readings(), EVENTS), HH, tmp_path / "data", Clock(),  # type: ignore[arg-type]
                                   doses=meds, prompts=safety, audit=audit)  # fmt: skip
    with TestClient(make_app(backend)) as c:
        yield c


@pytest.mark.parametrize("role", ["admin", "family"])
def test_the_last_14_days_as_a_pdf(client: TestClient, audit: Audit, role: str) -> None:
    r = client.get(URL, headers=AUTH[role])
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/pdf"
    assert r.headers["content-disposition"] == (
        'attachment; filename="summary-grandma-2026-03-01-to-2026-03-14.pdf"'
    )
    assert r.headers["cache-control"] == "no-store"
    assert r.content.startswith(b"%PDF-") and b"Maria Lopez" in r.content
    (row,) = audit
    assert row["tool"] == EXPORT_TOOL and row["ok"] is True
    assert row["args"] == {"person": "grandma", "since": "2026-03-01", "until": "2026-03-14"}
    assert row["actor"].startswith(f"{role}:")


def test_the_audit_tells_family_tokens_apart_without_keeping_them(
    client: TestClient, audit: Audit
) -> None:
    assert client.get(URL + "?since=2026-03-07", headers=AUTH["family"]).status_code == 200
    assert audit[0]["actor"] == "family:" + hashlib.sha256(FAMILY.encode()).hexdigest()[:8]
    assert FAMILY not in str(audit)
    # since alone: 14 days from it, never past today.
    assert audit[0]["args"] == {"person": "grandma", "since": "2026-03-07", "until": "2026-03-14"}


def test_a_viewer_is_refused(client: TestClient, audit: Audit) -> None:
    r = client.get(URL, headers=AUTH["viewer"])
    assert r.status_code == 403 and r.headers["content-type"] == "application/json"
    assert client.get(URL).status_code == 401
    assert audit == []  # refused before the reports side is asked


@pytest.mark.parametrize(
    ("query", "code", "words"),
    [
        ("?since=2026-03-10&until=2026-03-01", 422, "`until` is before `since`"),
        ("?since=2026-01-01&until=2026-03-01", 422, "longer than 31 days"),
        ("?since=2026-04-01", 422, "after today"),
        ("?since=2026-02-30", 422, None),  # not a date
        ("?since=yesterday", 422, None),
        ("?since=2025-01-01&until=2025-01-14", 404, "nothing was recorded for grandma"),
    ],
)
def test_bad_input_is_a_clear_4xx(
    client: TestClient, query: str, code: int, words: str | None
) -> None:
    r = client.get(URL + query, headers=AUTH["family"])
    assert r.status_code == code, r.text
    assert r.headers["content-type"] == "application/json"
    if words:
        assert words in r.json()["detail"]


def test_an_unknown_person_is_404(client: TestClient, audit: Audit) -> None:
    r = client.get("/v1/persons/nobody/summary.pdf", headers=AUTH["admin"])
    assert r.status_code == 404 and r.json() == {"detail": "no such person"}
    assert client.get("/v1/persons/No%20Body/summary.pdf", headers=AUTH["admin"]).status_code == 422


def test_a_refused_export_is_audited_too(client: TestClient, audit: Audit) -> None:
    client.get(URL + "?since=2025-01-01&until=2025-01-14", headers=AUTH["admin"])
    (row,) = audit
    assert row["ok"] is False and row["error"] == "NothingToReport"


def test_without_reports_running_it_is_503() -> None:
    with TestClient(make_app(StubBackend())) as c:
        r = c.get("/v1/persons/grandma/summary.pdf", headers=AUTH["family"])
    assert r.status_code == 503 and r.json() == {"detail": "reports are not running"}
