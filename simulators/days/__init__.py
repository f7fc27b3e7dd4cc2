"""Ordinary days and deteriorations hidden in them, as replay traces: the persona library's
specs (`spec`, from eval/days/) and the seeded generator of a persona's days (`day`). What
they are for: measuring the alarm burden on ordinary days and the time to alarm on real
deteriorations with `healthgw replay` (healthgw/replay/days.py scores them)."""
