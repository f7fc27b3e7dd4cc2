"""Duplicated, reordered and clock-skewed readings (docs/wire-contract.md, "Duplicates, order
and device clocks").

One set of readings from dad's watch (normal, then NEWS2 high for 50 s, then normal again) is
published through a real mosquitto into a real gateway, once per run, each run on a fresh data
directory and broker:

- `in_order`: each reading once, in timestamp order, the device clock right;
- `dup_shuffled`: each reading twice (a QoS 1 redelivery is an identical payload), the whole
  lot shuffled, the device clock right;
- `skew_minus_10min`: as dup_shuffled, every `ts` 600 s behind the hub;
- `skew_plus_10min`: as dup_shuffled, every `ts` 600 s ahead of the hub.

The contract these runs pin down:

- A duplicate (same device, `seq` and `ts`) is dropped before the monitor and counted; it never
  adds a row or an event. Order does not change what is stored: the same rows (`seq`, `ts`,
  values), returned by `readings()` in `ts` order.
- Order does not change which per-vital alerts open and clear (a watch's reading is judged on
  the window of readings up to its own time, whenever it arrives): the same set for readings
  inside the live window. It can change
  the scores over "the newest value of each vital" (NEWS2): in order, the NEWS2-high alert
  (tier 4, contacts texted at once) opens; shuffled so that the newest readings, normal ones,
  arrive before the older abnormal ones, it does not (the per-vital critical alerts, tier 2,
  do). Also the jump check (`implausible_reading`) sees different neighbours. So the event
  types of a shuffled run are a subset of the in-order run's, not equal.
- A `ts` more than 300 s ahead of the hub is rejected (`ts_in_future`, dead-lettered,
  announced): nothing stored, no event. +10 min is past that bound.
- A `ts` more than `HEALTHGW_LATE_AFTER_S` (600 s) behind its arrival is late data unless the
  device is plainly streaming in real time (then it is a skewed clock, `device_clock_skew`, and
  its readings count as live). A shuffled burst is not a real-time stream: at -10 min the same
  rows are stored (with the device's `ts`), and every alert is a `retrospective_alert`, never a
  `soft_sos`: nobody is prompted or texted.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from gateway.contract.topics import vitals_topic
from tests.brokers import running_broker
from tests.faults.conftest import summary, until
from tests.harness import AWAKE, device, make_settings, publish, running

pytestmark = [pytest.mark.faults, pytest.mark.integration]

PERSON, DEVICE = "dad", "watch-jon"
N = 24
STEP_S = 5.0
VITALS = ("heart_rate", "respiratory_rate", "spo2")


def readings(base: float) -> list[dict[str, Any]]:
    out = []
    for i in range(N):
        bad = 6 <= i < 16  # 50 s of NEWS2 high (three red parameters)
        v = (135, 26, 89) if bad else (72 + i % 3, 16, 97)
        out.append({"ts": base + STEP_S * i, "seq": i, "sleep": AWAKE,  # any hour: awake
                    **dict(zip(VITALS, v, strict=True))})  # fmt: skip
    return out


async def run(tmp: Path, name: str, skew_s: float, dup: bool, shuffle: bool) -> dict[str, Any]:
    with running_broker(tmp / f"broker-{name}") as broker:
        s = make_settings(tmp / f"data-{name}", broker, None, escalation_window_s=600.0)
        async with running(s) as asm, device(broker, f"dev-{name}") as dev:
            gw = asm.gateway
            base = time.time() - STEP_S * N  # the newest reading is "now" on the hub's clock
            msgs = [r | {"ts": r["ts"] + skew_s} for r in readings(base)]
            if dup:
                msgs = msgs + [dict(m) for m in msgs]
            if shuffle:
                random.Random(12).shuffle(msgs)
            for m in msgs:
                await publish(dev, vitals_topic(PERSON, DEVICE), m)
            await until(lambda: gw.counters["received"] >= len(msgs), 30, f"{name}: all received")
            assert gw.store.flush(10)
            await until(lambda: gw.bus.depths() and not any(gw.bus.depths().values()), 10,
                        f"{name}: events handled")  # fmt: skip
            assert gw.store.flush(10)
            rows = gw.store.readings(PERSON, limit=1000)
            events = gw.store.events(person=PERSON, limit=1000)
            return {
                "published": len(msgs),
                "base": base,
                "rows": [
                    (r["seq"], round(r["ts"] - base - skew_s, 3), *(r[v] for v in VITALS))
                    for r in rows
                ],
                "events": events,
                "counters": dict(gw.counters),
                "rejects": dict(gw.rejects),
            }


async def test_duplicated_shuffled_skewed_readings(tmp_path: Path) -> None:
    runs = {
        "in_order": await run(tmp_path, "in_order", 0.0, dup=False, shuffle=False),
        "dup_shuffled": await run(tmp_path, "dup_shuffled", 0.0, dup=True, shuffle=True),
        "skew_minus_10min": await run(tmp_path, "skew_minus", -600.0, dup=True, shuffle=True),
        "skew_plus_10min": await run(tmp_path, "skew_plus", 600.0, dup=True, shuffle=True),
    }
    for name, r in runs.items():
        types = Counter(e["type"] for e in r["events"])
        print(
            f"{name}: published={r['published']} rows={len(r['rows'])} "
            f"dups={r['counters'].get('duplicates', 0)} rejects={r['rejects']} events={dict(types)}"
        )
        for e in sorted(r["events"], key=lambda e: str(e["ts"])):
            tier = (e.get("response") or {}).get("tier")
            print(f"    {e['type']} {e.get('conditions')} {e.get('transition')} tier={tier}")
    ref, shuf = runs["in_order"], runs["dup_shuffled"]
    minus, plus = runs["skew_minus_10min"], runs["skew_plus_10min"]
    # Stored: the same rows whatever the order, duplicates and a -10 min clock.
    assert len(ref["rows"]) == N
    assert shuf["rows"] == ref["rows"] and minus["rows"] == ref["rows"]
    for r in (shuf, minus):
        assert r["counters"]["duplicates"] == N and r["counters"]["readings"] == N
    # Live, any order: the same per-vital alerts open and clear.
    opened = {n: vital_conditions(r["events"], "opened") for n, r in runs.items()}
    cleared = {n: vital_conditions(r["events"], "cleared") for n, r in runs.items()}
    want = {"heart_rate_high", "spo2_low", "respiratory_rate_high"}
    assert opened["in_order"] == opened["dup_shuffled"] == want, opened
    assert cleared["in_order"] == cleared["dup_shuffled"] == want, cleared
    assert {e["type"] for e in shuf["events"]} <= {e["type"] for e in ref["events"]}
    # In order, the NEWS2 alert (scored over each vital's newest value) opens too.
    assert any("news2" in e.get("conditions", ()) for e in ref["events"] if e["type"] == "soft_sos")
    # -10 min, a burst: late data. The same alerts, all retrospective: no prompt, no text.
    assert opened["skew_minus_10min"] == cleared["skew_minus_10min"] == want
    assert {e["type"] for e in minus["events"]} == {"retrospective_alert"}
    assert all(e["response"]["tier"] == 0 for e in minus["events"])
    # +10 min: past the 300 s bound, every message (duplicates too) rejected before dedupe.
    assert plus["rows"] == [] and plus["events"] == []
    assert plus["rejects"] == {"ts_in_future": 2 * N}
    news2 = {
        n: any("news2" in e.get("conditions", ()) for e in r["events"]) for n, r in runs.items()
    }
    print(f"news2 alert raised: {news2}")
    summary(
        "reorder_skew",
        **{f"{k}_rows": len(v["rows"]) for k, v in runs.items()},
        **{f"{k}_events": len(v["events"]) for k, v in runs.items()},
        duplicates_dropped=shuf["counters"]["duplicates"] + minus["counters"]["duplicates"],
        rejected_future=plus["rejects"].get("ts_in_future", 0),
    )


def vital_conditions(events: list[dict[str, Any]], transition: str) -> set[str]:
    """Per-vital conditions with that transition, whether live (soft_sos, alert_cleared) or
    retrospective (retrospective_alert)."""
    live = {"opened": "soft_sos", "cleared": "alert_cleared"}[transition]
    out: set[str] = set()
    for e in events:
        if e["type"] == live or (
            e["type"] == "retrospective_alert" and e.get("transition") == transition
        ):
            out |= {c for c in e.get("conditions") or [e.get("condition")] if c != "news2"}
    return out
