"""The base every subsystem stands on; it imports nothing above it.

- errors: the one root exception; clock: injectable time;
- settings: every HEALTHGW_* setting (pydantic-settings); rate_spec: the rate-limit syntax;
- db, migrations: the embedded SQLite files and their versioned schema;
- files: the one durable write; retention: what is pruned, when;
- bus: the typed event bus; ports: the narrow interfaces parts talk through;
- supervise, loop_health, backoff: supervision of background work, and its one backoff;
- metrics: the Prometheus exposition.
"""

__all__ = [
    "bus", "clock", "db", "errors", "files", "loop_health", "metrics", "migrations", "ports",
    "rate_spec", "retention", "settings", "supervise",
]  # fmt: skip
