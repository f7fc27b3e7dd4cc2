"""PHI in log lines: household names, phone numbers and coordinates.

Used by the autouse log guard in conftest.py (every test) and by the demo scan. What it looks
for: every person's and contact's name from the example household (and any household a test
registers), any run of 8+ digits that looks like a phone number (a masked `+44…02` passes), and
any decimal latitude/longitude pair or maps link.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent

PHONE = re.compile(r"(?<![\w.])\+?\d[\d ()-]{7,}\d(?![\w.])")
COORD_PAIR = re.compile(r"-?\d{1,3}\.\d{3,}\s*,\s*-?\d{1,3}\.\d{3,}")
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
MAPS = re.compile(r"maps\.google\.|geo:-?\d|openstreetmap\.org/\?mlat")


def household_names(path: Path = ROOT / "examples" / "household.yaml") -> set[str]:
    h: dict[str, Any] = yaml.safe_load(path.read_text())
    names: set[str] = set()
    for p in h.get("persons", []):
        names.add(str(p["name"]))
        for c in p.get("emergency_contacts", []) or []:
            names.add(str(c["name"]))
    return names


def household_phones(path: Path = ROOT / "examples" / "household.yaml") -> set[str]:
    h: dict[str, Any] = yaml.safe_load(path.read_text())
    phones: set[str] = set()
    for p in h.get("persons", []):
        if p.get("phone"):
            phones.add(str(p["phone"]))
        for c in p.get("emergency_contacts", []) or []:
            phones.add(str(c["phone"]))
    for a in h.get("ambulances", []) or []:
        phones.add(str(a["phone"]))
    return phones


NAMES = household_names()
PHONES = household_phones()


def findings(text: str, names: set[str] = NAMES) -> list[str]:
    """What in `text` is PHI, each as a short label (never echoing more than needed)."""
    found: list[str] = []
    for n in names:
        if n in text:
            found.append(f"name {n!r}")
    for p in PHONES:
        if p in text or p.lstrip("+") in text:
            found.append(f"household phone …{p[-2:]}")
    for m in PHONE.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        # Epoch times, byte counts and ports are long digit runs too; a phone has 8-15
        # digits and is not a plain 10-digit epoch second nor a 13/19-digit epoch ms/ns.
        if ISO_DATE.fullmatch(m.group().strip()):
            continue
        if 8 <= len(digits) <= 15 and not _looks_like_time(m.group(), digits):
            found.append(f"phone-like {m.group()[:4]}…")
    if COORD_PAIR.search(text):
        found.append("coordinate pair")
    if MAPS.search(text):
        found.append("map link")
    return found


def _looks_like_time(raw: str, digits: str) -> bool:
    if raw.startswith("+"):
        return False
    return digits.startswith(("17", "18", "19", "20")) and len(digits) in (10, 13, 16, 19)
