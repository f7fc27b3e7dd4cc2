"""The Grafana provisioning and the three dashboards, checked against the writer's schema.

No Grafana or InfluxDB here: the dashboards are read as JSON, and every Flux query is checked
with regexes against gateway/tsdb/schema.py (bucket, measurement, fields, tags), so a renamed
field breaks this test instead of a family's dashboard.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.base.settings import Settings
from gateway.contract.topics import NUMERIC_VITALS, EventType
from gateway.contract.values import Event
from gateway.tsdb import schema
from gateway.tsdb.lines import event_line

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "grafana"
DASHBOARD_DIR = GRAFANA / "dashboards"
DATASOURCES_YAML = GRAFANA / "provisioning" / "datasources" / "influxdb.yaml"
PROVIDERS_YAML = GRAFANA / "provisioning" / "dashboards" / "healthgw.yaml"

DASHBOARDS = {
    "family-overview.json": "healthgw-family",
    "person-detail.json": "healthgw-person",
    "gateway-health.json": "healthgw-gateway",
}
# Grafana's own datasource, used only by the built-in "Annotations & Alerts" entry.
GRAFANA_BUILTIN_DS = {"type": "grafana", "uid": "-- Grafana --"}
# Columns every Flux table has, whatever the measurement.
STANDARD_COLUMNS = {"_measurement", "_field", "_value", "_time", "_start", "_stop"}
# Variables Grafana itself defines.
GRAFANA_VARIABLES = {"__interval", "__interval_ms", "__range", "__rate_interval", "__timeFilter"}


# --- loading -------------------------------------------------------------------------------


def load_dashboard(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DASHBOARD_DIR / name).read_text(encoding="utf-8"))
    return data


def load_yaml(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def env_example() -> dict[str, str]:
    """The uncommented VAR=value lines of .env.example (what a fresh hub starts with)."""
    out: dict[str, str] = {}
    for line in (ROOT / ".env.example").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Z][A-Z0-9_]*)=(.*)$", line.strip())
        if m:
            out[m.group(1)] = m.group(2)
    return out


def expand_env(value: str, env: dict[str, str]) -> str:
    """Grafana's provisioning interpolation: $VAR and ${VAR}."""
    return re.sub(
        r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m.group(1) or m.group(2), ""), str(value)
    )


def provisioned_datasources() -> dict[str, dict[str, Any]]:
    doc = load_yaml(DATASOURCES_YAML)
    return {ds["uid"]: ds for ds in doc["datasources"]}


