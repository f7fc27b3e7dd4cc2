"""The clinician summary (issue 28): the data a GP reads, from the stores, checked by hand;
then the PDF (A4, two pages, the name in its metadata) and the export's audit row.

Period: Sunday 2026-03-01 to Saturday 2026-03-14, Europe/London on GMT all along, so local
clock time is UTC and every number can be checked on paper."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from agents.medication import reminders, service
from agents.reports.clinician import check_period, compute_summary, default_period, reduce_day
from agents.reports.clinician_gather import gather
from agents.reports.clinician_pdf import render_pdf
from agents.reports.daily import EXPORT_TOOL, DailyReports
from gateway.base.db import Database
from gateway.base.ports import NothingToReport
from gateway.escalation.prompt_store import Prompt, PromptStore
from gateway.household.model import load_household
from tests.harness import ROOT

SINCE, UNTIL = date(2026, 3, 1), date(2026, 3, 14)
T0 = datetime(2026, 3, 1, tzinfo=UTC).timestamp()
AS_OF = datetime(2026, 3, 14, 18, 0, tzinfo=UTC).timestamp()
HH = load_household(ROOT / "examples" / "household.yaml")  # grandma: Maria Lopez, watch 5 s


def at(day: int, h: float) -> float:
    """Epoch seconds of 2026-03-<day> at h o'clock (GMT = local)."""
    return T0 + (day - 1) * 86400 + h * 3600


