"""NEWS2 over what a person's devices measured recently (a BP cuff reports less often than a
watch), and whether that evidence is complete enough to clear a NEWS2 alert."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gateway.monitor.news2 import News2Result, score_news2

# A vital measured this recently still counts towards NEWS2.
NEWS2_WINDOW_S = 15 * 60
Book = Mapping[str, tuple[float, Any]]  # name -> (reading time, value)
MEASURED = ("respiratory_rate", "spo2", "systolic_bp", "heart_rate", "temperature_c")


def recent(book: Book, name: str, ts: float) -> Any:
    item = book.get(name)
    if item is None or abs(ts - item[0]) > NEWS2_WINDOW_S:
        return None
    return item[1]


def news2(
    book: Book,
    ts: float,
    scale: int,
    *,
    skip_hr: bool = False,
    skip_rr: bool = False,
    skip_spo2: bool = False,
    home_oxygen: bool = False,
) -> News2Result:
    """`home_oxygen`: the person uses oxygen at home, so an unreported flag is scored as
    oxygen (2 points): assuming air would under-score exactly the people at risk. `skip_hr`,
    `skip_rr`: scored without them (exercise raises both; NEWS2 is a resting score);
    `skip_spo2`: without SpO2 too (exertion lowers it in chronic lung disease, ranges.py)."""
    o2 = recent(book, "on_supplemental_o2", ts)
    return score_news2(
        respiratory_rate=None if skip_rr else recent(book, "respiratory_rate", ts),
        spo2=None if skip_spo2 else recent(book, "spo2", ts),
        on_supplemental_o2=True if o2 is None and home_oxygen else o2,
        systolic_bp=recent(book, "systolic_bp", ts),
        heart_rate=None if skip_hr else recent(book, "heart_rate", ts),
        consciousness=recent(book, "consciousness", ts),
        temperature_c=recent(book, "temperature_c", ts),
        spo2_scale=scale,
    )


def clearable(book: Book, ts: float, *, answered_recently: bool, needs_o2: bool) -> bool:
    """Complete evidence: all five measured parameters, consciousness observed (reported,
    or the wearer answered a prompt within the window: responding is Alert on ACVPU), and the
    oxygen flag reported when the person may be on oxygen (else air is a safe assumption)."""
    aware = recent(book, "consciousness", ts) is not None or answered_recently
    o2 = not needs_o2 or recent(book, "on_supplemental_o2", ts) is not None
    return aware and o2 and all(recent(book, v, ts) is not None for v in MEASURED)


DeviceBook = dict[str, dict[str, tuple[float, float]]]  # vital -> device -> (ts, value)


def worst_view(
    book: Book, by_device: DeviceBook, ts: float, rank: Callable[[str, float], int]
) -> Book:
    """What NEWS2 and MEOWS should see when several devices measure one vital: the worst
    recent value (ties: the latest), so a watch's 96 % does not hide a finger oximeter's 82 %.
    With one device per vital (the usual case) this is `book` itself."""
    if all(len(d) <= 1 for d in by_device.values()):
        return book
    view = dict(book)
    for vital, devices in by_device.items():
        fresh = [(t, x) for t, x in devices.values() if abs(ts - t) <= NEWS2_WINDOW_S]
        if len(fresh) > 1:
            view[vital] = max(fresh, key=lambda tx: (rank(vital, tx[1]), tx[0]))
    return view
