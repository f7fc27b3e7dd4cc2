"""Offline evaluation of the planner/caller: scenario sets, generation, teacher-forced
scoring and metrics (`healthgw eval`)."""
