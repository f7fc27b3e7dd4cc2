"""Where the time-series writer sends its batches: InfluxDB's v2 write API (or anything
that speaks it, such as VictoriaMetrics), gzip-compressed; errors say whether a retry can help."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from gateway.base.errors import HealthGWError

log = logging.getLogger("gateway.tsdb.writer")


class SinkError(HealthGWError):
    """The time-series server did not take a batch (down, slow, or refused).

    `permanent`: the server refused the lines themselves (400 bad line protocol, 413 too
    large, 422 e.g. a field type conflict); sending them again can never work."""

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


_PERMANENT_STATUS = frozenset({400, 413, 422})


class Sink(Protocol):
    def write(self, lines: Sequence[str]) -> None: ...

    def close(self) -> None: ...


class InfluxSink:
    """influxdb-client's synchronous write API, gzip, no client-side retries (ours are)."""

    def __init__(self, url: str, org: str, bucket: str, token: str, timeout_s: float) -> None:
        from influxdb_client.client.influxdb_client import InfluxDBClient
        from influxdb_client.client.write_api import SYNCHRONOUS
        from influxdb_client.domain.write_precision import WritePrecision

        self._client = InfluxDBClient(
            url=url,
            token=token,
            org=org,
            enable_gzip=True,
            timeout=int(timeout_s * 1000),
            retries=False,
        )
        self._api = self._client.write_api(write_options=SYNCHRONOUS)
        self._org, self._bucket = org, bucket
        self._precision: Any = WritePrecision.NS  # a str constant; the stub says an enum

    def write(self, lines: Sequence[str]) -> None:
        try:
            self._api.write(
                bucket=self._bucket,
                org=self._org,
                record="\n".join(lines),
                write_precision=self._precision,
            )
        except Exception as exc:  # urllib3 / ApiException / timeouts: all mean "not taken"
            status = getattr(exc, "status", None)
            raise SinkError(
                f"{type(exc).__name__}{f' {status}' if status else ''}",
                permanent=status in _PERMANENT_STATUS,
            ) from None

    def close(self) -> None:
        self._client.close()  # type: ignore[no-untyped-call]
