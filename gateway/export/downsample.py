"""Per-minute or per-hour summaries: for each device and vital in a window, the mean (the
Observation's valueQuantity), minimum, maximum and count. O(devices x vitals) memory: a window
is summed as readings pass and dropped once written."""

from __future__ import annotations

from dataclasses import dataclass, field

CONSCIOUSNESS_ORDER = "ACVPU"  # worse to the right (NEWS2 scores all but A as 3)


@dataclass(slots=True)
class Stat:
    total: float = 0.0
    n: int = 0
    low: float = float("inf")
    high: float = float("-inf")

    def add(self, value: float) -> None:
        self.total += value
        self.n += 1
        if value < self.low:
            self.low = value
        if value > self.high:
            self.high = value

    @property
    def mean(self) -> float:
        return round(self.total / self.n, 1)


@dataclass(slots=True)
class Window:
    """One window's sums, by (device, vital); BP as ("bp:systolic_bp" / "bp:diastolic_bp")."""

    start: float
    size: float
    stats: dict[tuple[str, str], Stat] = field(default_factory=dict)
    on_o2: bool | None = None
    consciousness: str | None = None

    @property
    def end(self) -> float:
        return self.start + self.size

    def add(self, device: str, vital: str, value: float) -> None:
        key = (device, vital)
        st = self.stats.get(key)
        if st is None:
            st = self.stats[key] = Stat()
        st.add(value)

    def note(self, on_o2: object, consciousness: object) -> None:
        if on_o2 is not None:
            self.on_o2 = bool(on_o2) or bool(self.on_o2)
        if isinstance(consciousness, str) and consciousness in CONSCIOUSNESS_ORDER:
            worst = self.consciousness or "A"
            if CONSCIOUSNESS_ORDER.index(consciousness) > CONSCIOUSNESS_ORDER.index(worst):
                worst = consciousness
            self.consciousness = worst


def window_start(ts: float, size: float) -> float:
    return (ts // size) * size
