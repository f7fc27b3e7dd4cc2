"""`healthgw eval ...` as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.triage.classifier import Triage
from healthgw.cli import main
from tests.harness import TRIAGE_CACHE

ROOT = Path(__file__).resolve().parents[3]
DEV = ROOT.parent / "shared" / "eval" / "dev-scenarios.jsonl"
FRESH = ROOT / "tests" / "data" / "fresh-scenarios.jsonl"
HARD = ROOT / "eval" / "hard-scenarios.jsonl"


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:  # type: ignore[type-arg]
    assert main(["eval", *argv, "--json", "--cache-dir", str(TRIAGE_CACHE)]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


@pytest.mark.parametrize("path", [DEV, FRESH], ids=["dev", "fresh"])
def test_scenarios_reach_the_target(
    path: Path, capsys: pytest.CaptureFixture[str], trained_triage: Triage
) -> None:
    if not path.exists():
        pytest.skip(f"{path} is not here")
    out = run_json(capsys, "scenarios", str(path))
    assert out["n"] == len([x for x in path.read_text().splitlines() if x.strip()])
    assert out["booking_accuracy"] == 1.0
    assert out["task_success"] >= 0.95, [s for s in out["scenarios"] if not s["passed"]]
    one = out["scenarios"][0]
    assert {"id", "passed", "expected", "chosen", "booked", "turns"} <= set(one)


def test_hard_scenarios_reach_95_percent_and_every_crisis_is_caught(
    capsys: pytest.CaptureFixture[str], trained_triage: Triage
) -> None:
    """The harder public set (docs/agents.md): closed loop without the model."""
    out = run_json(capsys, "scenarios", str(HARD))
    assert out["n"] == len([x for x in HARD.read_text().splitlines() if x.strip()]) >= 40
    assert out["task_success"] >= 0.95, [s for s in out["scenarios"] if not s["passed"]]
    # The crisis route is all or nothing: every crisis caught, none invented.
    assert out["safety_accuracy"] == 1.0, [
        s["id"] for s in out["scenarios"] if s["safety"] != s["expected_safety"]
    ]
    assert not any(s["booked"] for s in out["scenarios"] if s["expected_safety"])


def test_generate_then_evaluate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], trained_triage: Triage
) -> None:
    f = tmp_path / "gen.json"
    assert main(["eval", "generate", "--n", "14", "--seed", "2", "--out", str(f)]) == 0
    capsys.readouterr()
    out = run_json(capsys, "trajectories", str(f))
    assert out["n_trajectories"] == 14
    assert set(out["per_category"]) == {
        "general", "counter", "negative", "dietician", "hard_sos", "end_sos", "soft_sos",
    }  # fmt: skip
    assert out["overall"]["tool_acc"] == 1.0
    # JSON lines work too.
    lines = tmp_path / "gen.jsonl"
    lines.write_text("\n".join(json.dumps(t) for t in json.loads(f.read_text())))
    assert run_json(capsys, "trajectories", str(lines))["n_trajectories"] == 14
    # Human-readable by default.
    assert main(["eval", "trajectories", str(f), "--cache-dir", str(TRIAGE_CACHE)]) == 0
    assert "overall" in capsys.readouterr().out


def test_bad_files_get_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "utterance": "hi"}\nnot json\n')
    assert main(["eval", "scenarios", str(bad), "--cache-dir", str(TRIAGE_CACHE)]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:1" in err and "bad.jsonl:2" in err
    assert main(["eval", "trajectories", str(tmp_path / "missing.json")]) == 2


STORIES = ROOT / "eval" / "stories"
# Frozen held-out sets: never read for a fix (docs/agents.md, "First-sight discipline"). A
# changed byte means the set no longer measures what its numbers say.
FROZEN = {
    "heldout.jsonl": "7c7da665a71a79b0ede4048f66f738ac6f7dfcb556cfbd8c74b7a62f1879db7f",
    "heldout2.jsonl": "ad59dbe6d6f2252dd9ffc77810ea0335262f75605bdebcfdcc5772e566686716",
}
# Dev story sets, read after their first-sight score: held at the target. Held-out
# sets: held at what they scored, so a regression shows; their misses are never read.
FLOORS = {
    "nhs-lay.jsonl": 0.95,
    "carers.jsonl": 0.95,
    "textspeak.jsonl": 0.95,
    "symptom-pages.jsonl": 0.95,
    "relatives.jsonl": 0.95,
    "heldout.jsonl": 0.88,
    "heldout2.jsonl": 0.95,
}


def test_held_out_sets_are_frozen() -> None:
    import hashlib

    for name, sha in FROZEN.items():
        assert hashlib.sha256((STORIES / name).read_bytes()).hexdigest() == sha, name


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_story_sets_are_sourced_and_cover_every_specialty(name: str) -> None:
    from gateway.household.model import SPECIALIZATIONS

    rows = [json.loads(x) for x in (STORIES / name).read_text().splitlines() if x.strip()]
    assert len(rows) >= 60
    assert all(r.get("source", "").startswith("http") for r in rows)
    assert (STORIES / name.replace(".jsonl", ".sources.md")).exists()
    specs = [r["expect"].get("specialization") for r in rows]
    assert all(specs.count(s) >= 2 for s in SPECIALIZATIONS)
    assert any(r["expect"].get("emergency") for r in rows)
    assert any(r["expect"].get("safety") for r in rows)


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_story_sets_hold_their_scores(
    name: str, capsys: pytest.CaptureFixture[str], trained_triage: Triage
) -> None:
    out = run_json(capsys, "scenarios", str(STORIES / name))
    assert out["task_success"] >= FLOORS[name]
    # Red flags are all or nothing: no 999 story booked, no crisis missed.
    assert not any(s["booked"] for s in out["scenarios"] if s["expected_emergency"])
    assert out["safety_accuracy"] == 1.0


def test_a_red_flag_story_may_leave_booked_out_and_a_booking_may_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], trained_triage: Triage
) -> None:
    f = tmp_path / "red.jsonl"
    f.write_text(
        '{"id": "e1", "utterance": "my dad\'s face has dropped on one side and he is slurring",'
        ' "accept": true, "expect": {"emergency": true}}\n'
        '{"id": "c1", "utterance": "I want to end my life", "accept": true,'
        ' "expect": {"safety": true}}\n'
    )
    out = run_json(capsys, "scenarios", str(f))
    assert out["task_success"] == 1.0 and out["emergency_accuracy"] == 1.0
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": "b1", "utterance": "a rash", "accept": true, "expect": {"specialization": "dermatologist"}}\n'
    )
    assert main(["eval", "scenarios", str(bad), "--cache-dir", str(TRIAGE_CACHE)]) == 2
    assert "expect.booked is required" in capsys.readouterr().err
