"""Settings errors reach logs and terminals: they must not echo what was typed (a URL can
carry user:password@, a token can be pasted into the wrong variable)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.base.settings import Settings


@pytest.mark.parametrize(
    "field,value",
    [
        ("influx_url", "http://user:hunter2-secret@bad host/"),
        ("twilio_api_base", "not a url hunter2-secret"),
        ("api_port", "hunter2-secret"),
    ],
)
def test_a_bad_value_is_named_not_echoed(field: str, value: str) -> None:
    with pytest.raises(ValidationError) as e:
        Settings(**{field: value})
    assert field in str(e.value)
    assert "hunter2-secret" not in str(e.value)