def iter_panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every panel, including those inside (collapsed) rows."""
    for p in panels:
        yield p
        yield from iter_panels(p.get("panels", []))


def datasource_refs(obj: Any, where: str = "") -> Iterator[tuple[str, Any]]:
    """Every `datasource` value anywhere in the dashboard, with where it was found."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "datasource":
                yield where, v
            yield from datasource_refs(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from datasource_refs(v, f"{where}[{i}]")


def variables(dash: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in dash.get("templating", {}).get("list", [])}


def variable_query(var: dict[str, Any]) -> str | None:
    q = var.get("query")
    if isinstance(q, dict):
        q = q.get("query")
    return q if isinstance(q, str) else None


def flux_queries(dash: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, query) for every query on the InfluxDB datasource: panel targets, annotations
    and query variables."""
    out: list[tuple[str, str]] = []
    for p in iter_panels(dash.get("panels", [])):
        for t in p.get("targets", []):
            out.append((f"panel {p.get('title')!r} {t.get('refId')}", t.get("query", "")))
    for a in dash.get("annotations", {}).get("list", []):
        if a.get("builtIn"):
            continue
        q = (a.get("target") or {}).get("query") or a.get("query") or ""
        out.append((f"annotation {a.get('name')!r}", q))
    for name, var in variables(dash).items():
        if var.get("type") == "query":
            out.append((f"variable {name!r}", variable_query(var) or ""))
    return out


# --- what the writer writes ------------------------------------------------------------------


@cache
def event_categories() -> frozenset[str]:
    """The `category` tag values of the events measurement, as the writer formats them."""
    cats = {"other"}
    for t in EventType:
        line = event_line(Event(t, "p", 1_700_000_000.0))
        m = re.search(r",category=([^, ]+)", line)
        assert m, line
        cats.add(m.group(1))
    return frozenset(cats)


def known_tag_values() -> dict[tuple[str, str], frozenset[str]]:
    """Tags with a closed set of values: (measurement, tag) -> values."""
    return {
        ("events", "category"): event_categories(),
        ("ranges", "vital"): frozenset(NUMERIC_VITALS),
    }


@cache
def datasource_default_bucket() -> str:
    """The bucket `v.defaultBucket` means on a hub started from .env.example."""
    ds = provisioned_datasources()["healthgw-influx"]
    return expand_env(ds["jsonData"]["defaultBucket"], env_example())


# --- the Flux checker ------------------------------------------------------------------------

_STR = r'"((?:[^"\\]|\\.)*)"'
_COL = r'r(?:\.(\w+)|\[\s*"(\w+)"\s*\])'
_CMP = r"\s*(==|!=|=~|!~|<=|>=|<|>)\s*"


def _strip_comments(q: str) -> str:
    return re.sub(r"(^|\s)//[^\n]*", r"\1", q)


def _string_list(text: str) -> list[str]:
    return re.findall(_STR, text)


def _resolve_variable(
    name: str, dash_vars: dict[str, dict[str, Any]], problems: list[str]
) -> str | None:
    var = dash_vars.get(name)
    if var is None:
        problems.append(f"uses ${{{name}}}, which the dashboard does not define")
        return None
    if var.get("type") not in ("constant", "custom", "textbox"):
        problems.append(f"bucket from ${{{name}}}, a {var.get('type')} variable")
        return None
    current = var.get("current") or {}
    value = current.get("value") if isinstance(current, dict) else None
    return str(value if value not in (None, "") else var.get("query", ""))


def check_flux(query: str, dash_vars: dict[str, dict[str, Any]]) -> list[str]:
    """Everything in one Flux query that the writer's schema does not define."""
    problems: list[str] = []
    q = _strip_comments(query)
    if not q.strip():
        return ["empty query"]

    # Grafana variables must exist.
    for m in re.finditer(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", q):
        name = m.group(1) or m.group(2)
        if name not in dash_vars and name not in GRAFANA_VARIABLES:
            problems.append(f"uses ${name}, which the dashboard does not define")

    # Buckets: v.defaultBucket (the datasource's, from HEALTHGW_INFLUX_BUCKET) or a literal or
    # dashboard variable that comes to schema.DEFAULT_BUCKET.
    buckets = re.findall(r'\bbucket\s*:\s*("[^"]*"|[\w.]+)', q)
    if not buckets:
        problems.append("names no bucket")
    for b in buckets:
        if b == "v.defaultBucket":
            value: str | None = datasource_default_bucket()
        elif b.startswith('"'):
            literal = b[1:-1]
            ref = re.fullmatch(r"\$\{(\w+)\}|\$(\w+)", literal)
            value = (
                _resolve_variable(ref.group(1) or ref.group(2), dash_vars, problems)
                if ref
                else literal
            )
        else:
            problems.append(f"bucket {b} is neither v.defaultBucket nor a string")
            continue
        if value is not None and value != schema.DEFAULT_BUCKET:
            problems.append(f"bucket {b} is {value!r}, not {schema.DEFAULT_BUCKET!r}")

    # Measurements: r._measurement == "x" or a schema function's measurement: "x".
    named: set[str] = set()
    for m in re.finditer(_COL + _CMP, q):
        if (m.group(1) or m.group(2)) == "_measurement" and m.group(3) != "==":
            problems.append(f"_measurement compared with {m.group(3)} (use ==)")
    named.update(re.findall(r'\br(?:\._measurement|\[\s*"_measurement"\s*\])\s*==\s*' + _STR, q))
    named.update(re.findall(r"\bmeasurement\s*:\s*" + _STR, q))
    if not named:
        problems.append("names no measurement")
    unknown = named - set(schema.MEASUREMENTS)
    if unknown:
        problems.append(f"unknown measurement(s) {sorted(unknown)}")
    measurements = [schema.MEASUREMENTS[n] for n in sorted(named - unknown)]
    fields = {f for ms in measurements for f in ms.fields}
    tags = {t for ms in measurements for t in ms.tags}

    # Fields: r._field == "y", contains(value: r._field, set: [...]).
    wanted: set[str] = set()
    for m in re.finditer(r'\br(?:\._field|\[\s*"_field"\s*\])' + _CMP + r"(\S+)", q):
        op, rhs = m.group(1), m.group(2)
        if op not in ("==", "!=") or not rhs.startswith('"'):
            problems.append(f"_field compared with {op} {rhs} (use == with a field name)")
    wanted.update(re.findall(r'\br(?:\._field|\[\s*"_field"\s*\])\s*[!=]=\s*' + _STR, q))
    for m in re.finditer(r"contains\(\s*value\s*:\s*r\._field\s*,\s*set\s*:\s*\[([^\]]*)\]", q):
        wanted.update(_string_list(m.group(1)))
    for m in re.finditer(r"\bfields\s*:\s*\[([^\]]*)\]", q):
        wanted.update(_string_list(m.group(1)))
    if measurements and wanted - fields:
        problems.append(
            f"field(s) {sorted(wanted - fields)} not in {[ms.name for ms in measurements]}"
        )

    # Every column read from a record: a tag, a field (after a pivot) or a standard column.
    allowed = tags | fields | STANDARD_COLUMNS
    for m in re.finditer(r"\b" + _COL, q):
        col = m.group(1) or m.group(2)
        if measurements and col not in allowed:
            problems.append(f"r.{col} is not a tag or field of {[ms.name for ms in measurements]}")
    # ... and tag values with a closed set.
    for m in re.finditer(r"\b" + _COL + r"\s*[!=]=\s*" + _STR, q):
        col, value = m.group(1) or m.group(2), m.group(3)
        for ms in measurements:
            values = known_tag_values().get((ms.name, col))
            if values is not None and value not in values:
                problems.append(f"{ms.name}.{col} is never {value!r} (known: {sorted(values)})")
    # Columns named in group(), pivot() and schema.tagValues(tag: ...).
    for m in re.finditer(r"\b(?:columns|rowKey|columnKey)\s*:\s*\[([^\]]*)\]", q):
        if not re.search(r"\b(?:group|pivot)\s*\([^)]*$", q[: m.start()]):
            continue  # keep(), drop(), sort(): any column the query made
        for col in _string_list(m.group(1)):
            if measurements and col not in allowed:
                problems.append(f"groups or pivots by {col!r}, not a tag or field")
    for tag in re.findall(r"\btag\s*:\s*" + _STR, q):
        if measurements and tag not in tags:
            problems.append(f"tag {tag!r} is not a tag of {[ms.name for ms in measurements]}")
    return problems


# --- provisioning ----------------------------------------------------------------------------


def test_datasource_provisioning() -> None:
    doc = load_yaml(DATASOURCES_YAML)
    assert doc["apiVersion"] == 1
    (ds,) = doc["datasources"]
    assert ds["uid"] == "healthgw-influx" and ds["type"] == "influxdb"
    assert ds["access"] == "proxy"
    assert ds["url"] == "http://influxdb:8086"
    assert ds["jsonData"]["version"] == "Flux"
    # The same values the gateway writes with (docker-compose.yml passes them to Grafana).
    assert expand_env(ds["jsonData"]["organization"], {"HEALTHGW_INFLUX_ORG": "o"}) == "o"
    assert expand_env(ds["jsonData"]["defaultBucket"], {"HEALTHGW_INFLUX_BUCKET": "b"}) == "b"
    assert expand_env(ds["secureJsonData"]["token"], {"HEALTHGW_INFLUX_TOKEN": "t"}) == "t"
    assert "token" not in ds["jsonData"], "the token belongs in secureJsonData"
    # A hub started from .env.example reads the bucket the gateway writes by default.
    assert datasource_default_bucket() == schema.DEFAULT_BUCKET
    assert Settings.model_fields["influx_bucket"].default == schema.DEFAULT_BUCKET


def test_dashboard_provider_points_at_the_dashboards() -> None:
    doc = load_yaml(PROVIDERS_YAML)
    assert doc["apiVersion"] == 1
    (provider,) = doc["providers"]
    assert provider["type"] == "file" and provider["folder"] == "Health"
    path = provider["options"]["path"]
    # docker-compose.yml mounts ./grafana/dashboards exactly there, and the provisioning folder
    # where Grafana's image looks for it.
    compose = load_yaml(ROOT / "docker-compose.yml")
    mounts = dict(
        v.split(":")[:2] for v in compose["services"]["grafana"]["volumes"] if ":" in str(v)
    )
    assert mounts["./grafana/dashboards"] == path
    assert mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"
    home = compose["services"]["grafana"]["environment"][
        "GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"
    ]
    assert Path(home).parent.as_posix() == path and (DASHBOARD_DIR / Path(home).name).is_file()
    # The datasource's URL is the compose service.
    assert "influxdb" in compose["services"]
    assert any(str(p).endswith(":8086") for p in compose["services"]["influxdb"]["ports"])


def test_exactly_the_three_dashboards() -> None:
    assert {p.name for p in DASHBOARD_DIR.glob("*.json")} == set(DASHBOARDS)


# --- every dashboard -------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_dashboard_is_well_formed(name: str) -> None:
    dash = load_dashboard(name)
    assert dash["uid"] == DASHBOARDS[name] and len(dash["uid"]) <= 40
    assert dash["title"] and isinstance(dash["schemaVersion"], int) and dash["schemaVersion"] >= 36
    assert dash["refresh"] in ("10s", "30s")
    assert dash.get("id") is None, "provisioned dashboards carry no database id"
    panels = list(iter_panels(dash["panels"]))
    assert panels, "no panels"
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for p in panels:
        assert {"h", "w", "x", "y"} <= set(p["gridPos"]), p.get("title")
        assert p["gridPos"]["x"] >= 0 and p["gridPos"]["x"] + p["gridPos"]["w"] <= 24
        if p["type"] == "row":
            continue
        assert p.get("title"), f"panel {p['id']} has no title"
        assert p.get("targets"), f"panel {p['title']!r} has no queries"
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)), p["title"]
    # Rows with their panels inside count too: at least one panel is real.
    assert any(p["type"] != "row" for p in panels)
    # Links between the dashboards use uids that exist.
    for uid in re.findall(r"/d/([\w-]+)", json.dumps(dash)):
        assert uid in DASHBOARDS.values(), f"link to unknown dashboard {uid}"


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_every_datasource_resolves(name: str) -> None:
    dash = load_dashboard(name)
    provisioned = provisioned_datasources()
    refs = list(datasource_refs(dash))
    assert refs
    for where, ref in refs:
        assert isinstance(ref, dict), f"{where}: datasource by name ({ref!r}); use type and uid"
        if ref == GRAFANA_BUILTIN_DS:
            assert ".annotations" in where, f"{where}: Grafana's own datasource"
            continue
        assert ref.get("uid") in provisioned, f"{where}: unknown datasource uid {ref}"
        assert ref.get("type") == provisioned[ref["uid"]]["type"], where
    # Every panel, target, annotation and query variable names its datasource.
    for p in iter_panels(dash["panels"]):
        if p["type"] != "row":
            assert p.get("datasource"), p["title"]
            assert all(t.get("datasource") for t in p["targets"]), p["title"]
    for a in dash["annotations"]["list"]:
        assert a.get("datasource"), a["name"]
    for v in variables(dash).values():
        if v["type"] == "query":
            assert v.get("datasource"), v["name"]


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_person_variable(name: str) -> None:
    dash = load_dashboard(name)
    person = variables(dash).get("person")
    assert person is not None, "no person template variable"
    assert person["type"] == "query"
    query = variable_query(person) or ""
    assert re.search(r"schema\.(?:measurementT|t)agValues\(", query)
    assert re.search(r'tag\s*:\s*"person"', query)
    if name == "person-detail.json":
        assert not person.get("multi") and not person.get("includeAll"), "one person at a time"
    if name == "family-overview.json":
        assert person.get("multi") and person.get("includeAll")


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_every_flux_query_matches_the_schema(name: str) -> None:
    dash = load_dashboard(name)
    dash_vars = variables(dash)
    queries = flux_queries(dash)
    assert queries
    problems = [f"{where}: {p}" for where, q in queries for p in check_flux(q, dash_vars)]
    assert not problems, "\n".join(problems)


