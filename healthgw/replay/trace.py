"""A replay trace: JSON lines, read and checked whole before anything runs.

A reading is `{"ts", "person", "device", ...vitals as in the wire contract}`; an answer to
"are you OK?" is `{"ts", "person", "ack": true|false}` (optionally `"device"` and
`"prompt_id"`). `ts` is ISO 8601 (a time without an offset is the household's local time) or
epoch seconds. A reading may carry `"received"` (same forms): when the hub got it, for a watch
that syncs hours it kept offline; without it a reading arrives at its own `ts`.

Lines must be in arrival order. Every problem is a `TraceError` naming `file:line: what`;
messages name fields and ids, never a vital's value."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import ValidationError

from gateway.base.errors import HealthGWError
from gateway.contract.topics import VitalsPayload, parse_ts
from gateway.household.model import Household

# Keys of a line that are not part of the reading's wire payload.
_ENVELOPE = ("person", "device", "received")
_ACK_KEYS = frozenset({"ts", "person", "device", "ack", "prompt_id"})
MAX_REPORTED = 20  # problems listed before "... more"


class TraceError(HealthGWError):
    """The trace cannot be replayed; the message lists every problem as file:line: what."""


@dataclass(frozen=True, slots=True)
class TraceReading:
    line: int
    arrival: float  # when the hub gets it (its `received`, else its `ts`)
    ts: float
    person: str
    device: str
    body: bytes  # the wire payload, as a device would publish it


@dataclass(frozen=True, slots=True)
class TraceAck:
    line: int
    arrival: float
    person: str
    device: str
    ok: bool
    prompt_id: str | None


TraceItem = TraceReading | TraceAck


class _Problem(HealthGWError):
    """One line's problem (collected into a TraceError)."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def parse_time(value: Any, tz: ZoneInfo, field: str) -> float:
    """ISO 8601 (naive: household local time) or epoch seconds -> epoch seconds; the wire
    contract's parse_ts, with a local time allowed."""
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.strip())
        except ValueError:
            dt = None  # "Z" and the like: parse_ts reads them
        if dt is not None and dt.tzinfo is None:
            value = dt.replace(tzinfo=tz).isoformat()
    try:
        return parse_ts(value)
    except ValueError as exc:
        raise _Problem(f"{field} {str(exc).removeprefix('ts ')}") from None


def _fields(err: ValidationError) -> str:
    names = sorted({str(e["loc"][0]) for e in err.errors() if e["loc"]} or {"reading"})
    return ", ".join(names)


def _device(hh: Household, person: str, obj: Mapping[str, Any], *, required: bool) -> str:
    p = hh.person(person)
    assert p is not None
    dev = obj.get("device")
    if dev is None:
        if required:
            raise _Problem("a reading needs a device")
        if not p.devices:
            raise _Problem(f"person {person} has no devices in the household")
        return p.devices[0].id
    if not isinstance(dev, str) or hh.device(person, dev) is None:
        known = ", ".join(d.id for d in p.devices) or "none"
        shown = dev if isinstance(dev, str) and len(dev) <= 64 else "(not an id)"
        raise _Problem(f"device {shown} is not one of {person}'s devices ({known})")
    return dev


def _item(n: int, obj: Any, hh: Household, tz: ZoneInfo) -> TraceItem:
    if not isinstance(obj, dict):
        raise _Problem("a line must be a JSON object")
    person = obj.get("person")
    if not isinstance(person, str):
        raise _Problem("person is missing")
    if hh.person(person) is None:
        shown = person if len(person) <= 64 else person[:64] + "..."
        raise _Problem(f"unknown person {shown} (not in the household file)")
    if "ts" not in obj:
        raise _Problem("ts is missing")
    ts = parse_time(obj["ts"], tz, "ts")
    if "ack" in obj:
        extra = sorted(set(obj) - _ACK_KEYS)
        if extra:
            raise _Problem(f"an answer line has unknown keys: {', '.join(extra)}")
        if not isinstance(obj["ack"], bool):
            raise _Problem("ack must be true or false")
        pid = obj.get("prompt_id")
        if pid is not None and not isinstance(pid, str):
            raise _Problem("prompt_id must be a string")
        dev = _device(hh, person, obj, required=False)
        return TraceAck(n, ts, person, dev, obj["ack"], pid)
    dev = _device(hh, person, obj, required=True)
    arrival = parse_time(obj["received"], tz, "received") if "received" in obj else ts
    if arrival < ts - 300:
        raise _Problem("received is before ts (a device clock ahead by more than 5 minutes)")
    wire = {k: v for k, v in obj.items() if k not in _ENVELOPE}
    wire["ts"] = ts
    try:
        VitalsPayload.model_validate(wire)
    except ValidationError as exc:
        raise _Problem(f"not a valid reading ({_fields(exc)})") from None
    return TraceReading(n, arrival, ts, person, dev, json.dumps(wire).encode())


def read_trace(path: Path, household: Household) -> list[TraceItem]:
    """Every line checked; raises TraceError listing each problem (file:line: what)."""
    tz = ZoneInfo(household.timezone)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "unreadable"
        raise TraceError(f"{path}: cannot read the trace: {why}") from None
    return parse_lines(str(path), text.splitlines(), household, tz)


def parse_lines(
    name: str, lines: Sequence[str], household: Household, tz: ZoneInfo
) -> list[TraceItem]:
    items: list[TraceItem] = []
    problems: list[str] = []
    last: tuple[int, float] | None = None
    for n, raw in _numbered(lines):
        try:
            try:
                obj = json.loads(raw)
            except ValueError:
                raise _Problem("not JSON") from None
            item = _item(n, obj, household, tz)
        except _Problem as p:
            problems.append(f"{name}:{n}: {p.what}")
            continue
        if last is not None and item.arrival < last[1]:
            problems.append(
                f"{name}:{n}: out of order: it arrives before line {last[0]} "
                "(lines must be in time order)"
            )
            continue
        last = (n, item.arrival)
        items.append(item)
    if problems:
        more = len(problems) - MAX_REPORTED
        shown = problems[:MAX_REPORTED] + ([f"... and {more} more"] if more > 0 else [])
        raise TraceError("\n".join(shown))
    if not items:
        raise TraceError(f"{name}: the trace has no readings or answers")
    return items


def _numbered(lines: Sequence[str]) -> Iterator[tuple[int, str]]:
    for i, raw in enumerate(lines, start=1):
        if raw.strip():
            yield i, raw
