"""The error answers the OpenAPI document promises (gateway.api.responses), checked one by one
through the real app; tests/gateway/api/test_openapi_fuzz.py checks them all under a fuzzer."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.gateway.api.stub import AUTH, make_app

VITALS = {"heart_rate": 80, "spo2": 97}


def test_405_allows_every_method_of_the_path() -> None:
    with TestClient(make_app()) as c:
        r = c.request("OPTIONS", "/v1/persons/dad/prescriptions", headers=AUTH["admin"])
        assert r.status_code == 405
        assert r.headers["allow"] == "GET, POST"
        assert r.json() == {"detail": "Method Not Allowed"}


def test_assess_422s_have_one_shape() -> None:
    with TestClient(make_app()) as c:
        typed = c.post("/v1/assess", json={"heart_rate": "80"}, headers=AUTH["admin"])
        # A rule across fields (no vital at all) is checked after the types: same shape.
        across = c.post("/v1/assess", json={"battery": 50}, headers=AUTH["admin"])
    for r in (typed, across):
        assert r.status_code == 422
        assert all(set(e) == {"loc", "msg", "type"} for e in r.json()["detail"]), r.json()


def test_assess_takes_a_whole_float_for_an_integer_but_nothing_else() -> None:
    with TestClient(make_app()) as c:
        assert c.post("/v1/assess", json={**VITALS, "age": 70.0}, headers=AUTH["admin"]).is_success
        for bad in (70.5, True, "70"):
            r = c.post("/v1/assess", json={**VITALS, "age": bad}, headers=AUTH["admin"])
            assert r.status_code == 422, bad


def test_errors_are_json_on_an_html_route_and_a_bad_person_id_is_422() -> None:
    with TestClient(make_app()) as c:
        r = c.get("/v1/persons/dad/reports/2026-05-01")
        assert r.status_code == 401 and r.headers["content-type"] == "application/json"
        assert c.get("/v1/persons/no%20such/readings", headers=AUTH["viewer"]).status_code == 422
        assert c.get("/v1/persons/nobody/readings", headers=AUTH["viewer"]).status_code == 404


def test_the_document_declares_the_error_bodies() -> None:
    doc = make_app().openapi()
    schemas = doc["components"]["schemas"]
    assert {"ErrorOut", "ValidationErrorOut", "ValidationIssue"} <= set(schemas)
    stop = doc["paths"]["/v1/persons/{person}/prescriptions/{rx_id}"]["delete"]["responses"]
    assert {"200", "400", "401", "403", "404", "413", "422", "429", "503"} <= set(stop)
    assert "text/plain" in doc["paths"]["/metrics"]["get"]["responses"]["200"]["content"]
