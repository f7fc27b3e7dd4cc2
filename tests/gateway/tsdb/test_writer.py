"""The writer thread: batching, store-and-forward, degraded/recovered events, the outbox
alarm, restart, and a real HTTP server that is too slow (influxdb-client's own timeouts)."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from gateway.contract.topics import EventType
from gateway.contract.values import Event, Reading
from gateway.tsdb.outbox import Outbox
from gateway.tsdb.sink import InfluxSink, SinkError
from gateway.tsdb.writer import TimeSeriesWriter
from tests.brokers import free_port


class FakeSink:
    """Stands in for the server's reachability only; the real server is tested elsewhere."""

    def __init__(self) -> None:
        self.down = False
        self.lines: list[str] = []
        self.batches: list[int] = []
        self.lock = threading.Lock()

    def write(self, lines: Sequence[str]) -> None:
        if self.down:
            raise SinkError("ConnectionRefusedError")
        with self.lock:
            self.lines.extend(lines)
            self.batches.append(len(lines))

    def close(self) -> None:
        pass


def wait_for(pred: Callable[[], object], within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


def reading(i: int, t0: float = 1_790_000_000.0) -> Reading:
    return Reading("grandma", "watch-maria", t0 + i, seq=i, heart_rate=60.0 + i % 30)


def add(w: TimeSeriesWriter, i: int) -> None:
    w.add_reading(
        reading(i), news2_total=0, news2_level="low", anomaly=None, flagged=False, open_alerts=0
    )


@pytest.fixture
def events() -> list[tuple[EventType, dict[str, Any]]]:
    return []


@pytest.fixture
def make(
    tmp_path: Path, events: list[tuple[EventType, dict[str, Any]]]
) -> Iterator[Callable[..., TimeSeriesWriter]]:
    made: list[TimeSeriesWriter] = []

    def _make(sink: Any, **kw: Any) -> TimeSeriesWriter:
        opts: dict[str, Any] = {
            "flush_s": 0.05,
            "degraded_after_s": 0.3,
            "backoff": (0.05,),
            "on_event": lambda k, d: events.append((k, d)),
        }
        opts |= kw
        ob = opts.pop("outbox", None) or Outbox(tmp_path / "outbox", 1 << 20)
        w = TimeSeriesWriter(sink, ob, **opts)
        w.start()
        made.append(w)
        return w

    yield _make
    for w in made:
        w.stop()


def test_batches_and_flushes(make: Callable[..., TimeSeriesWriter]) -> None:
    sink = FakeSink()
    w = make(sink, batch_size=100)
    for i in range(250):
        add(w, i)
    wait_for(lambda: len(sink.lines) == 250)
    assert max(sink.batches) <= 100
    assert w.outbox.empty()


def test_outage_goes_to_outbox_then_replays_in_order_exactly_once(
    make: Callable[..., TimeSeriesWriter], events: list[tuple[EventType, dict[str, Any]]]
) -> None:
    sink = FakeSink()
    w = make(sink, batch_size=50)
    for i in range(20):
        add(w, i)
    wait_for(lambda: len(sink.lines) == 20)
    sink.down = True
    for i in range(20, 320):
        add(w, i)
        if i % 50 == 0:
            time.sleep(0.02)
    wait_for(lambda: w.outbox.points == 300)
    wait_for(lambda: any(k is EventType.MONITORING_DEGRADED for k, _ in events))
    degraded = next(d for k, d in events if k is EventType.MONITORING_DEGRADED)
    assert degraded["active"] is True and degraded["sink"] == "influxdb"
    sink.down = False
    for i in range(320, 340):  # readings keep arriving during recovery
        add(w, i)
    wait_for(lambda: len(sink.lines) == 340)
    wait_for(lambda: any(k is EventType.MONITORING_RECOVERED for k, _ in events))
    ts = [int(ln.rsplit(" ", 1)[1]) for ln in sink.lines]
    assert ts == sorted(ts) and len(set(ts)) == 340  # in order, no duplicate, none lost
    assert w.outbox.empty() and not w.degraded
    kinds = [k for k, _ in events]
    assert kinds.count(EventType.MONITORING_DEGRADED) == 1
    assert kinds.count(EventType.MONITORING_RECOVERED) == 1


def test_short_blip_is_not_degraded(
    make: Callable[..., TimeSeriesWriter], events: list[tuple[EventType, dict[str, Any]]]
) -> None:
    sink = FakeSink()
    w = make(sink, degraded_after_s=30)
    sink.down = True
    add(w, 1)
    wait_for(lambda: w.outbox.points == 1)
    sink.down = False
    wait_for(lambda: len(sink.lines) == 1)
    assert events == []


def test_outbox_alarm_and_overflow_counted(
    tmp_path: Path,
    make: Callable[..., TimeSeriesWriter],
    events: list[tuple[EventType, dict[str, Any]]],
) -> None:
    sink = FakeSink()
    sink.down = True
    w = make(sink, outbox=Outbox(tmp_path / "small", 4000), alarm_pct=50)
    for i in range(100):  # ~75 bytes a line: more than the bound
        add(w, i)
    wait_for(lambda: w.overflow_points > 0)
    wait_for(lambda: any(k is EventType.OUTBOX_HIGH for k, _ in events))
    alarm = next(d for k, d in events if k is EventType.OUTBOX_HIGH)
    assert alarm["max_bytes"] == 4000 and alarm["fill_pct"] >= 50
    assert w.outbox.size_bytes <= 4000
    assert w.overflow_points + w.outbox.points == 100
    assert w.stats()["outbox_refused"] == w.overflow_points


def test_overflow_window_is_backfilled_after_recovery(
    tmp_path: Path, make: Callable[..., TimeSeriesWriter]
) -> None:
    sink = FakeSink()
    sink.down = True
    w = make(sink, outbox=Outbox(tmp_path / "small", 2000))
    asked: list[tuple[float, float]] = []

    def backfill(since: float, until: float) -> list[str]:
        asked.append((since, until))
        return ["vitals,person=grandma,device=watch-maria heart_rate=1.0 1"]

    w.backfill = backfill
    for i in range(60):
        add(w, i)
    wait_for(lambda: w.overflow_points > 0)
    sink.down = False
    wait_for(lambda: asked and any(ln.endswith(" 1") for ln in sink.lines))
    assert len(asked) == 1 and asked[0][0] <= asked[0][1]


def test_stop_while_down_keeps_everything_for_the_next_start(
    tmp_path: Path, make: Callable[..., TimeSeriesWriter]
) -> None:
    sink = FakeSink()
    sink.down = True
    w = make(sink)
    for i in range(30):
        add(w, i)
    w.add_event(Event(EventType.HARD_SOS, "grandma", 1_790_000_100.0, {}))
    w.stop()
    assert w.outbox.points == 31
    sink2 = FakeSink()
    make(sink2, outbox=Outbox(tmp_path / "outbox", 1 << 20))
    wait_for(lambda: len(sink2.lines) == 31)
    assert sink2.lines[-1].startswith("events,person=grandma,type=hard_sos")


class _SlowHandler(http.server.BaseHTTPRequestHandler):
    delay = 0.0
    bodies: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        time.sleep(type(self).delay)
        type(self).bodies.append(body)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_slow_server_times_out_into_the_outbox(
    make: Callable[..., TimeSeriesWriter], events: list[tuple[EventType, dict[str, Any]]]
) -> None:
    """A real HTTP server through the real influxdb-client: too slow counts as down."""
    import gzip

    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _SlowHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _SlowHandler.delay = 1.0
        _SlowHandler.bodies = []
        sink = InfluxSink(f"http://127.0.0.1:{port}", "org", "health", "tok", timeout_s=0.2)
        w = make(sink)
        for i in range(10):
            add(w, i)
        wait_for(lambda: w.outbox.points == 10 and w.last_error is not None, 10)
        wait_for(lambda: any(k is EventType.MONITORING_DEGRADED for k, _ in events), 10)
        _SlowHandler.delay = 0.0
        wait_for(lambda: w.outbox.empty() and not w.degraded, 15)
        got = set()
        for b in _SlowHandler.bodies:
            got.update(gzip.decompress(b).decode().splitlines())
        assert len([ln for ln in got if ln.startswith("vitals,")]) == 10
    finally:
        server.shutdown()


class _BrokenDisk(Outbox):
    """A disk that fails every write (full, or a worn SD card)."""

    def append(self, lines: Sequence[str]) -> int:
        raise OSError(28, "No space left on device")


def test_failing_disk_never_stops_the_writer_or_the_caller(
    tmp_path: Path, make: Callable[..., TimeSeriesWriter]
) -> None:
    sink = FakeSink()
    sink.down = True
    w = make(sink, outbox=_BrokenDisk(tmp_path / "broken", 1 << 20), queue_size=20)
    for i in range(200):  # more than the queue holds: nothing raises on the caller
        add(w, i)
    wait_for(lambda: w.disk_errors > 0)
    assert w.alive()
    t = time.monotonic()
    w.stop()
    assert time.monotonic() - t < 5
    # Every point is accounted for: refused (kept in the SQLite store), none silently gone.
    assert w.overflow_points == 200


def test_full_queue_is_counted_then_backfilled_without_disk_io_on_the_caller(
    tmp_path: Path, make: Callable[..., TimeSeriesWriter]
) -> None:
    gate = threading.Event()

    class Stuck(FakeSink):
        def write(self, lines: Sequence[str]) -> None:
            gate.wait(10)  # a server that hangs
            super().write(lines)

    sink = Stuck()
    w = make(sink, queue_size=10, batch_size=5)
    asked: list[tuple[float, float]] = []
    w.backfill = lambda lo, hi: asked.append((lo, hi)) or ["x v=1i 1"]  # type: ignore[func-returns-value]
    for i in range(100):
        add(w, i)
    assert w.overflow_points > 0  # counted at once, on the caller
    assert not list((tmp_path / "outbox").glob("seg-*.lp"))  # and nothing written there
    gate.set()
    wait_for(lambda: asked)
    lo, hi = asked[0]
    assert 1_790_000_000.0 <= lo <= hi <= 1_790_000_099.0
    wait_for(lambda: "x v=1i 1" in sink.lines)


def test_permanent_refusal_is_set_aside_and_the_outbox_moves_on(
    tmp_path: Path, make: Callable[..., TimeSeriesWriter]
) -> None:
    class Picky(FakeSink):
        def write(self, lines: Sequence[str]) -> None:
            if any("bad" in ln for ln in lines):
                raise SinkError("ApiException 400", permanent=True)
            super().write(lines)

    sink = Picky()
    w = make(sink)
    w.add_line("bad line 1")
    wait_for(lambda: w.rejected_points == 1)
    add(w, 1)
    wait_for(lambda: len(sink.lines) == 1)
    assert "bad line 1" in next((tmp_path / "outbox").glob("rejected-*.lp")).read_text()
    assert not w.degraded and w.outbox.empty()


def test_two_events_in_one_millisecond_stay_two_points() -> None:
    from gateway.tsdb.lines import event_line

    a = Event(EventType.DEVICE_STALE, "grandma", 1_790_000_000.0, {"device": "a"})
    b = Event(EventType.DEVICE_STALE, "grandma", 1_790_000_000.0, {"device": "b"})
    ts = {event_line(e).rsplit(" ", 1)[1] for e in (a, b)}
    assert len(ts) == 2
    assert event_line(a) == event_line(a)  # stable: a replay keeps its key