class FakeStore:
    def __init__(self, readings: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
        self._r, self._e = readings, events
        self.reads: list[tuple[float, float]] = []

    def readings(self, person: str, *, since: float | None = None, until: float | None = None,
                 limit: int = 1000) -> list[dict[str, Any]]:  # fmt: skip
        assert since is not None and until is not None
        self.reads.append((since, until))
        return [r for r in self._r if since <= r["ts"] < until][-limit:]

    def events(self, *, person: str | None, types: Any, since: float | None,
               until: float | None, limit: int) -> list[dict[str, Any]]:  # fmt: skip
        return [e for e in self._e if since is None or e["ts"] >= since]


def readings() -> list[dict[str, Any]]:
    out = []
    for day in range(1, 15):
        if day == 5:
            continue  # the watch was off all day
        for k in range(0, 24 * 12):  # every 5 minutes
            t = at(day, k / 12)
            if day == 3 and 8 <= k / 12 < 11:
                continue  # three hours off the wrist
            hr = 120.0 if (day == 7 and k / 12 == 9) else 70.0
            news = 5 if (day == 7 and k / 12 == 9) else (1 if k % 2 else 0)
            out.append({"ts": t, "device": "watch-maria", "heart_rate": hr, "spo2": 90,
                        "news2_total": news})  # fmt: skip
    return out


EVENTS = [
    {"type": "soft_sos", "ts": at(7, 9.05), "reading_ts": at(7, 9), "priority": "high",
     "why": "Heart rate 120 bpm is above this person's range"},
    {"type": "advisory", "ts": at(2, 3), "priority": "information"},  # usual for them: not listed
    {"type": "prompt_answered", "ts": at(7, 9.1), "prompt_ids": ["p1"], "ok": True},
    {"type": "alert_escalated", "ts": at(10, 4.05), "prompt_id": "p2", "to": "contacts"},
    {"type": "hard_sos", "ts": at(12, 22), "trigger": "button"},
    {"type": "soft_sos", "ts": at(20, 1)},  # after the period: left out
]  # fmt: skip


def stores(tmp: Path) -> tuple[Database, Database]:
    meds, safety = Database(tmp / "healthgw.db"), Database(tmp / "safety.db")
    meds.ensure_schema(reminders.SCHEMA)
    meds.ensure_schema(service.SCHEMA)
    with meds.tx() as c:
        for day in range(1, 15):
            status = "missed" if day in (4, 9) else "taken"
            c.execute("INSERT INTO doses (id, person, medication, scheduled, local_day, status,"
                      " due) VALUES (?,?,?,?,?,?,?)",
                      (f"d{day}", "grandma", "bisoprolol", at(day, 8),
                       f"2026-03-{day:02d}", status, at(day, 8)))  # fmt: skip
        rx = {"medicine": "Bisoprolol", "dose": {"amount": 5, "unit": "mg"},
              "frequency": "once daily", "times": ["08:00"]}  # fmt: skip
        c.execute("INSERT INTO prescriptions VALUES ('rx1', 'grandma', 'bisoprolol 5mg od', ?,"
                  " 'active', '2026-02-01', ?)", (json.dumps(rx), T0 - 86400 * 30))  # fmt: skip
    prompts = PromptStore(safety)
    prompts.write(Prompt("p1", "grandma", "alert_unanswered", "contacts", ["a1"], "watch-maria",
                         "heart rate 120 bpm", at(7, 9.02), at(7, 9.2)), "answered")  # fmt: skip
    prompts.write(Prompt("p2", "grandma", "fall_no_movement", "hard_sos", [], "watch-maria",
                         "a fall was detected", at(10, 4), at(10, 4.05)), "escalated")  # fmt: skip
    return meds, safety


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    meds, safety = stores(tmp_path_factory.mktemp("clinician"))
    store = FakeStore(readings(), EVENTS)
    data = gather(store, HH, "grandma", SINCE, UNTIL, AS_OF, meds=meds, prompts=safety)
    # One local day at a time: never the whole period in memory.
    assert len(store.reads) == 14 and all(b - a == 86400 for a, b in store.reads)
    return compute_summary(data)


def test_who_and_the_period(summary: dict[str, Any]) -> None:
    assert (summary["name"], summary["age"], summary["sex"]) == ("Maria Lopez", 82, "female")
    assert summary["conditions"] == ["copd hypercapnic", "hypertension"]
    assert summary["spo2_scale"] == 2  # hypercapnic COPD: NEWS2's SpO2 scale 2
    assert (summary["since"], summary["until"], summary["days"]) == ("2026-03-01", "2026-03-14", 14)
    assert summary["days_with_readings"] == 13  # the 5th: the watch was off
    assert summary["readings"] == 13 * 288 - 36


def test_news2_highest_each_day(summary: dict[str, Any]) -> None:
    by_day = {n["day"]: (n["max"], n["time"]) for n in summary["news2"]}
    assert len(by_day) == 14
    assert by_day["2026-03-07"] == (5, "09:00")
    assert by_day["2026-03-05"] == (None, None)
    assert by_day["2026-03-01"] == (1, "00:05")  # the first time the day's highest was reached
    assert summary["news2_peak"] == {"day": "2026-03-07", "max": 5, "time": "09:00"}


def test_vitals_against_their_band(summary: dict[str, Any]) -> None:
    hr = summary["vitals"]["heart_rate"]
    n = 13 * 288 - 36
    assert (hr["n"], hr["min"], hr["max"]) == (n, 70.0, 120.0)
    lo, hi = hr["band"]
    assert lo <= 70 <= hi < 120
    assert hr["out_pct"] == round(100 / n, 1)  # one reading of 120 bpm
    assert len(hr["daily"]) == 13
    # Hourly means: 24 a day, less the three hours off the wrist.
    assert len(hr["hourly"]) == 13 * 24 - 3
    assert summary["vitals"]["spo2"]["band"] == [88.0, 100.0]  # scale 2: 88 % is their floor


def test_alerts_sos_and_what_was_asked(summary: dict[str, Any]) -> None:
    ev = summary["events"]
    assert ev["total"] == 2 and ev["counts"] == {"Hard SOS (emergency)": 1, "Alert": 1}
    assert [(e["time"], e["what"]) for e in ev["listed"]] == [
        ("Sat 07 Mar 09:00", "Alert"),  # at its reading's time, not when it was stored
        ("Thu 12 Mar 22:00", "Hard SOS (emergency)"),
    ]
    assert "120 bpm" in ev["listed"][0]["detail"]
    pr = summary["prompts"]
    assert (pr["asked"], pr["ok"], pr["not_ok"], pr["no_answer"]) == (2, 1, 0, 1)
    assert [(p["time"], p["answer"]) for p in pr["listed"]] == [
        ("Sat 07 Mar 09:01", "Answered: OK"),
        ("Tue 10 Mar 04:00", "No answer: contacts texted"),
    ]
    assert pr["listed"][1]["question"].startswith("Are you OK? (a fall")


def test_medications_and_adherence(summary: dict[str, Any]) -> None:
    meds = {m["name"]: m for m in summary["medications"]}
    # "bisoprolol 5 mg" in the household file is the prescription's bisoprolol: shown once.
    assert set(meds) == {"bisoprolol", "salbutamol inhaler"}
    b = meds["bisoprolol"]
    assert (b["scheduled"], b["taken"], b["missed"], b["rate"]) == (14, 12, 2, 0.857)
    assert b["how"] == "5 mg, once daily, 08:00"
    assert meds["salbutamol inhaler"]["scheduled"] == 0


def test_device_gaps_cross_midnight(summary: dict[str, Any]) -> None:
    (watch,) = summary["devices"]["devices"]
    assert watch["device"] == "watch-maria"
    # The 3rd, 08:00 to 11:00 less one 5-minute step; the 4th 23:55 to the 6th 00:00, one gap.
    assert watch["gaps"] == 2
    assert watch["longest_hours"] == round((86400 + 300) / 3600, 1)
    assert watch["longest_from"] == "Wed 04 Mar 23:55"
    assert summary["devices"]["long_gaps"] == 2


def test_nothing_recorded_is_a_clear_refusal(tmp_path: Path) -> None:
    data = gather(FakeStore([], []), HH, "grandma", SINCE, UNTIL, AS_OF)
    with pytest.raises(NothingToReport, match="nothing was recorded for grandma from 2026-03-01"):
        compute_summary(data)


def test_periods() -> None:
    assert default_period(date(2026, 3, 14)) == (SINCE, UNTIL)
    with pytest.raises(ValueError, match="before"):
        check_period(UNTIL, SINCE)
    with pytest.raises(ValueError, match="31 days"):
        check_period(date(2026, 1, 1), date(2026, 3, 1))
    with pytest.raises(LookupError):
        gather(FakeStore([], []), HH, "nobody", SINCE, UNTIL, AS_OF)


def test_reduce_day_counts_only_its_day() -> None:
    rows = [{"ts": at(1, 23.9), "heart_rate": 80}, {"ts": at(2, 0), "heart_rate": 200}]
    out = reduce_day(rows, at(1, 0), at(2, 0), {"heart_rate": (50.0, 90.0)})
    assert out["readings"] == 1 and out["vitals"]["heart_rate"]["out"] == 0


def pages(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf))


