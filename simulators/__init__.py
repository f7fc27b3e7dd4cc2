"""Simulated devices for the demo, the tests and the replay library: watches and a fleet that
speak only the wire contract, and generated ordinary days (simulators/days)."""
