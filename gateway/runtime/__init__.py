"""The running gateway: the Gateway built from its parts (gateway), inbound messages routed
by type (routing), the API's backend (api_backend), the time-series feed (tsdb_feed), the
retained per-person state (person_state), extensions with start/stop (extensions) and
scale-out by person (sharding). Only the composition root (healthgw/) imports it."""

__all__ = ["api_backend", "extensions", "gateway", "sharding"]
