"""`healthgw replay` end to end: the assembled gateway on a virtual clock, fed a trace; the
timeline and the burden per person, as text and as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from healthgw.cli import main

ROOT = Path(__file__).resolve().parents[2]
HH = ROOT / "eval" / "days" / "household.yaml"
T = 1_791_280_800  # 2026-10-06 11:00 Europe/London


def minute_readings(person: str, device: str, n: int, start: float = T, **v: object) -> list[dict]:
    """A reading a minute; the pulse wobbles by a beat (a real one never sits still)."""
    out = []
    for i in range(n):
        vals = dict(v)
        if isinstance(vals.get("heart_rate"), int):
            vals["heart_rate"] = int(vals["heart_rate"]) + (i % 3) - 1  # type: ignore[call-overload]
        out.append({"ts": start + 60 * i, "person": person, "device": device, **vals})
    return out


def replay_json(tmp: Path, lines: list[dict], capsys: pytest.CaptureFixture[str]) -> dict:
    f = tmp / "t.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in lines))
    assert main(["replay", str(f), "--household", str(HH), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_an_ordinary_hour_is_quiet_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = minute_readings("dan", "dan-watch", 60, heart_rate=62, spo2=97, respiratory_rate=14)
    out = replay_json(tmp_path, lines, capsys)
    assert out["persons"]["dan"] == {
        "days": 0.04, "prompts": 0, "soft_sos": 0,
        "texts": {"family": 0, "clinician": 0, "ambulance": 0}, "hard_sos": 0,
        "low_priority": 0, "usual": 0,
    }  # fmt: skip
    assert all(e["kind"] == "event" for e in out["timeline"])


def test_a_deterioration_reaches_the_family_and_the_timeline_says_when(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = minute_readings("elsie", "elsie-watch", 30, heart_rate=70, spo2=96)
    lines += minute_readings("elsie", "elsie-watch", 20, start=T + 1800, heart_rate=75, spo2=86)
    out = replay_json(tmp_path, lines, capsys)
    b = out["persons"]["elsie"]
    assert b["prompts"] >= 1 and b["soft_sos"] >= 1 and b["texts"]["family"] >= 2
    texts = [e for e in out["timeline"] if e["kind"] == "text" and e["role"] == "family"]
    first_low = T + 1800
    # Three of five readings at 86 (two minutes on), then the 60 s question: the family text.
    assert texts and texts[0]["t"] - first_low <= 300
    assert texts[0]["ts"].startswith("2026-10-06T11:")  # local time, ISO 8601


def test_an_answer_in_the_trace_stops_the_escalation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = minute_readings("elsie", "elsie-watch", 30, heart_rate=70, spo2=96)
    lines += minute_readings("elsie", "elsie-watch", 4, start=T + 1800, heart_rate=75, spo2=86)
    lines.append({"ts": T + 1800 + 150, "person": "elsie", "ack": True})
    out = replay_json(tmp_path, sorted(lines, key=lambda x: x["ts"]), capsys)
    assert out["persons"]["elsie"]["texts"]["family"] == 0
    assert any(e.get("type") == "prompt_answered" for e in out["timeline"])


def test_text_output_has_the_timeline_and_the_burden_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "t.jsonl"
    lines = minute_readings("joan", "joan-watch", 10, heart_rate=58, spo2=96)
    lines.append({"ts": T + 700, "person": "joan", "device": "joan-cuff", "systolic_bp": 232,
                  "diastolic_bp": 118, "heart_rate": 60})  # fmt: skip
    f.write_text("\n".join(json.dumps(x) for x in lines))
    assert main(["replay", str(f), "--household", str(HH)]) == 0
    out = capsys.readouterr().out
    assert "soft_sos [high]" in out and "text to clinician" in out
    assert "burden per person" in out and "joan" in out.splitlines()[-1]
