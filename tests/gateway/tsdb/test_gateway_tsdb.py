"""The gateway's side of the time series: what it writes for readings, events, ranges, doses
and its own health (a local HTTP endpoint stands in for the server and records each body),
and the backfill it rebuilds from the SQLite store."""

from __future__ import annotations

import asyncio
import gzip
import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from gateway.contract.topics import sos_topic, vitals_topic
from gateway.tsdb import schema
from tests.brokers import Broker, free_port
from tests.harness import device, make_settings, publish, running


class _Recorder(http.server.BaseHTTPRequestHandler):
    lines: ClassVar[list[str]] = []
    paths: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        type(self).paths.append(self.path)
        type(self).lines.extend(body.decode().splitlines())
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[str]:
    _Recorder.lines = []
    _Recorder.paths = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def _split(text: str, sep: str) -> list[str]:
    """Split on `sep` outside double quotes and not escaped (line protocol's rules)."""
    out, cur, quoted, i = [], "", False, 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur += text[i : i + 2]
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        if ch == sep and not quoted:
            out.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    out.append(cur)
    return out


def _parse(line: str) -> tuple[str, dict[str, str], dict[str, str]]:
    head, fields, _ = _split(line, " ")
    meas, *tags = _split(head, ",")
    return (
        meas,
        dict(t.split("=", 1) for t in tags),
        dict(f.split("=", 1) for f in _split(fields, ",")),
    )


async def test_gateway_writes_schema_points(tmp_path: Path, broker: Broker, recorder: str) -> None:
    s = make_settings(
        tmp_path / "data",
        broker,
        None,
        influx_url=recorder,
        influx_token="tok",
        influx_health_interval_s=0.2,
    )
    async with running(s) as asm, device(broker) as dev:
        gw = asm.gateway
        now = time.time()
        for i in range(5):
            await publish(
                dev,
                vitals_topic("dad", "watch-jon"),
                {"ts": now + i * 0.1, "seq": i, "heart_rate": 70 + i, "spo2": 97},
            )
        await publish(dev, sos_topic("grandma", "watch-maria"), {"action": "start", "ts": now})
        for _ in range(100):
            kinds = {_parse(ln)[0] for ln in _Recorder.lines}
            vitals = [ln for ln in _Recorder.lines if ln.startswith("vitals,")]
            if {"vitals", "events", "ranges", "gateway"} <= kinds and len(vitals) >= 5:
                break
            await asyncio.sleep(0.1)
        backfill = gw.feed.backfill(now - 1, now + 1)
    assert all("bucket=health" in p and "org=healthgw" in p for p in _Recorder.paths)
    for ln in _Recorder.lines:
        meas, tags, fields = _parse(ln)
        m = schema.MEASUREMENTS[meas]
        assert set(tags) <= set(m.tags), ln
        assert set(fields) <= set(m.fields), ln
    vitals = [_parse(ln) for ln in _Recorder.lines if ln.startswith("vitals,")]
    assert [v[2]["heart_rate"] for v in vitals] == ["70.0", "71.0", "72.0", "73.0", "74.0"]
    assert all(v[1] == {"person": "dad", "device": "watch-jon"} for v in vitals)
    events = [_parse(ln) for ln in _Recorder.lines if ln.startswith("events,")]
    assert any(e[1]["type"] == "hard_sos" and e[1]["category"] == "sos" for e in events)
    ranges = {
        (r[1]["person"], r[1]["vital"]) for r in map(_parse, _Recorder.lines) if r[0] == "ranges"
    }
    assert ("grandma", "spo2") in ranges and ("dad", "heart_rate") in ranges
    # The store's copy rebuilds the same vitals lines (the outbox-full backfill).
    sent = sorted(ln for ln in _Recorder.lines if ln.startswith("vitals,"))
    rebuilt = sorted(ln for ln in backfill if ln.startswith("vitals,person=dad"))
    strip = lambda ln: ln.replace(",open_alerts=0i", "")  # noqa: E731 - not kept in the store
    assert [strip(x) for x in rebuilt] == [strip(x) for x in sent]