def test_the_pdf_is_two_a4_pages(summary: dict[str, Any]) -> None:
    pdf = render_pdf(summary)
    assert pdf.startswith(b"%PDF-") and pdf.rstrip().endswith(b"%%EOF")
    assert pages(pdf) == 2
    assert b"/MediaBox [ 0 0 595.44 841.68 ]" in pdf  # A4
    assert b"Maria Lopez" in pdf and b"2026-03-01 to 2026-03-14" in pdf  # its title
    assert b"/Type3" not in pdf  # TrueType kept as text


class Audit(list[dict[str, Any]]):
    def __call__(self, record: Any) -> None:
        self.append(dict(record))


class Clock:
    def now(self) -> float:
        return AS_OF


def test_the_export_is_audited_and_streamed(tmp_path: Path) -> None:
    meds, safety = stores(tmp_path)
    audit = Audit()
    reports = DailyReports(FakeStore(readings(), EVENTS), HH, tmp_path / "data", Clock(),  # type: ignore[arg-type]
                           doses=meds, prompts=safety, audit=audit)  # fmt: skip
    pdf = asyncio.run(reports.summary_pdf("grandma", SINCE, UNTIL, by="family:0a1b2c3d"))
    assert pages(pdf) == 2
    (row,) = audit
    assert row["tool"] == EXPORT_TOOL and row["actor"] == "family:0a1b2c3d" and row["ok"]
    assert row["args"] == {"person": "grandma", "since": "2026-03-01", "until": "2026-03-14"}
    assert row["ts"] == AS_OF and row["result"] == {"bytes": len(pdf)}
    assert not (tmp_path / "data").exists()  # streamed: no file kept
    with pytest.raises(NothingToReport):
        asyncio.run(reports.summary_pdf("grandma", date(2025, 1, 1), date(2025, 1, 2), by="admin"))
    assert audit[-1]["ok"] is False and audit[-1]["error"] == "NothingToReport"
    with pytest.raises(ValueError):
        asyncio.run(reports.summary_pdf("grandma", UNTIL, SINCE, by="admin"))
    assert len(audit) == 3


def test_no_news2_for_a_child(tmp_path: Path) -> None:
    """RCP NEWS2 is for adults, not in pregnancy: a child's summary says it is not scored."""
    text = (ROOT / "examples" / "household.yaml").read_text()
    assert "birth_date: 1944-03-02" in text
    (tmp_path / "hh.yaml").write_text(
        text.replace("birth_date: 1944-03-02", "birth_date: 2019-05-01")
    )
    hh = load_household(tmp_path / "hh.yaml")  # grandma, as a six-year-old
    meds, safety = stores(tmp_path)
    data = gather(FakeStore(readings(), EVENTS), hh, "grandma", SINCE, UNTIL, AS_OF,
                  meds=meds, prompts=safety)  # fmt: skip
    s = compute_summary(data)
    assert s["age"] < 16 and s["news2_applies"] is False
    assert pages(render_pdf(s)) == 2
    adult = compute_summary(gather(FakeStore(readings(), EVENTS), HH, "grandma", SINCE, UNTIL,
                                   AS_OF, meds=meds, prompts=safety))  # fmt: skip
    assert adult["news2_applies"] is True
