"""Loading reference trajectories for teacher-forced evaluation: a JSON list, one object, or
JSON lines; every malformed item is named."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agents.assistant.trajectory import TrajectoryError, validate_trajectory
from gateway.base.errors import HealthGWError

MAX_PROBLEMS = 10


class TrajectoryFileError(HealthGWError, ValueError):
    """Trajectories are malformed. `problems` lists every one ("item 3: ..."); the message
    shows the first ten."""

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        shown = "\n  ".join(self.problems[:MAX_PROBLEMS])
        more = len(self.problems) - MAX_PROBLEMS
        tail = f"\n  ... and {more} more" if more > 0 else ""
        super().__init__(f"{source}: {len(self.problems)} problem(s):\n  {shown}{tail}")


# --- loading ----------------------------------------------------------------------------------


def check_item(item: Any) -> str | None:
    """Why `item` is not a complete trajectory, or None."""
    if not isinstance(item, Mapping):
        return f"must be an object, not {type(item).__name__}"
    try:
        validate_trajectory(item)
    except TrajectoryError as exc:
        return str(exc)
    cat = item.get("category")
    if cat is not None and not isinstance(cat, str):
        return "category must be a string"
    return None


def load_trajectories(path: Path) -> list[dict[str, Any]]:
    """Complete trajectories from a JSON list, a single JSON object, or JSON lines.

    Raises TrajectoryFileError (a ValueError) naming each malformed item by its 0-based index
    (and its line for JSON lines); OSError if the file cannot be read.
    """
    text = Path(path).read_text(encoding="utf-8")
    if not text.strip():
        raise TrajectoryFileError(str(path), ["the file contains no trajectories"])
    items: list[tuple[str, Any]] = []
    problems: list[str] = []
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        # JSON lines: one trajectory per non-blank line.
        index = 0
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            where = f"item {index} (line {n})"
            index += 1
            try:
                items.append((where, json.loads(line)))
            except json.JSONDecodeError as exc:
                problems.append(f"{where}: invalid JSON: {exc.msg} at column {exc.colno}")
    else:
        if isinstance(whole, list):
            items = [(f"item {i}", d) for i, d in enumerate(whole)]
        elif isinstance(whole, dict):
            items = [("item 0", whole)]
        else:
            problems.append(f"top level must be a list or an object, not {type(whole).__name__}")
    out: list[dict[str, Any]] = []
    for where, item in items:
        why = check_item(item)
        if why is None:
            out.append(item)
        else:
            problems.append(f"{where}: {why}")
    if problems:
        raise TrajectoryFileError(str(path), problems)
    if not out:
        raise TrajectoryFileError(str(path), ["the file contains no trajectories"])
    return out
