"""The replay's output: the timeline and the burden table as text, or JSON."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from healthgw.replay.run import ROLES, ReplayResult


def local_iso(t: float, tz: ZoneInfo) -> str:
    return datetime.fromtimestamp(t, tz).isoformat(timespec="seconds")


def to_json(result: ReplayResult, tz: ZoneInfo) -> str:
    data = result.to_dict()
    for entry in data["timeline"]:
        entry["ts"] = local_iso(entry["t"], tz)
    return json.dumps(data, indent=2, ensure_ascii=False)


def _what(e: dict[str, Any]) -> str:
    kind = e["kind"]
    if kind == "event":
        extra = e.get("why") or e.get("reason") or e.get("trigger") or ""
        pri = f" [{e['priority']}]" if e.get("priority") else ""
        return f"{e['type']}{pri}" + (f": {extra}" if extra else "")
    if kind == "text":
        return f"text to {e['role']} ({e['purpose']})"
    if kind == "prompt":
        return f"asked: {e['text']}"
    return f"told: {e['text']}"


def to_text(result: ReplayResult, tz: ZoneInfo) -> str:
    lines = [f"{'time':<25} {'person':<12} what"]
    for e in result.timeline:
        stamp = datetime.fromtimestamp(e["t"], tz).strftime("%Y-%m-%d %H:%M:%S")
        lines.append(f"{stamp:<25} {e['person']:<12} {_what(e)}")
    lines += ["", "burden per person (counts over the days covered; /day in brackets)"]
    head = f"{'person':<12} {'days':>6} {'prompts':>14} {'soft SOS':>14}"
    head += "".join(f" {r:>14}" for r in ROLES) + f" {'hard SOS':>14}"
    head += f" {'low priority':>14} {'usual':>14}"
    lines.append(head)

    def cell(n: int, days: float) -> str:
        return f"{n} ({n / days:.2f})" if days > 0 else str(n)

    for person, b in result.persons.items():
        row = f"{person:<12} {b.days:>6.2f} {cell(b.prompts, b.days):>14}"
        row += f" {cell(b.soft_sos, b.days):>14}"
        row += "".join(f" {cell(b.texts[r], b.days):>14}" for r in ROLES)
        row += f" {cell(b.hard_sos, b.days):>14}"
        row += f" {cell(b.low, b.days):>14} {cell(b.usual, b.days):>14}"
        lines.append(row)
    return "\n".join(lines)
