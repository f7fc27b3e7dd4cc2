"""All runtime settings, from HEALTHGW_* environment variables (pydantic-settings)."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlparse

from pydantic import (
    AnyUrl,
    Field,
    SecretStr,
    UrlConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

# No default port here: mqtt:// means 1883 and mqtts:// (TLS) 8883, see mqtt_port.
MqttUrl = Annotated[AnyUrl, UrlConstraints(allowed_schemes=["mqtt", "mqtts"])]
HttpUrl = Annotated[AnyUrl, UrlConstraints(allowed_schemes=["http", "https"])]


class Settings(BaseSettings):
    # hide_input_in_errors: a bad URL may carry user:password@, and errors reach the logs.
    model_config = SettingsConfigDict(
        env_prefix="HEALTHGW_", extra="ignore", hide_input_in_errors=True
    )

    # Broker
    mqtt_url: MqttUrl = AnyUrl("mqtt://127.0.0.1:1883")
    mqtt_username: str | None = None
    mqtt_password: SecretStr | None = None
    # mqtts:// verifies the broker against this CA (e.g. scripts/make-broker-certs.sh's
    # ca.crt); unset = the system's CAs.
    mqtt_ca_file: Path | None = None
    gateway_id: str = Field(default="hub", pattern=r"^[A-Za-z0-9_-]{1,64}$")

    # Files
    data_dir: Path = Path("data")
    household: Path | None = None

    # Plain http:// for twilio_api_base / influx_url is refused except to loopback or to a host
    # listed here (comma separated, e.g. "influxdb" on a private container network; "true" =
    # any host). Must stay above those fields: their validator reads it.
    allow_insecure_http: Annotated[list[str], NoDecode] = Field(default_factory=list)

    # Texts (Twilio, or any Twilio-compatible self-hosted endpoint via twilio_api_base)
    twilio_account_sid: str | None = None
    twilio_auth_token: SecretStr | None = None
    twilio_from: str | None = None
    twilio_api_base: HttpUrl | None = None
    # Where Twilio can reach this hub's API (delivery reports, SMS replies); optional. Also
    # the URL Twilio signs webhooks with, so it must be exactly what the Twilio console has.
    public_url: HttpUrl | None = None
    # Without Twilio, echo each text (body included) to stdout: the demo's terminal only.
    print_texts: bool = False

    # API: one admin token, any number of family tokens (read, SOS ack, all-clear) and of
    # read-only viewer tokens (kiosk, wall screen), comma separated; PHI is redacted for
    # both. Every token: at least 24 random characters (checked at start).
    api_token: SecretStr | None = None
    family_tokens: Annotated[list[SecretStr], NoDecode] = Field(default_factory=list)
    viewer_tokens: Annotated[list[SecretStr], NoDecode] = Field(default_factory=list)
    api_host: str = "127.0.0.1"
    api_port: int = Field(default=8080, ge=0, le=65535)
    # Request bodies over this are refused (413) before anything parses them.
    api_max_body_bytes: int = Field(default=64 * 1024, ge=1024, le=16 * 1024 * 1024)
    # Per token and per client address: "120/minute", "120/minute;2000/hour" or "off". SOS,
    # all-clear (with a valid token), Twilio webhooks and health probes are never limited.
    api_rate_limit: str = Field(default="120/minute", max_length=200)

    # Storage
    retention_days: int = Field(default=365, ge=1)
    # Rejected payloads kept for debugging: total cap, and each device account's daily share
    # (so one account cannot fill the disk).
    deadletter_max_mb: int = Field(default=64, ge=1, le=4096)
    deadletter_source_daily_kb: int = Field(default=1024, ge=1)

    # Monitor
    debounce_readings: int = Field(default=3, ge=1)
    clear_readings: int = Field(default=3, ge=1)
    alert_cooldown_s: float = Field(default=600, ge=0)
    escalation_window_s: float = Field(default=60, gt=0)
    # An urgent (critical-band) value alarms within this many seconds of its first reading,
    # and on the first reading of a device that reports less often (a spot-check cuff).
    critical_confirm_s: float = Field(default=30, ge=0, le=300)
    # "I'm OK" to an urgent alert: ask again after this long while the value stays urgent.
    ok_snooze_s: float = Field(default=15 * 60, gt=0, le=4 * 3600)
    # Readings older than this when they arrive are late data: recorded as retrospective
    # events, never prompted, texted or escalated.
    late_after_s: float = Field(default=600, gt=0)
    fall_window_s: float = Field(default=60, gt=0)
    stale_factor: float = Field(default=3, gt=1)
    default_device_interval_s: float = Field(default=60, gt=0)
    anomaly_refit_s: float = Field(default=6 * 3600, gt=0)
    anomaly_min_history: int = Field(default=200, ge=20)
    # A low-priority alert whose value is usual for the person (their own resting range over
    # the last 28 days) is shown as information once this many days are learnt; 0: never.
    # Medium and high priorities are never softened (gateway/monitor/baseline.py).
    baseline_min_days: int = Field(default=7, ge=0, le=28)

    # Assistant (agents): "auto" uses HEALTHGW_MODEL_PATH or the bundled SmolLM2-135M; "off"
    # keeps the deterministic wording only. Control flow never depends on the model.
    assistant_model: Literal["auto", "off"] = "auto"
    # False: no appointment assistant at all (the intent topic answers that it is off).
    assistant_enabled: bool = True
    # The one reader of HEALTHGW_MODEL_PATH / _SHA256: agents/llm/model_path.py gets them
    # passed in (model_to_load) and never reads the environment.
    model_path: Path | None = None
    # Required with model_path: the file's SHA-256 (`sha256sum`); any other file is refused.
    model_sha256: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{64}$")
    model_timeout_s: float = Field(default=3.0, gt=0)
    model_threads: int | None = Field(default=None, ge=1)
    model_nice: int = Field(default=19, ge=0, le=19)
    assistant_idle_timeout_s: float = Field(default=300, gt=0)
    # "own": the conversations (assistant, policy, triage, memory search) run in their own
    # niced child process, so their CPU never competes with the SOS path for the GIL;
    # "inline": in the gateway's process (also what a gateway built with a non-system
    # clock gets: the child keeps the system clock).
    assistant_process: Literal["inline", "own"] = "own"
    assistant_process_nice: int = Field(default=10, ge=0, le=19)
    triage_cache_dir: Path | None = None  # default: ~/.cache/healthgw

    # SOS: with no acknowledgement within this, the ladder climbs one level (contacts one by
    # one, then everyone, then the ambulance again).
    sos_ack_window_s: float = Field(default=300, gt=0)

    # Medication reminders
    reminder_missed_after_s: float = Field(default=1800, gt=0)
    reminder_snooze_s: float = Field(default=600, gt=0)
    reminder_grace_s: float = Field(default=3600, gt=0)
    # Daily report: local time each evening ("HH:MM"), one per person.
    report_time: str = Field(default="20:00", pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$")

    # Time series (InfluxDB 2 API). Off unless a URL is set; the embedded store always works.
    influx_url: HttpUrl | None = None
    influx_org: str = "healthgw"
    influx_bucket: str = "health"
    influx_token: SecretStr | None = None
    influx_batch_size: int = Field(default=5000, ge=1, le=50_000)
    influx_flush_s: float = Field(default=1.0, gt=0, le=60)
    influx_timeout_s: float = Field(default=10.0, gt=0)
    # Store-and-forward: points wait in a disk outbox while the server is down or slow.
    influx_outbox_max_mb: float = Field(default=512, gt=0)
    influx_outbox_alarm_pct: float = Field(default=80, gt=0, lt=100)
    # `monitoring_degraded` after this long of sink trouble; cleared on recovery.
    influx_degraded_after_s: float = Field(default=30, ge=0)
    influx_health_interval_s: float = Field(default=10, gt=0)

    # Home Assistant MQTT discovery (retained configs under this prefix); "" turns it off.
    ha_discovery_prefix: str = Field(default="homeassistant", pattern=r"^[A-Za-z0-9_/-]{0,64}$")
    # Where `healthgw devices` keeps the broker's password file, ACL and device registry.
    broker_auth_dir: Path = Path("mosquitto/auth")

    # Scale-out (docs/scale-out.md): this instance handles some persons only. "i/N": those
    # whose stable hash picks shard i of N; or an explicit list (a,b). Not both.
    shard: str | None = Field(default=None, max_length=16)
    shard_persons: Annotated[list[str], NoDecode] = Field(default_factory=list)

    # The console's Simulator panel (docs/console.md): simulated watches the admin drives
    # on this broker. Off on a real hub. A broker with accounts needs the simulator's own
    # (made by `healthgw devices init`); the gateway never lends its account to a watch.
    simulator_enabled: bool = False
    sim_mqtt_username: str | None = None
    sim_mqtt_password: SecretStr | None = None

    # Pipeline
    queue_size: int = Field(default=10_000, ge=10)
    # A broker backlog is drained, never shed; vitals are shed (oldest first, announced) only
    # once the monitor's picture is this many seconds behind live input and still falling
    # behind (gateway/mqtt/backlog.py).
    shed_after_s: float = Field(default=30.0, gt=0)
    # ... or once this many readings wait at the broker and the backlog still grows: half
    # the shipped broker's per-session queue (max_queued_messages 100000), which drops the
    # newest when full.
    shed_backlog: int = Field(default=50_000, ge=100)
    # Rows the store holds in memory while the disk is slow or full, before it spills to
    # disk (and, with the disk full too, counts them as lost): the memory it may take.
    store_queue_size: int = Field(default=50_000, ge=10)
    log_level: str = "INFO"

    @field_validator("family_tokens", "viewer_tokens", mode="before")
    @classmethod
    def _split_tokens(cls, v: object) -> object:
        if isinstance(v, str):
            return [t.strip() for t in v.split(",") if t.strip()]
        return v

    @field_validator("api_rate_limit")
    @classmethod
    def _rate_limit(cls, v: str) -> str:
        from gateway.base.rate_spec import check_rate_limit

        check_rate_limit(v)  # ValueError names the accepted forms
        return v

    @field_validator("shard")
    @classmethod
    def _shard(cls, v: str | None) -> str | None:
        # The message never quotes the value (errors reach logs; a secret may be misplaced).
        if v is None:
            return v
        m = re.fullmatch(r"(\d{1,4})/(\d{1,4})", v.strip(), re.ASCII)
        if m is None or not 0 <= int(m[1]) < int(m[2]) <= 1024:
            raise ValueError("HEALTHGW_SHARD must be i/N with 0 <= i < N <= 1024, e.g. 0/2")
        return f"{int(m[1])}/{int(m[2])}"

    @field_validator("shard_persons", mode="before")
    @classmethod
    def _split_persons(cls, v: object) -> object:
        if isinstance(v, str):
            return [p.strip() for p in v.split(",") if p.strip()]
        return v

    @field_validator("shard_persons")
    @classmethod
    def _person_ids(cls, v: list[str]) -> list[str]:
        from gateway.contract.topics import ID_PATTERN

        if any(re.fullmatch(ID_PATTERN, p) is None for p in v):
            raise ValueError("HEALTHGW_SHARD_PERSONS: comma-separated person ids (A-Z a-z 0-9 _ -)")
        if len(set(v)) != len(v):
            raise ValueError("HEALTHGW_SHARD_PERSONS names a person twice")
        return v

    @model_validator(mode="after")
    def _one_shard_rule(self) -> Settings:
        if self.shard is not None and self.shard_persons:
            raise ValueError("HEALTHGW_SHARD and HEALTHGW_SHARD_PERSONS: set one, not both")
        if (self.shard is not None or self.shard_persons) and "gateway_id" not in (
            self.model_fields_set
        ):
            # Two instances with one id share a broker session and a status topic: they would
            # take each other's connection over, again and again.
            raise ValueError(
                "a sharded instance needs its own HEALTHGW_GATEWAY_ID (it names the broker "
                "session, the status topic and Home Assistant's devices)"
            )
        return self

    @field_validator("allow_insecure_http", mode="before")
    @classmethod
    def _split_hosts(cls, v: object) -> object:
        if isinstance(v, str):
            if v.strip().lower() in ("", "0", "false", "no"):
                return []
            if v.strip().lower() in ("1", "true", "yes", "*"):
                return ["*"]
            return [h.strip().lower() for h in v.split(",") if h.strip()]
        return v

    @field_validator("twilio_api_base", "influx_url")
    @classmethod
    def _no_plain_http(cls, v: AnyUrl | None, info: ValidationInfo) -> AnyUrl | None:
        # Texts carry names and addresses, the time series health data, and both send a
        # bearer token: plain http only where nobody else is on the wire.
        if v is None or v.scheme != "http":
            return v
        host = (urlparse(str(v)).hostname or "").lower()
        allowed = {h.lower() for h in info.data.get("allow_insecure_http") or []}
        if _is_loopback(host) or "*" in allowed or host in allowed:
            return v
        var = f"HEALTHGW_{(info.field_name or '').upper()}"
        raise ValueError(
            f"{var}: plain http:// to {host!r} is refused (only loopback may use it); use "
            f"https://, or set HEALTHGW_ALLOW_INSECURE_HTTP={host} for a trusted private network"
        )

    @property
    def mqtt_host(self) -> str:
        return urlparse(str(self.mqtt_url)).hostname or "127.0.0.1"

    @property
    def mqtt_tls(self) -> bool:
        return self.mqtt_url.scheme == "mqtts"

    @property
    def mqtt_port(self) -> int:
        return urlparse(str(self.mqtt_url)).port or (8883 if self.mqtt_tls else 1883)

    @property
    def twilio_enabled(self) -> bool:
        return bool(self.twilio_account_sid and self.twilio_auth_token and self.twilio_from)


def _is_loopback(host: str) -> bool:
    """localhost, 127.0.0.0/8 or ::1 (names other than localhost are not resolved)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
