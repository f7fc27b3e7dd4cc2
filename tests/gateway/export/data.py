"""A small household and data folder for the export tests: an adult with every kind of
device, a child and a pregnant person, readings and texts written with the store's and the
text queue's own schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gateway.base.db import Database
from gateway.export import ExportSource
from gateway.household.model import Household
from gateway.notify.text_rows import SCHEMA as TEXTS_SCHEMA
from gateway.store.schema import READING_COLS, SCHEMA

T0 = 1_780_000_000.0  # 2026-05-28T20:26:40Z
CONTACT_PHONE = "+447700900201"
HOUSEHOLD: dict[str, Any] = {
    "timezone": "UTC",
    "persons": [
        {
            "id": "ann", "name": "Ann Marie Smith", "birth_date": "1950-01-02", "sex": "female",
            "location": {"latitude": 51.5072, "longitude": -0.1276},
            "devices": [
                {"id": "ann-watch", "kind": "watch"},
                {"id": "ann-therm", "kind": "thermometer"},
                {"id": "ann-cuff", "kind": "bp_cuff"},
                {"id": "ann-ox", "kind": "oximeter"},
                {"id": "ann-patch", "kind": "watch", "core_temperature": True},
            ],
            "emergency_contacts": [{"name": "Ben Smith", "phone": CONTACT_PHONE,
                                    "relation": "son"}],
        },
        {
            "id": "kid", "name": "Tom Smith", "birth_date": "2019-06-01", "sex": "male",
            "location": {"latitude": 51.5, "longitude": -0.1},
            "devices": [{"id": "kid-watch", "kind": "watch"}],
        },
        {
            "id": "mum", "name": "Eve Smith", "birth_date": "1994-02-03", "sex": "female",
            "pregnant": True, "location": {"latitude": 51.5, "longitude": -0.1},
            "devices": [{"id": "mum-watch", "kind": "watch"}],
        },
    ],
}  # fmt: skip


class Audit(list[dict[str, Any]]):
    def __call__(self, record: Any) -> None:
        self.append(dict(record))


def make_source(tmp: Path) -> tuple[ExportSource, Audit]:
    db = Database(tmp / "healthgw.db")
    db.ensure_schema(SCHEMA)
    texts = Database(tmp / "safety.db")
    texts.ensure_schema(TEXTS_SCHEMA)
    audit = Audit()
    return ExportSource(Household.model_validate(HOUSEHOLD), db, texts, audit), audit


def add_readings(db: Database, rows: list[dict[str, Any]]) -> None:
    params = []
    for i, r in enumerate(rows):
        row = dict.fromkeys(READING_COLS)
        row.update({"seq": i, "received_at": r["ts"]}, **r)
        params.append([row[c] for c in READING_COLS])
    marks = ", ".join("?" * len(READING_COLS))
    with db.tx() as c:
        c.executemany(f"INSERT INTO readings ({', '.join(READING_COLS)}) VALUES ({marks})", params)


def add_text(db: Database, mid: str, person: str, purpose: str, body: str, at: float,
             state: str = "sent", to: str = CONTACT_PHONE) -> None:  # fmt: skip
    with db.tx() as c:
        c.execute(
            "INSERT INTO messages (id, key, person, purpose, to_phone, body, marker, state,"
            " next_attempt_at, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (mid, mid, person, purpose, to, body, f"ref {mid}", state, at, at, at + 2),
        )


def standard_data(src: ExportSource) -> None:
    """Ten minutes of Ann's watch every 5 s, spot checks from each clinical device, an
    impossible value, an abnormal one, a cuff reading without a diastolic; the child's and
    the pregnant person's watches; a hard SOS text and an alert text."""
    rows: list[dict[str, Any]] = []
    for i in range(120):
        rows.append({"person": "ann", "device": "ann-watch", "ts": T0 + 5 * i,
                     "heart_rate": 70.0 + i % 7, "spo2": 96.0, "respiratory_rate": 16.0,
                     "temperature_c": 33.1})  # fmt: skip
    rows[50]["heart_rate"] = 400.0  # no human: dataAbsentReason "error"
    rows[60]["heart_rate"] = 135.0  # abnormal: interpretation
    rows += [
        {"person": "ann", "device": "ann-therm", "ts": T0 + 30, "temperature_c": 38.6},
        {"person": "ann", "device": "ann-patch", "ts": T0 + 31, "temperature_c": 37.0},
        {"person": "ann", "device": "ann-cuff", "ts": T0 + 40, "systolic_bp": 128.0,
         "diastolic_bp": 81.0, "heart_rate": 66.0},
        {"person": "ann", "device": "ann-cuff", "ts": T0 + 400, "systolic_bp": 85.0},
        {"person": "ann", "device": "ann-ox", "ts": T0 + 45, "spo2": 91.0, "heart_rate": 88.0,
         "on_supplemental_o2": 0, "consciousness": "A"},
        {"person": "ann", "device": "old-watch", "ts": T0 + 50, "heart_rate": 75.0},
        {"person": "kid", "device": "kid-watch", "ts": T0 + 10, "heart_rate": 100.0,
         "respiratory_rate": 22.0},
        {"person": "mum", "device": "mum-watch", "ts": T0 + 10, "heart_rate": 90.0,
         "spo2": 97.0},
    ]  # fmt: skip
    add_readings(src.readings, rows)
    assert src.texts is not None
    add_text(src.texts, "m1", "ann", "sos:contact",
             "EMERGENCY: Ann pressed SOS. Home: 51.50720, -0.12760. Call +447700900999.",
             T0 + 302)  # fmt: skip
    add_text(src.texts, "m2", "ann", "alert:contact", "Ann's heart rate is high (135).",
             T0 + 303, state="failed")  # fmt: skip
