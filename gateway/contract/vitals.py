"""The one table of vitals: for each measured field of a reading, its name, the words and
unit an alert uses, the values no human can have, its NEWS2 parameter, its time-series and
SQL types, its anomaly-forest column and its Home Assistant sensor.

The wire contract, the store's schema, the time-series schema, the plausibility check, the
alert wording, the anomaly forest and Home Assistant discovery all derive their lists from
this table, so adding a vital is one row here (plus the payload field in gateway/contract/topics.py,
which tests/gateway/contract/test_vitals.py checks against it). It imports nothing from the gateway, so the
contract and the simulators can read it too.

Clinical rules (NEWS2 bands, normal ranges per population) are not here: they live in
gateway/monitor/news2.py and ranges.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# InfluxDB line-protocol field types (gateway/tsdb/schema.py).
FieldKind = Literal["float", "int", "bool", "str"]
SqlType = Literal["REAL", "INTEGER", "TEXT"]


@dataclass(frozen=True, slots=True)
class HaSensor:
    """How Home Assistant shows a vital (its own name and unit: a dashboard, not a text)."""

    name: str
    unit: str
    icon: str
    precision: int
    device_class: str | None = None


@dataclass(frozen=True, slots=True)
class Vital:
    name: str  # the Reading / VitalsPayload attribute, the column and the field
    counts_as_reading: bool  # alone, makes a reading (battery or location alone do not)
    numeric: bool  # ranged, plausibility-checked and scored by the monitor
    column: SqlType | None  # readings-table type; None: stored as JSON after the location
    tsdb: FieldKind | None  # vitals field type; None: written as one field per sleep stage
    # What every text calls it ("oxygen saturation"); gateway/contract/vital_words.py words its value.
    label: str = ""
    unit: str | None = None  # the unit a text writes after the value (None: words, no unit)
    # Closed interval of what is humanly possible; outside it the device is broken.
    possible: tuple[float, float] | None = None
    news2: str | None = None  # the NEWS2 chart parameter it feeds (news2.PARAMETERS)
    forest_column: int | None = None  # position in the anomaly forest's feature row
    ha: HaSensor | None = None


# In the order of the contract, the readings table and the vitals measurement.
VITALS: tuple[Vital, ...] = (
    Vital(
        "heart_rate",
        counts_as_reading=True,
        numeric=True,
        column="REAL",
        tsdb="float",
        label="heart rate",
        unit="bpm",
        possible=(0, 350),
        news2="heart_rate",
        forest_column=0,
        ha=HaSensor("Heart rate", "bpm", "mdi:heart-pulse", 0),
    ),
    Vital(
        "spo2",
        counts_as_reading=True,
        numeric=True,
        column="REAL",
        tsdb="float",
        label="oxygen saturation",
        unit="%",
        possible=(0, 100),
        news2="spo2",
        forest_column=1,
        ha=HaSensor("SpO2", "%", "mdi:lungs", 0),
    ),
    Vital(
        "systolic_bp",
        counts_as_reading=True,
        numeric=True,
        column="REAL",
        tsdb="float",
        label="systolic blood pressure",
        unit="mmHg",
        possible=(0, 400),
        news2="systolic_bp",
        forest_column=4,
        ha=HaSensor("Systolic blood pressure", "mmHg", "mdi:heart-box", 0),
    ),
    Vital(
        "diastolic_bp",
        counts_as_reading=True,
        numeric=True,
        column="REAL",
        tsdb="float",
        label="diastolic blood pressure",
        unit="mmHg",
        possible=(0, 300),
        ha=HaSensor("Diastolic blood pressure", "mmHg", "mdi:heart-box-outline", 0),
    ),
    Vital(
        "temperature_c",
        counts_as_reading=True,
        numeric=True,
        column="REAL",
        tsdb="float",
        label="temperature",
        unit="°C",
        possible=(10, 47),
        news2="temperature_c",
        forest_column=3,
        ha=HaSensor("Temperature", "°C", "mdi:thermometer", 1, "temperature"),
    ),
    Vital(
        "respiratory_rate",
        counts_as_reading=True,
        numeric=True,
        column="REAL",
        tsdb="float",
        label="breathing rate",
        unit="/min",
        possible=(0, 150),
        news2="respiratory_rate",
        forest_column=2,
        ha=HaSensor("Respiratory rate", "breaths/min", "mdi:lungs", 0),
    ),
    # The forest reads steps as steps_per_min, a rate the monitor computes (forest.FEATURES).
    Vital(
        "steps",
        counts_as_reading=True,
        numeric=False,
        column="INTEGER",
        tsdb="int",
        label="steps",
        unit="steps",
    ),
    Vital(
        "on_supplemental_o2",
        counts_as_reading=False,
        numeric=False,
        column="INTEGER",
        tsdb="bool",
        label="supplemental oxygen",
        news2="supplemental_o2",
    ),
    Vital(
        "consciousness",
        counts_as_reading=True,
        numeric=False,
        column="TEXT",
        tsdb="str",
        label="consciousness",
        news2="consciousness",
    ),
    # Minutes per stage (SLEEP_STAGES); vital_words says it as hours and minutes asleep.
    Vital("sleep", counts_as_reading=True, numeric=False, column=None, tsdb=None, label="sleep"),
    Vital(
        "fall_detected",
        counts_as_reading=True,
        numeric=False,
        column="INTEGER",
        tsdb="bool",
        label="fall detection",
    ),
    Vital(
        "battery",
        counts_as_reading=False,
        numeric=False,
        column="REAL",
        tsdb="float",
        label="battery",
        unit="%",
    ),
)
BY_NAME: dict[str, Vital] = {v.name: v for v in VITALS}

# Minutes in each sleep stage (the contract's Sleep, the tsdb's sleep_* fields).
SLEEP_STAGES: tuple[str, ...] = ("deep", "light", "rem", "awake")

# Vitals that count as "a reading" (battery or location alone do not).
VITAL_FIELDS: tuple[str, ...] = tuple(v.name for v in VITALS if v.counts_as_reading)
# Numeric vitals the monitor ranges, plausibility checks and NEWS2 work on.
NUMERIC_VITALS: tuple[str, ...] = tuple(v.name for v in VITALS if v.numeric)
# Measured values with a column (and a tsdb field) of their own: all but sleep.
SCALAR_VITALS: tuple[str, ...] = tuple(v.name for v in VITALS if v.column is not None)
# The anomaly forest's vital columns by position (a fitted model keeps its columns by index).
_FOREST = {v.forest_column: v.name for v in VITALS if v.forest_column is not None}
FOREST_VITALS: tuple[str, ...] = tuple(_FOREST[i] for i in sorted(_FOREST))
