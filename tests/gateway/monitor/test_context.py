"""Activity, recovery and sleep as the monitor sees them (gateway/monitor/context.py)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from gateway.contract.values import Reading
from gateway.monitor.context import RECOVERY_S, ContextTracker

TZ = ZoneInfo("Europe/London")
NOON = datetime(2026, 10, 6, 12, 0, tzinfo=TZ).timestamp()
NIGHT = datetime(2026, 10, 6, 3, 0, tzinfo=TZ).timestamp()


def r(ts: float, *, device: str = "w", steps: int | None = None, **kw: object) -> Reading:
    return Reading("p", device, ts, steps=steps, heart_rate=70, **kw)  # type: ignore[arg-type]


def test_walking_then_recovering_then_rest() -> None:
    c = ContextTracker("Europe/London")
    assert c.observe(r(NOON, steps=100), 60).activity == "active"
    assert c.observe(r(NOON + 60, steps=0), 60).activity == "recovering"
    assert c.observe(r(NOON + RECOVERY_S, steps=0), 60).activity == "recovering"
    assert c.observe(r(NOON + RECOVERY_S + 61, steps=0), 60).activity == "rest"


def test_pottering_about_is_rest() -> None:
    c = ContextTracker("Europe/London")
    assert c.observe(r(NOON, steps=30), 60).activity == "rest"  # 30 steps a minute


def test_a_cuff_reading_after_a_walk_is_recovering() -> None:
    c = ContextTracker("Europe/London")
    c.observe(r(NOON, steps=100), 60)
    assert c.observe(r(NOON + 120, device="cuff"), 3600).activity == "recovering"


def test_sleep_comes_from_the_devices_stages_when_it_reports_them() -> None:
    c = ContextTracker("Europe/London")
    assert c.observe(r(NOON, steps=0, sleep={"light": 1.0}), 60).asleep  # a nap at noon
    assert not c.observe(r(NOON + 60, steps=0, sleep={"awake": 1.0}), 60).asleep
    # A device that reports sleep, at night, with no report for a while: not assumed asleep.
    assert not c.observe(r(NIGHT + 86_400, steps=0), 60).asleep


def test_without_sleep_stages_night_hours_at_rest_count_as_asleep() -> None:
    c = ContextTracker("Europe/London")
    assert c.observe(r(NIGHT, steps=0), 60).asleep
    assert not c.observe(r(NIGHT + 60, steps=80), 60).asleep  # up and walking
    assert not c.observe(r(NOON, steps=0), 60).asleep
