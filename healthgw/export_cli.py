"""`healthgw export fhir PERSON --since --until [--out FILE]`: one person's record as a FHIR
R4B Bundle (docs/fhir.md), from the data folder, offline. Exit 2 with one line on bad input
(an unknown person, a date that does not parse, a period that ends before it starts or holds
nothing); every export is audited in healthgw.db."""

from __future__ import annotations

import argparse
import getpass
import sys
import time
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("export", help="export a person's record (FHIR R4B Bundle)")
    ex = p.add_subparsers(dest="export_command", required=True)
    f = ex.add_parser("fhir", help="vitals, NEWS2 and texts over a period as a FHIR Bundle")
    f.add_argument("person")
    f.add_argument("--since", required=True, help="ISO 8601 date or date-time (local if naive)")
    f.add_argument("--until", required=True, help="ISO 8601; a date includes that whole day")
    f.add_argument(
        "--out",
        type=Path,
        default=None,
        help="file (default: <data>/exports/, pruned by retention)",
    )
    f.add_argument("--downsample", choices=("none", "minute", "hour"), default="none")
    f.add_argument("--no-name", action="store_true", help="leave the name out: the person id only")
    f.add_argument("--data-dir", type=Path, default=None, help="default $HEALTHGW_DATA_DIR")
    f.add_argument("--household", type=Path, default=None, help="default $HEALTHGW_HOUSEHOLD")
    f.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gateway.base.db import Database
    from gateway.base.errors import ConfigError
    from gateway.base.settings import Settings
    from gateway.export import (
        ExportError,
        ExportSource,
        default_path,
        make_request,
        prune_exports,
        stream,
        write_stream,
    )
    from gateway.export.source import insert_audit
    from gateway.household.model import load_household

    def fail(message: str) -> int:
        print(f"healthgw export: {message}", file=sys.stderr)
        return 2

    actor = f"cli:{getpass.getuser()}"
    try:
        settings = Settings()
        household_path = args.household or settings.household
        if household_path is None:
            return fail("no household file: set HEALTHGW_HOUSEHOLD or pass --household")
        household = load_household(household_path)
        data = Path(args.data_dir or settings.data_dir)
        if not (data / "healthgw.db").is_file():
            return fail(f"no healthgw.db in {data}")
        db = Database(data / "healthgw.db")
        safety = data / "safety.db"
        source = ExportSource(
            household, db, Database(safety) if safety.is_file() else None, audit=lambda r: None
        )
        req = make_request(
            source,
            args.person,
            args.since,
            args.until,
            downsample=args.downsample,
            include_name=not args.no_name,
        )
    except ExportError as exc:  # refused: audited too (who asked for what)
        args_ = {"person": args.person, "since": args.since[:40], "until": args.until[:40]}
        insert_audit(db, {"actor": actor, "tool": "fhir_export", "args": args_, "ok": False,
                          "error": f"{exc.status}: {exc}"})  # fmt: skip
        return fail(str(exc))
    except ConfigError as exc:
        return fail(str(exc).splitlines()[0])
    now = time.time()
    out = args.out or default_path(data, req.person.id, req.since, req.until)
    if args.out is None:
        prune_exports(data, settings.retention_days, now)
    insert_audit(db, req.audit_record(actor, out=str(out)))
    try:
        size = write_stream(out, stream(source, req, now=now), mtime=min(req.until, now))
    except OSError as exc:
        return fail(f"cannot write {out}: {exc.strerror or exc}")
    print(f"{req.person.id}: {size} bytes -> {out}")
    return 0
