"""The edge: raw MQTT (topic, bytes) validated once into typed values (validate), and what
fails validation kept as dead letters for debugging (deadletter)."""

__all__ = ["deadletter", "validate"]
