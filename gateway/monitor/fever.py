"""NICE NG143's amber fever for a child under 5: a thermometer's fever and, on the watch's
short window (the fever corroborates it), fast breathing or a fast pulse. The observation is
observe.fever_amber_observation; this keeps the child's latest clinical temperature, which
counts for hours, not the 15 minutes NEWS2 looks back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.contract.values import Reading
from gateway.monitor import observe
from gateway.monitor.people import PersonState
from gateway.monitor.populations import FEVER_AMBER_MAX_AGE, fever_amber_limits

FEVER_RECENT_S = 4 * 3600.0  # a thermometer reading counts for a child's fever this long
_RECENT_S = 900.0  # breathing and pulse: the NEWS2 window


def child_fever(
    st: PersonState,
    r: Reading,
    accepted: Mapping[str, float],
    latest: Mapping[str, tuple[float, Any]],
    short: Mapping[str, float],
) -> list[observe.Observation]:
    """The amber-fever observation for this reading, if the person is a child under 5 with a
    recent clinical temperature (`accepted` holds only trusted temperatures)."""
    p = st.profile
    if not p.is_child or p.age is None or p.age > FEVER_AMBER_MAX_AGE:
        return []
    if "temperature_c" in accepted:
        st.core_temp = (r.ts, accepted["temperature_c"])
    if st.core_temp is None or abs(r.ts - st.core_temp[0]) > FEVER_RECENT_S:
        return []

    def recent(v: str) -> float | None:
        if v in short:
            return short[v]
        item = latest.get(v)
        return float(item[1]) if item is not None and abs(r.ts - item[0]) <= _RECENT_S else None

    o = observe.fever_amber_observation(
        st.core_temp[1], recent("respiratory_rate"), recent("heart_rate"),
        fever_amber_limits(p.age_days, p.age),
    )  # fmt: skip
    return [] if o is None else [o]
