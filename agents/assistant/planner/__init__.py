"""The appointment planner: its control flow (policy), the plan of each step and the one tool
allowed there (steps), how messages become a specialist (triage), and what it reads and
returns (types)."""

__all__ = ["policy", "types"]