# --- what each dashboard is for --------------------------------------------------------------


def _queried_fields(dash: dict[str, Any]) -> set[str]:
    text = "\n".join(_strip_comments(q) for _, q in flux_queries(dash))
    return set(re.findall(r'r\._field\s*==\s*"(\w+)"', text))


def _queried_measurements(dash: dict[str, Any]) -> set[str]:
    text = "\n".join(_strip_comments(q) for _, q in flux_queries(dash))
    return set(re.findall(r'r\._measurement\s*==\s*"(\w+)"', text))


def _overrides(dash: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for p in iter_panels(dash["panels"]):
        for o in p.get("fieldConfig", {}).get("overrides", []):
            for prop in o["properties"]:
                yield o["matcher"]["options"], prop


def test_family_overview_has_one_row_per_person() -> None:
    dash = load_dashboard("family-overview.json")
    fields = _queried_fields(dash)
    assert {"news2_level_num", "open_alerts", "heart_rate", "spo2"} <= fields
    assert {"systolic_bp", "diastolic_bp", "temperature_c", "respiratory_rate"} <= fields
    assert "events" in _queried_measurements(dash), "recent events"
    tables = [p for p in iter_panels(dash["panels"]) if p["type"] == "table"]
    latest = next(p for p in tables if "news2_level_num" in p["targets"][0]["query"])
    q = latest["targets"][0]["query"]
    assert re.search(r'pivot\(rowKey:\s*\["person"\]', q), "one row per person"
    assert "last_seen" in q and "r._time" in q, "last seen is the newest point's time"
    # NEWS2 level: coloured by threshold, shown as words.
    level = [prop for name, prop in _overrides(dash) if name == "news2_level_num"]
    thresholds = next(p["value"] for p in level if p["id"] == "thresholds")
    assert [s["color"] for s in thresholds["steps"]] == ["green", "yellow", "orange", "red"]
    assert [s["value"] for s in thresholds["steps"]] == [None, 1, 2, 3]
    mapping = next(p["value"] for p in level if p["id"] == "mappings")[0]["options"]
    assert {int(k): v["text"] for k, v in mapping.items()} == {
        v: k for k, v in schema.NEWS2_LEVEL_NUM.items()
    }


def test_person_detail_has_ranges_annotations_sleep_and_adherence() -> None:
    dash = load_dashboard("person-detail.json")
    assert {"vitals", "ranges", "doses", "events"} <= _queried_measurements(dash)
    fields = _queried_fields(dash)
    assert {"sleep_deep", "sleep_light", "sleep_rem", "sleep_awake"} <= fields
    assert {"taken", "news2_total", "anomaly_score", "battery"} <= fields
    assert set(NUMERIC_VITALS) <= fields
    # Annotations from the events measurement: SOS and anomalies (and alerts).
    cats = {
        c
        for a in dash["annotations"]["list"]
        if not a.get("builtIn")
        for c in re.findall(r'r\.category\s*==\s*"(\w+)"', a["target"]["query"])
    }
    assert {"sos", "anomaly", "alert"} <= cats
    # Each vital panel draws the band: a fillBelowTo naming a series of the same panel.
    bands = 0
    for p in iter_panels(dash["panels"]):
        props = [
            (o["matcher"]["options"], prop)
            for o in p.get("fieldConfig", {}).get("overrides", [])
            for prop in o["properties"]
        ]
        names = {prop["value"] for _, prop in props if prop["id"] == "displayName"}
        for _, prop in props:
            if prop["id"] == "custom.fillBelowTo":
                assert prop["value"] in names, f"{p['title']}: fillBelowTo {prop['value']}"
                assert any('"ranges"' in t["query"] for t in p["targets"]), p["title"]
                bands += 1
    assert bands == len(NUMERIC_VITALS)


def test_gateway_health_covers_ingest_rejects_outbox_and_sos_latency() -> None:
    dash = load_dashboard("gateway-health.json")
    fields = _queried_fields(dash)
    assert {"ingest_rate", "outbox_points", "sos_latency_ms"} <= fields
    assert fields & {"rejected_total", "reject_rate"}
    assert {"outbox_bytes", "queue_mqtt_in", "queue_store", "texts_sent", "texts_failed"} <= fields
    sos = [
        p
        for p in iter_panels(dash["panels"])
        if any("sos_latency_ms" in t.get("query", "") for t in p.get("targets", []))
    ]
    assert {p["type"] for p in sos} >= {"stat", "timeseries"}


# --- the checker catches mistakes ------------------------------------------------------------


def _mutations() -> list[tuple[str, str, str, str]]:
    """(dashboard, from, to, expected problem)."""
    return [
        ("family-overview.json", '"news2_level_num"', '"news2_level_number"', "field(s)"),
        ("person-detail.json", 'r._field == "sleep_rem"', 'r._field == "sleep_dream"', "field(s)"),
        (
            "gateway-health.json",
            'r._field == "ingest_rate"',
            'r._field == "heart_rate"',
            "field(s)",
        ),
        ("person-detail.json", '"doses"', '"dose"', "unknown measurement"),
        ("family-overview.json", "r.person", "r.patient", "not a tag or field"),
        ("person-detail.json", 'r.category == "sos"', 'r.category == "panic"', "never 'panic'"),
        ("person-detail.json", 'r.vital == "spo2"', 'r.vital == "oxygen"', "never 'oxygen'"),
        ("gateway-health.json", "bucket: v.defaultBucket", 'bucket: "metrics"', "not 'health'"),
        ("gateway-health.json", "bucket: v.defaultBucket", 'bucket: "${bucket}"', "not define"),
        ("person-detail.json", '"${person}"', '"${persona}"', "not define"),
        ("family-overview.json", 'columns: ["person", "_field"]', 'columns: ["room"]', "groups"),
    ]


@pytest.mark.parametrize(("name", "old", "new", "expected"), _mutations())
def test_checker_catches_a_mutated_query(name: str, old: str, new: str, expected: str) -> None:
    dash = load_dashboard(name)
    dash_vars = variables(dash)
    mutated = [(w, q.replace(old, new)) for w, q in flux_queries(dash) if old in q]
    assert mutated, f"{old!r} is in no query of {name}"
    for where, q in mutated:
        problems = check_flux(q, dash_vars)
        assert any(expected in p for p in problems), f"{where}: {problems}"


def test_checker_accepts_a_bucket_variable_that_defaults_to_the_schema() -> None:
    q = 'from(bucket: "${bucket}") |> range(start: -1h) |> filter(fn: (r) => r._measurement == "vitals" and r._field == "spo2")'
    ok = {"bucket": {"name": "bucket", "type": "constant", "query": schema.DEFAULT_BUCKET}}
    assert check_flux(q, ok) == []
    wrong = {"bucket": {"name": "bucket", "type": "constant", "query": "other"}}
    assert any("not 'health'" in p for p in check_flux(q, wrong))
    assert any("names no measurement" in p for p in check_flux('from(bucket: "health")', {}))


def test_checker_catches_an_unknown_datasource() -> None:
    dash = copy.deepcopy(load_dashboard("person-detail.json"))
    next(p for p in iter_panels(dash["panels"]) if p["type"] != "row")["targets"][0][
        "datasource"
    ] = {"type": "influxdb", "uid": "someone-elses"}
    provisioned = provisioned_datasources()
    bad = [
        where
        for where, ref in datasource_refs(dash)
        if ref != GRAFANA_BUILTIN_DS and ref.get("uid") not in provisioned
    ]
    assert bad and ".targets[0]" in bad[0]
