"""Device state (gateway/monitor/devices.py): a reading's arrival and the battery."""

from __future__ import annotations

from gateway.contract.topics import EventType
from gateway.contract.values import Reading
from gateway.monitor.devices import DeviceWatch
from gateway.monitor.stale import StaleTracker
from gateway.monitor.timeline import Timeline

T0 = 1_790_000_000.0


def test_arrival_tells_late_data_and_the_configured_interval() -> None:
    dw = DeviceWatch(StaleTracker(), Timeline(600))
    live = dw.arrived(Reading("p", "w", T0, heart_rate=70), T0 + 1, 30.0)
    assert not live.late and live.interval == 30.0
    late = dw.arrived(Reading("p", "w", T0 - 3600, heart_rate=70), T0 + 2, None)
    assert late.late


def test_low_battery_is_reported_once_until_charged() -> None:
    dw = DeviceWatch(StaleTracker(), Timeline(600))
    low = [dw.battery(Reading("p", "w", T0 + i, battery=10), T0 + i) for i in range(3)]
    assert [len(e) for e in low] == [1, 0, 0] and low[0][0].type == EventType.BATTERY_LOW
    assert dw.battery(Reading("p", "w", T0 + 5, battery=30), T0 + 5) == []
    assert len(dw.battery(Reading("p", "w", T0 + 6, battery=12), T0 + 6)) == 1
