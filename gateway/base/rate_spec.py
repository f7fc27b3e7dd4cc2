"""The rate-limit setting's syntax, checked without importing the limiter (settings load
in every CLI command)."""

from __future__ import annotations

import re

DEFAULT_RATE_LIMIT = "120/minute"
RATE_LIMIT_OFF = "off"
_ONE = re.compile(
    r"^\s*[1-9]\d{0,8}\s*(?:/|per)\s*(?:[1-9]\d{0,5}\s*)?(?:second|minute|hour|day)s?\s*$",
    re.IGNORECASE,
)


def check_rate_limit(spec: str) -> list[str]:
    """The limits in `spec` ("120/minute", "120/minute;2000/hour"), [] for "off"."""
    if spec.strip().lower() == RATE_LIMIT_OFF:
        return []
    parts = re.split(r"[;,|]", spec)
    if not parts or not all(_ONE.match(p) for p in parts):
        raise ValueError(
            'rate limit must look like "120/minute" or "120/minute;2000/hour", or be "off"'
        )
    return [p.strip() for p in parts]
