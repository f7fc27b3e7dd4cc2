"""What the household's range overrides do, for `healthgw check-config`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gateway.monitor.profile import Pair, Profile
from gateway.monitor.ranges import VitalRange, computed_ranges, ranges_for

Kind = Literal["applied", "clamped", "clinician_widened"]


def override_review(profile: Profile) -> list[OverrideNote]:
    """What each household override does, for `healthgw check-config`: applied as written,
    clamped (it tried to widen a critical limit or leave normal outside critical without a
    clinician's note), or a critical limit widened on a clinician's say-so."""
    notes: list[OverrideNote] = []
    computed = computed_ranges(profile)
    applied = ranges_for(profile)
    for vital, ov in profile.overrides.items():
        base, got = computed[vital], applied[vital]
        widened = got.critical[0] < base.critical[0] or got.critical[1] > base.critical[1]
        asked = {
            k: v for k, v in (("normal", ov.normal), ("critical", ov.critical)) if v is not None
        }
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
                f"{self.vital}: override clamped to safe limits ({got}; {was}). Add "
                "`clinician_override: <who and why>` to widen a critical limit."
            )
        if self.kind == "clinician_widened":
            return (
                f"{self.vital}: critical limit WIDENED on a clinician's note "
                f"({got}; {was}; note: {self.clinician})"
            )
        return f"{self.vital}: override applied ({got}; {was})"
