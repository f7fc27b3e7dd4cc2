"""`healthgw eval trajectories|scenarios|generate` (arguments are defined in healthgw/cli.py)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from agents.assistant.planner.policy import Policy
from agents.eval.generate import generate
from agents.eval.predictor import AgentPredictor
from agents.eval.scenarios import ScenarioError, format_report, load_scenarios, run_scenarios
from agents.eval.teacher_forced import evaluate, format_table, load_trajectories
from agents.triage.lazy import LazyTriage


def _triage(args: argparse.Namespace) -> LazyTriage:
    cache = args.cache_dir or Path.home() / ".cache" / "healthgw"
    t = LazyTriage(cache)
    t.load_now()
    return t


async def _with_model(args: argparse.Namespace, fn: Any) -> Any:
    model = None
    if args.model == "auto":
        from agents.llm.engine import LocalModel
        from agents.llm.model_path import model_to_load

        # Settings' values (HEALTHGW_MODEL_PATH / _SHA256), put in args by healthgw/commands.py.
        chosen = model_to_load(
            getattr(args, "model_path", None), getattr(args, "model_sha256", None)
        )
        if chosen is not None:
            model = LocalModel(chosen.path, sha256=chosen.sha256)
            await model.start()
            from agents.assistant.model_roles import Roles

            await Roles(model).warm_up()
    try:
        return await fn(model)
    finally:
        if model is not None:
            await model.stop()


def run(args: argparse.Namespace) -> int:
    cmd = args.eval_command
    try:
        if cmd == "generate":
            data = generate(args.n, seed=args.seed)
            text = json.dumps(data, indent=None if args.json else 1)
            if args.out:
                Path(args.out).write_text(text + "\n", encoding="utf-8")
                print(f"wrote {len(data)} trajectories to {args.out}", file=sys.stderr)
            else:
                print(text)
            return 0
        if cmd == "trajectories":
            trajs = load_trajectories(args.file)
            report = evaluate(trajs, AgentPredictor(Policy(_triage(args))))
            print(json.dumps(report.to_dict(), indent=1) if args.json else format_table(report))
            return 0
        if cmd == "scenarios":
            scenarios = load_scenarios(args.file)
            triage = _triage(args)
            rep = asyncio.run(
                _with_model(args, lambda m: run_scenarios(scenarios, triage, model=m))
            )
            print(json.dumps(rep.to_dict(), indent=1) if args.json else format_report(rep))
            return 0
    except (OSError, ValueError, ScenarioError) as exc:
        print(f"healthgw eval {cmd}: {exc}", file=sys.stderr)
        return 2
    return 2
