"""Home Assistant: MQTT discovery configs built pure (messages) and published, retained and
kept current (discovery)."""

__all__ = ["discovery"]
