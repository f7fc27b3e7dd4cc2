"""The one list of device kinds a household may name (`devices: [{id, kind}]`), and for each
what it measures and how far one of its readings can be trusted. The monitor reads it to
decide how a value must be confirmed before it wakes anyone; the console, the API, Home
Assistant and the time series show the kind by these names. docs/clinical.md §2b has the
table with its sources.

How a reading of a vital from a kind counts (`Trust`):

* ``clinical``: a clinical-grade measurement (a validated cuff, a finger oximeter, a
  thermometer, a value a carer or nurse typed in). One reading counts at once.
* ``wrist``: a consumer optical sensor on the wrist or finger, read every few seconds to
  minutes. One reading can be off by several points (SpO2 ±6 %; Pipek et al. 2022), so a value
  must be *sustained* over several readings before it prompts or texts anyone (the monitor's
  confirmation, gateway/monitor/sustain.py). A single reading in the intervention range or a
  vanished pulse is still asked about at once.
* ``trend``: shown and stored as a trend, never alarmed on: a wrist or ring temperature is skin
  temperature, several degrees below core and moved by the room (docs/clinical.md §2b).

A vital a kind does not list counts as ``wrist``: not at once, never ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from gateway.contract.vitals import NUMERIC_VITALS

Trust = Literal["clinical", "wrist", "trend"]

_WRIST_OPTICAL: Mapping[str, Trust] = MappingProxyType(
    {
        "heart_rate": "wrist",
        "spo2": "wrist",
        "respiratory_rate": "wrist",
        # Cuffless blood pressure is not validated for diagnosis (ESH 2022 statement); it is
        # confirmed like the other wrist values, never ignored.
        "systolic_bp": "wrist",
        "diastolic_bp": "wrist",
        "temperature_c": "trend",  # skin temperature
    }
)


@dataclass(frozen=True, slots=True)
class DeviceKind:
    name: str
    label: str  # what the console calls it
    continuous: bool  # worn and read all day (else a spot check someone takes)
    measures: Mapping[str, Trust]

    def trust(self, vital: str, *, core_temperature: bool = False) -> Trust:
        """How one reading of `vital` from this kind counts. `core_temperature`: the household
        says this device measures core temperature (a clinical thermometer patch)."""
        if vital == "temperature_c" and core_temperature:
            return "clinical"
        return self.measures.get(vital, "wrist")


KINDS: Mapping[str, DeviceKind] = MappingProxyType(
    {
        k.name: k
        for k in (
            DeviceKind("watch", "smartwatch", True, _WRIST_OPTICAL),
            DeviceKind("ring", "smart ring", True, _WRIST_OPTICAL),
            DeviceKind(
                "oximeter",
                "finger pulse oximeter",
                False,
                MappingProxyType({"spo2": "clinical", "heart_rate": "clinical"}),
            ),
            DeviceKind(
                "bp_cuff",
                "blood pressure cuff",
                False,
                MappingProxyType(
                    {
                        "systolic_bp": "clinical",
                        "diastolic_bp": "clinical",
                        "heart_rate": "clinical",
                    }
                ),
            ),
            DeviceKind(
                "thermometer",
                "thermometer",
                False,
                MappingProxyType({"temperature_c": "clinical"}),
            ),
            DeviceKind(
                "manual",
                "values typed in by a carer or nurse",
                False,
                MappingProxyType(dict.fromkeys(NUMERIC_VITALS, "clinical")),
            ),
        )
    }
)
KIND_NAMES: tuple[str, ...] = tuple(KINDS)
DeviceKindName = Literal["watch", "ring", "oximeter", "bp_cuff", "thermometer", "manual"]
DEFAULT_KIND: DeviceKindName = "watch"


def kind_of(name: str) -> DeviceKind:
    """The kind by name (the household file is validated, so the name is known)."""
    return KINDS[name]
