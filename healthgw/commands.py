"""Composition-root commands that assemble agents' parts outside the running gateway:
`healthgw report` and `healthgw eval` (split from healthgw/assembly/hub.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from gateway.base.errors import ConfigError
from gateway.base.settings import Settings
from gateway.household.model import load_household


def run_report(args: Any) -> int:
    """`healthgw report PERSON --date D`: make one daily report from the stored data."""
    import asyncio as aio
    import json
    from datetime import date

    from agents.reports.daily import DailyReports
    from gateway.base.clock import SystemClock
    from gateway.base.db import Database
    from gateway.store import Store
    from healthgw.schema import migrate_data_dir

    settings = Settings()
    household_path = args.household or settings.household
    if household_path is None:
        raise ConfigError("no household file: set HEALTHGW_HOUSEHOLD or pass --household")
    household = load_household(household_path)
    data = Path(args.data_dir or settings.data_dir)
    migrate_data_dir(data)  # a file from a newer release is refused, never read half-known
    db = Database(data / "healthgw.db")
    store = Store(db, spill_dir=data / "spill", retention_days=settings.retention_days)
    reports = DailyReports(store, household, data, SystemClock(), doses=db)
    day = date.fromisoformat(args.date) if args.date else reports.today()
    if household.person(args.person) is None:
        print(f"healthgw report: unknown person {args.person!r}", file=sys.stderr)
        return 2
    report = aio.run(reports.make(args.person, day))
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"{args.person} {day}: {report['readings']} readings -> {report['files']['html']}")
    return 0


def run_eval(args: Any) -> int:
    """`healthgw eval ...` (the agents' evaluation lives in agents/eval). With `--model auto`
    the model comes from Settings (HEALTHGW_MODEL_PATH / _SHA256, else the bundled one)."""
    from agents.eval.cli import run

    if getattr(args, "model", "off") == "auto":
        s = Settings()
        args.model_path, args.model_sha256 = s.model_path, s.model_sha256
    return run(args)
