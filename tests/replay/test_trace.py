"""Bad traces get a clear `file:line: what` and exit 2, never a traceback; good ones parse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from healthgw.cli import main

ROOT = Path(__file__).resolve().parents[2]
HH = ROOT / "eval" / "days" / "household.yaml"
T = 1_791_273_600  # 2026-10-06 06:00 UTC


def write(tmp: Path, lines: list[object]) -> Path:
    f = tmp / "trace.jsonl"
    f.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return f


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


READING = {"ts": T, "person": "elsie", "device": "elsie-watch", "heart_rate": 70, "spo2": 97}


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "a line must be a JSON object"),
        ({**READING, "person": "nobody"}, "unknown person nobody"),
        ({**READING, "device": "dan-watch"}, "device dan-watch is not one of elsie's devices"),
        ({k: v for k, v in READING.items() if k != "device"}, "a reading needs a device"),
        ({k: v for k, v in READING.items() if k != "ts"}, "ts is missing"),
        ({**READING, "ts": "yesterday"}, "ts is not RFC 3339"),
        ({**READING, "heart_rate": "fast"}, "not a valid reading (heart_rate)"),
        ({**READING, "heart_rate": -3}, "not a valid reading (heart_rate)"),
        ({"ts": T, "person": "elsie", "device": "elsie-watch"}, "not a valid reading"),
        ({"ts": T, "person": "elsie", "ack": "yes"}, "ack must be true or false"),
        ({"ts": T, "person": "elsie", "ack": True, "x": 1}, "an answer line has unknown keys: x"),
    ],
)
def test_a_bad_line_is_named_with_its_file_and_line(
    line: object, what: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = write(tmp_path, [READING, line])
    rc, out, err = run(["replay", str(f), "--household", str(HH)], capsys)
    assert rc == 2 and out == ""
    assert f"{f}:2: {what}" in err
    assert "Traceback" not in err and "fast" not in err.split(what)[-1]


def test_timestamps_out_of_order_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = write(tmp_path, [READING, {**READING, "ts": T + 60}, {**READING, "ts": T + 30}])
    rc, _, err = run(["replay", str(f), "--household", str(HH)], capsys)
    assert rc == 2 and f"{f}:3: out of order" in err


def test_every_problem_is_listed_not_just_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = write(tmp_path, ["{", READING, {**READING, "person": "x"}])
    rc, _, err = run(["replay", str(f), "--household", str(HH)], capsys)
    assert rc == 2 and f"{f}:1:" in err and f"{f}:3:" in err


def test_a_missing_trace_or_household_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _, err = run(["replay", str(tmp_path / "none.jsonl"), "--household", str(HH)], capsys)
    assert rc == 2 and "cannot read the trace" in err
    f = write(tmp_path, [READING])
    rc, _, err = run(["replay", str(f), "--household", str(tmp_path / "no.yaml")], capsys)
    assert rc == 2 and "no.yaml" in err and "Traceback" not in err
