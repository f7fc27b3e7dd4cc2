"""What the household's range overrides do, for `healthgw check-config`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import yaml

from gateway.household.model import Household, _line_map, _nearest_line
from gateway.monitor.profile import KNOWN_CONDITIONS, Pair, Profile
from gateway.monitor.ranges import VitalRange, computed_ranges, ranges_for

Kind = Literal["applied", "clamped", "clinician_widened"]


def override_review(profile: Profile) -> list[OverrideNote]:
    """What each household override does, for `healthgw check-config`: applied as written,
    clamped (without a clinician's note it tried to make the monitor less sensitive: widen a
    normal or critical range, or narrow plausible), or a critical limit widened on a
    clinician's say-so."""
    notes: list[OverrideNote] = []
    computed = computed_ranges(profile)
    applied = ranges_for(profile)
    for vital, ov in profile.overrides.items():
        base, got = computed[vital], applied[vital]
        widened = any(
            got_pair[0] < base_pair[0] or got_pair[1] > base_pair[1]
            for got_pair, base_pair in ((got.critical, base.critical), (got.normal, base.normal))
        )
        asked = {
            k: v
            for k, v in (("normal", ov.normal), ("critical", ov.critical),
                         ("plausible", ov.plausible))
            if v is not None
        }  # fmt: skip
        clamped = any(tuple(map(float, pair)) != getattr(got, k) for k, pair in asked.items())
        kind: Kind
        if ov.clinician and widened:
            kind = "clinician_widened"
        elif clamped:
            kind = "clamped"
        else:
            kind = "applied"
        notes.append(OverrideNote(vital, kind, base, got, ov.clinician))
    return notes


@dataclass(frozen=True, slots=True)
class OverrideNote:
    vital: str
    kind: Kind
    computed: VitalRange
    applied: VitalRange
    clinician: str | None

    def text(self) -> str:
        def pair(p: Pair) -> str:
            return f"{p[0]:g}-{p[1]:g}"

        got = f"normal {pair(self.applied.normal)}, critical {pair(self.applied.critical)}"
        was = (
            f"computed normal {pair(self.computed.normal)}, critical {pair(self.computed.critical)}"
        )
        if self.kind == "clamped":
            return (
                f"override clamped to safe limits ({got}; {was}). Add "
                "`clinician_override: <who and why>` to make it less sensitive."
            )
        if self.kind == "clinician_widened":
            return f"limits WIDENED on a clinician's note ({got}; {was}; note: {self.clinician})"
        return f"override applied ({got}; {was})"


Level = Literal["info", "warning", "error"]
_LEVEL: dict[Kind, Level] = {"applied": "info", "clamped": "error", "clinician_widened": "warning"}


@dataclass(frozen=True, slots=True)
class Finding:
    """One line of `healthgw check-config`'s clinical review."""

    path: str
    line: int | None
    where: str  # e.g. persons.0.ranges.heart_rate
    level: Level
    text: str

    def line_text(self) -> str:
        tag = {"info": "", "warning": "WARNING: ", "error": "ERROR: "}[self.level]
        return f"{self.path}:{self.line or '?'}: {self.where}: {tag}{self.text}"


def review_household(household: Household, path: Path) -> list[Finding]:
    """Every range override (and what applies), every widened critical limit, and the
    people the monitor cannot escalate for (no emergency contacts)."""
    try:
        lines = _line_map(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, yaml.YAMLError):
        lines = {}
    today = datetime.now(UTC).date()
    out: list[Finding] = []
    for i, person in enumerate(household.persons):
        profile = Profile.from_person(person, today)
        for note in override_review(profile):
            loc = ("persons", i, "ranges", note.vital)
            level = _LEVEL[note.kind]
            out.append(Finding(str(path), _nearest_line(lines, loc),
                               f"{person.id}.ranges.{note.vital}", level, note.text()))  # fmt: skip
        if not person.emergency_contacts:
            out.append(Finding(str(path), _nearest_line(lines, ("persons", i)), person.id,
                               "warning", "no emergency contacts: an unanswered alert goes to the "
                               "care line if one is set, otherwise it becomes a hard SOS "
                               "(ambulance)"))  # fmt: skip
        unused = sorted(set(profile.conditions) - KNOWN_CONDITIONS)
        if unused:
            out.append(Finding(str(path), _nearest_line(lines, ("persons", i, "conditions")),
                               f"{person.id}.conditions", "info",
                               f"not used by the monitor's ranges: {', '.join(unused)}"))  # fmt: skip
    return out
