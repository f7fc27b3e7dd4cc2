"""Prometheus exposition of what the gateway already counts, read at scrape time (nothing
on the hot path but two counter increments per reading). No person-level labels: no PHI."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry

DEFAULT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)


class LatencyHistogram:
    """A fixed-bucket histogram cheap enough for every reading (one bisect, two adds)."""

    def __init__(self, buckets: Sequence[float] = DEFAULT_BUCKETS) -> None:
        self.buckets = tuple(buckets)
        self._counts = [0] * (len(self.buckets) + 1)
        self._sum = 0.0
        self._lock = threading.Lock()

    def observe(self, seconds: float) -> None:
        i = bisect.bisect_left(self.buckets, seconds)
        with self._lock:
            self._counts[i] += 1
            self._sum += seconds

    def snapshot(self) -> tuple[list[tuple[str, float]], float]:
        with self._lock:
            counts, total = list(self._counts), self._sum
        out, running = [], 0
        for b, c in zip(self.buckets, counts, strict=False):
            running += c
            out.append((repr(b), float(running)))
        out.append(("+Inf", float(running + counts[-1])))
        return out, total


# What the gateway's counters mean (the rest are exported as healthgw_counter_total{name}).
_MESSAGE_KINDS = ("readings", "sos_start", "sos_end", "acks", "intents", "dose_answers",
                  "duplicates", "rejected")  # fmt: skip


class GatewayCollector(Collector):
    def __init__(
        self,
        stats: Callable[[], Mapping[str, Any]],
        histograms: Mapping[str, tuple[str, LatencyHistogram]],
        tools: Callable[[], Mapping[str, Mapping[str, float]]] | None = None,
    ) -> None:
        self._stats = stats
        self._hist = histograms
        self._tools = tools

    def collect(self) -> Iterator[Metric]:
        s = self._stats()
        counters: Mapping[str, int] = s.get("counters", {})
        m = CounterMetricFamily(
            "healthgw_messages", "MQTT messages handled, by kind", labels=["kind"]
        )
        for k in _MESSAGE_KINDS:
            m.add_metric([k], float(counters.get(k, 0)))
        yield m
        m = CounterMetricFamily(
            "healthgw_rejected", "Messages rejected at the edge, by reason", labels=["reason"]
        )
        for reason, n in sorted(s.get("rejects_by_reason", {}).items()):
            m.add_metric([reason], float(n))
        yield m
        monitor: Mapping[str, int] = s.get("monitor") or {}
        m = CounterMetricFamily(
            "healthgw_impossible_values",
            "Values beyond any human value, discarded (never asked about), by vital",
            labels=["vital"],
        )
        for k, n in sorted(monitor.items()):
            if k.startswith("impossible_"):
                m.add_metric([k[len("impossible_") :]], float(n))
        yield m
        m = CounterMetricFamily(
            "healthgw_late_readings", "Readings that arrived as late data (retrospective)"
        )
        m.add_metric([], float(monitor.get("late_readings", 0)))
        yield m
        m = CounterMetricFamily(
            "healthgw_events", "Events raised (alerts, SOS, ...), by type", labels=["type"]
        )
        for k, n in sorted(counters.items()):
            if k.startswith("event_"):
                m.add_metric([k[6:]], float(n))
        yield m
        g = GaugeMetricFamily(
            "healthgw_queue_depth", "Items waiting in internal queues", labels=["queue"]
        )
        for q, n in sorted(s.get("queues", {}).items()):
            g.add_metric([q], float(n))
        store = s.get("store", {})
        for k in ("spilled_pending", "queue", "spill_files"):
            if k in store:
                g.add_metric([f"store_{k}"], float(store[k]))
        yield g
        yield from _link_and_components(s)
        yield from _persons_and_shard(s)
        texts = s.get("texts", {})
        m = CounterMetricFamily(
            "healthgw_sms",
            "Texts by outcome (sent, failed, retried; pending is a gauge below)",
            labels=["state"],
        )
        for k in ("sent", "failed", "retried"):
            m.add_metric([k], float(texts.get(k, 0)))
        yield m
        g = GaugeMetricFamily("healthgw_sms_pending", "Texts queued or being sent")
        g.add_metric([], float(texts.get("pending", 0)))
        yield g
        tsdb = s.get("tsdb")
        if tsdb:
            g = GaugeMetricFamily(
                "healthgw_tsdb_outbox", "Time-series points waiting in the disk outbox"
            )
            g.add_metric([], float(tsdb.get("outbox_points", 0)))
            yield g
            g = GaugeMetricFamily("healthgw_tsdb_outbox_bytes", "Disk outbox size in bytes")
            g.add_metric([], float(tsdb.get("outbox_bytes", 0)))
            yield g
            g = GaugeMetricFamily("healthgw_tsdb_outbox_max_bytes", "Disk outbox bound in bytes")
            g.add_metric([], float(tsdb.get("outbox_max_bytes", 0)))
            yield g
            m = CounterMetricFamily(
                "healthgw_tsdb_points",
                "Time-series points by outcome (written incl. replayed; refused: outbox full or"
                " disk failing; rejected: refused by the server for good)",
                labels=["outcome"],
            )
            m.add_metric(["written"], float(tsdb.get("written", 0)))
            m.add_metric(["refused"], float(tsdb.get("outbox_refused", 0)))
            m.add_metric(["replayed"], float(tsdb.get("replayed", 0)))
            m.add_metric(["rejected"], float(tsdb.get("rejected_by_server", 0)))
            yield m
            g = GaugeMetricFamily(
                "healthgw_tsdb_degraded", "1 while time-series writes are failing"
            )
            g.add_metric([], 1.0 if tsdb.get("degraded") else 0.0)
            yield g
        if self._tools is not None:
            calls = CounterMetricFamily("healthgw_tool_calls", "Tool calls", labels=["tool"])
            errors = CounterMetricFamily(
                "healthgw_tool_errors", "Tool calls that failed", labels=["tool"]
            )
            lat = CounterMetricFamily(
                "healthgw_tool_latency_seconds_sum", "Total tool call time", labels=["tool"]
            )
            for tool, t in sorted(self._tools().items()):
                calls.add_metric([tool], float(t.get("calls", 0)))
                errors.add_metric([tool], float(t.get("errors", 0)))
                lat.add_metric([tool], float(t.get("latency_ms_sum", 0)) / 1000)
            yield calls
            yield errors
            yield lat
        for name, (doc, h) in self._hist.items():
            buckets, total = h.snapshot()
            hm = HistogramMetricFamily(name, doc)
            hm.add_metric([], buckets, total)
            yield hm


def _link_and_components(s: Mapping[str, Any]) -> Iterator[Metric]:
    """The broker link's inbound bound and shedding, and the supervised parts' health."""
    mqtt: Mapping[str, Any] = s.get("mqtt") or {}
    m = CounterMetricFamily(
        "healthgw_mqtt_shed",
        "Messages shed from the inbound queue (vitals, status, intents; never SOS/acks), by reason",
        labels=["reason"],
    )  # fmt: skip
    for reason, n in sorted({"behind": 0, "queue_full": 0, **mqtt.get("shed", {})}.items()):
        m.add_metric([reason], float(n))
    yield m
    yield GaugeMetricFamily(
        "healthgw_mqtt_lag_seconds",
        "How far the vitals session is behind live input (the backlog probe's wait)",
        value=float(mqtt.get("lag_s", 0.0)),
    )
    dropped = mqtt.get("dropped_outbound") or {}
    m = CounterMetricFamily(
        "healthgw_mqtt_dropped_outbound",
        "Outbound MQTT copies dropped (best-effort notices, or events after a full wait)",
        labels=["reason"],
    )
    for reason, n in sorted({"best_effort": 0, "full": 0, **dict(dropped)}.items()):
        m.add_metric([reason], float(n))
    yield m
    for key, doc in (
        ("coalesced_sos", "Identical SOS presses from one device queued once"),
        ("stalls", "Times the inbound dispatcher stopped making progress"),
    ):
        count = CounterMetricFamily(f"healthgw_mqtt_{key}", doc)
        count.add_metric([], float(mqtt.get(key, 0)))
        yield count
    for key, doc in (
        ("inbound_depth", "Messages waiting in the inbound MQTT queue"),
        ("inbound_bound", "Inbound MQTT queue bound (HEALTHGW_QUEUE_SIZE)"),
    ):
        g = GaugeMetricFamily(f"healthgw_mqtt_{key}", doc)
        g.add_metric([], float(mqtt.get(key, 0)))
        yield g
    g = GaugeMetricFamily("healthgw_mqtt_connected", "1 while the broker link is up")
    g.add_metric([], 1.0 if mqtt.get("connected") else 0.0)
    yield g
    m = CounterMetricFamily(
        "healthgw_mqtt_link_failures", "Broker connections lost, by cause", labels=["cause"]
    )
    causes = {"connect": 0, "disconnected": 0, "send": 0, "error": 0, **mqtt.get("failures", {})}
    for cause, n in sorted(causes.items()):
        m.add_metric([cause], float(n))
    yield m
    comps: Mapping[str, Mapping[str, Any]] = s.get("components") or {}
    up = GaugeMetricFamily(
        "healthgw_component_up", "1 while a supervised part runs", labels=["component", "critical"]
    )
    failed = CounterMetricFamily(
        "healthgw_component_failures", "Crashes of supervised parts", labels=["component"]
    )
    restarted = CounterMetricFamily(
        "healthgw_component_restarts", "Restarts of supervised parts", labels=["component"]
    )
    for name, c in sorted(comps.items()):
        up.add_metric([name, "true" if c.get("critical") else "false"], 1.0 if c.get("up") else 0.0)
        failed.add_metric([name], float(c.get("failures", 0)))
        restarted.add_metric([name], float(c.get("restarts", 0)))
    yield up
    yield failed
    yield restarted


def _persons_and_shard(s: Mapping[str, Any]) -> Iterator[Metric]:
    """How many persons this instance monitors (its shard's only: docs/scale-out.md), and
    messages for another instance's persons that arrived anyway (dropped, not processed)."""
    g = GaugeMetricFamily("healthgw_persons", "Persons this gateway instance monitors")
    g.add_metric([], float(s.get("persons", 0)))
    yield g
    shard: Mapping[str, Any] = s.get("shard") or {}
    info = GaugeMetricFamily(
        "healthgw_shard_info", "This instance's shard (all: not sharded)", labels=["shard"]
    )
    info.add_metric([str(shard.get("shard", "all"))], 1.0)
    yield info
    m = CounterMetricFamily(
        "healthgw_shard_foreign_messages",
        "Messages for another instance's persons that arrived anyway: dropped, not processed",
    )
    m.add_metric([], float(shard.get("foreign_dropped", 0)))
    yield m


def registry_for(collector: GatewayCollector) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(collector)
    return reg
