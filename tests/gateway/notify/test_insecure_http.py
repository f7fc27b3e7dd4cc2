"""HEALTHGW_TWILIO_API_BASE and HEALTHGW_INFLUX_URL refuse plain http:// to anything but
loopback, unless the host is explicitly allowed (HEALTHGW_ALLOW_INSECURE_HTTP)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.base.settings import Settings

FIELDS = ("twilio_api_base", "influx_url")


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize(
    "url",
    [
        "https://sms.example.org",
        "https://influx.example.org:8086/",
        "http://127.0.0.1:8086",
        "http://127.8.9.10:1234",
        "http://localhost:8086",
        "http://LOCALHOST:8086",
        "http://[::1]:8086",
    ],
)
def test_accepted(field: str, url: str) -> None:
    assert str(getattr(Settings(**{field: url}), field)).startswith(url.split(":")[0])


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize(
    "url",
    [
        "http://influxdb:8086",
        "http://192.168.1.20:8086",
        "http://10.0.0.5",
        "http://sms.example.org",
        "http://localhost.example.org",
        "http://127.0.0.1.nip.io",
        "http://[::2]:80",
        "http://0.0.0.0:8086",
    ],
)
def test_refused(field: str, url: str) -> None:
    with pytest.raises(ValidationError) as e:
        Settings(**{field: url})
    msg = str(e.value)
    assert f"HEALTHGW_{field.upper()}" in msg and "HEALTHGW_ALLOW_INSECURE_HTTP" in msg


def test_the_error_has_no_secrets() -> None:
    with pytest.raises(ValidationError) as e:
        Settings(
            twilio_auth_token="very-secret-token",
            influx_token="influx-secret",
            api_token="api-secret-value-long-enough-123",
            twilio_api_base="http://sms.lan:8080",
        )
    for secret in ("very-secret-token", "influx-secret", "api-secret-value"):
        assert secret not in str(e.value)


@pytest.mark.parametrize(
    ("allow", "url", "ok"),
    [
        ("influxdb", "http://influxdb:8086", True),
        ("InfluxDB, sms.lan", "http://sms.lan:8080", True),
        ("influxdb", "http://influxdb.evil.example:8086", False),
        ("influxdb", "http://sms.lan:8080", False),
        ("true", "http://anything.example:1", True),
        ("*", "http://anything.example:1", True),
        ("false", "http://influxdb:8086", False),
        ("", "http://influxdb:8086", False),
    ],
)
@pytest.mark.parametrize("field", FIELDS)
def test_explicit_allowance_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, field: str, allow: str, url: str, ok: bool
) -> None:
    monkeypatch.setenv("HEALTHGW_ALLOW_INSECURE_HTTP", allow)
    monkeypatch.setenv(f"HEALTHGW_{field.upper()}", url)
    if ok:
        assert str(getattr(Settings(), field)).startswith(url)
    else:
        with pytest.raises(ValidationError):
            Settings()


def test_https_needs_no_allowance() -> None:
    s = Settings(influx_url="https://influxdb:8086", twilio_api_base="https://sms.lan")
    assert s.allow_insecure_http == []
