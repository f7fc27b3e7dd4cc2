"""The job store decision (agents/scheduling/jobstore.py): our SQLite job store against
apscheduler's own SQLAlchemyJobStore on an SQLite file, in separate fresh processes.

SQLAlchemy is not a healthgw dependency, so run this from a scratch environment:

    python3 -m venv /tmp/sqlaenv
    /tmp/sqlaenv/bin/pip install apscheduler==3.11.3 sqlalchemy
    PYTHONPATH=. /tmp/sqlaenv/bin/python bench/jobstore.py

Each row is one process: import time, scheduler start + 200 daily jobs, RSS growth.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

JOBS = 200


def _rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _one(which: str) -> dict[str, float]:
    r0 = _rss_mb()
    t0 = time.perf_counter()
    from apscheduler.schedulers.background import BackgroundScheduler

    d = Path(tempfile.mkdtemp())
    store: object
    if which == "sqlalchemy":
        from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore

        store = SQLAlchemyJobStore(url=f"sqlite:///{d}/jobs.db")
    else:
        from agents.scheduling.jobstore import SQLiteJobStore
        from gateway.base.db import Database

        store = SQLiteJobStore(Database(d / "jobs.db"))
    t1 = time.perf_counter()
    sched = BackgroundScheduler(jobstores={"default": store})
    sched.start()
    for i in range(JOBS):
        sched.add_job(print, "interval", hours=24, id=f"j{i}", args=[i])
    sched.shutdown()
    t2 = time.perf_counter()
    return {
        "import_ms": 1000 * (t1 - t0),
        "add_jobs_ms": 1000 * (t2 - t1),
        "rss_growth_mb": _rss_mb() - r0,
    }


def main() -> None:
    if len(sys.argv) > 1:
        print(json.dumps(_one(sys.argv[1])))
        return
    for which in ("own", "sqlalchemy", "own", "sqlalchemy", "own", "sqlalchemy"):
        out = subprocess.run(
            [sys.executable, __file__, which], capture_output=True, text=True, check=False
        )
        if out.returncode != 0:
            print(f"{which}: failed ({out.stderr.strip().splitlines()[-1:]})")
            continue
        r = json.loads(out.stdout)
        print(
            f"{which:>10}: import {r['import_ms']:.0f} ms, start + {JOBS} jobs "
            f"{r['add_jobs_ms']:.0f} ms, RSS +{r['rss_growth_mb']:.1f} MB"
        )


if __name__ == "__main__":
    main()
