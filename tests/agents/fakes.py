"""Small deterministic stand-ins for the triage classifier (policy unit tests)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class FakeResult:
    specialty: str
    vague: bool
    matched: tuple[str, ...] = ()
    confidence: float = 0.9

    @property
    def ranked(self) -> tuple[tuple[str, float], ...]:
        return ((self.specialty, self.confidence),)


class FakeTriage:
    """Keyword triage: enough to drive the policy's branches predictably."""

    RULES = (
        ("chest", "cardiologist"),
        ("cough", "pulmonologist"),
        ("knee", "rheumatologist"),
        ("rash", "dermatologist"),
        ("diet", "dietician"),
    )

    def __init__(self) -> None:
        self.priors: list[Mapping[str, float] | None] = []

    def classify(self, text: str, prior: Mapping[str, float] | None = None) -> FakeResult:
        self.priors.append(prior)
        t = text.lower()
        for word, spec in self.RULES:
            if word in t:
                return FakeResult(spec, False)
        if prior:
            return FakeResult(max(prior, key=lambda k: prior[k]), True)
        return FakeResult("general physician", True)

    def follow_up(self, text: str, asked: Sequence[str]) -> str | None:
        qs = ["Where do you feel it?", "How long has it been going on?", "What makes it worse?"]
        left = [q for q in qs if q not in asked]
        return left[0] if left else None
