"""The vitals table (gateway/contract/vitals.py) and every list derived from it agree: one row per
measured field of a reading, and the contract, store, time-series schema, plausibility
check, alert wording, anomaly forest, NEWS2 and Home Assistant name the same vitals."""

from __future__ import annotations

import dataclasses
import re

from gateway.contract import topics as contract
from gateway.contract import vitals
from gateway.contract.values import Reading
from gateway.contract.vitals import BY_NAME, NUMERIC_VITALS, SCALAR_VITALS, VITALS
from gateway.ha.messages import VITAL_SENSORS
from gateway.monitor import forest, news2, plausibility, wording
from gateway.store import schema as store_schema
from gateway.tsdb import schema as tsdb_schema

# Reading fields that are not measurements: identity, timing and where the wearer is.
_NOT_VITALS = {"person", "device", "ts", "seq", "latitude", "longitude", "received_at"}


def test_every_vital_of_the_reading_model_has_exactly_one_row() -> None:
    names = [v.name for v in VITALS]
    assert len(names) == len(set(names)) == len(BY_NAME)
    fields = [f.name for f in dataclasses.fields(Reading) if f.name not in _NOT_VITALS]
    assert names == fields


def test_the_payload_has_each_vital_in_table_order() -> None:
    payload = [f for f in contract.VitalsPayload.model_fields if f not in ("ts", "seq", "location")]
    assert payload == [v.name for v in VITALS]
    assert tuple(contract.Sleep.model_fields) == vitals.SLEEP_STAGES


def test_contract_lists_are_the_tables() -> None:
    assert tuple(v.name for v in VITALS if v.counts_as_reading) == contract.VITAL_FIELDS
    assert contract.NUMERIC_VITALS == NUMERIC_VITALS
    assert "battery" not in contract.VITAL_FIELDS  # battery alone is not a reading


def test_store_columns_follow_the_table() -> None:
    cols = store_schema.READING_COLS
    start = cols.index(SCALAR_VITALS[0])
    assert cols[start : start + len(SCALAR_VITALS)] == SCALAR_VITALS
    table = store_schema.SCHEMA.split("CREATE TABLE IF NOT EXISTS readings (", 1)[1]
    table = table.split(");", 1)[0]
    declared = re.findall(r"^\s+(\w+) (\w+)", table, re.M)
    assert [n for n, _ in declared if n != "id"] == list(cols)
    types = dict(declared)
    for v in VITALS:
        assert types[v.name] == (v.column or "TEXT"), v.name  # sleep is JSON text


def test_tsdb_fields_follow_the_table() -> None:
    fields = tsdb_schema.VITALS.fields
    for v in VITALS:
        if v.tsdb is None:
            assert v.name not in fields
        else:
            assert fields[v.name] == v.tsdb, v.name
    for stage in vitals.SLEEP_STAGES:
        assert fields[f"sleep_{stage}"] == "float"


def test_monitor_lists_follow_the_table() -> None:
    assert tuple(plausibility.POSSIBLE) == NUMERIC_VITALS
    assert tuple(wording.UNITS) == tuple(wording.LABELS) == NUMERIC_VITALS
    assert (*vitals.FOREST_VITALS, "steps_per_min") == forest.FEATURES
    columns = sorted(v.forest_column for v in VITALS if v.forest_column is not None)
    assert columns == list(range(len(columns)))


def test_news2_parameters_each_have_a_row() -> None:
    assert {v.news2 for v in VITALS if v.news2} == set(news2.PARAMETERS)


def test_home_assistant_shows_the_numeric_vitals() -> None:
    assert tuple(s.key for s in VITAL_SENSORS) == NUMERIC_VITALS
    for s in VITAL_SENSORS:
        ha = BY_NAME[s.key].ha
        assert ha is not None and (s.name, s.unit, s.icon) == (ha.name, ha.unit, ha.icon)
