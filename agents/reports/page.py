"""The daily report as one self-contained HTML page (plots inline, escaped text)."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.reports.stats import VITAL_LABELS
from gateway.contract.vital_words import label, number, sleep_words, user_text

if TYPE_CHECKING:  # imported where used: the gateway loads pandas only to make a report
    pass

_CSS = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:1rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
.scroll{overflow-x:auto}td.num{text-align:right}.none{color:#555}
.flag{color:#b00;font-weight:bold}.narrative{background:#f4f7fb;padding:.75rem;border-radius:6px}
img{max-width:100%;display:block;margin:.5rem 0}
.summary{font-size:1.1rem;font-weight:600}
"""


def _e(x: Any) -> str:
    """A cell or phrase, escaped. Missing, NaN and values that are not words (a dict, a
    list) show as a dash, never as Python; yes/no for a flag."""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int | float):
        return "–" if number(x) is None else html.escape(str(x))
    if x is None or not isinstance(x, str):
        return "–"
    return html.escape(x, quote=True)


def _when(iso: Any, report: dict[str, Any]) -> str:
    """A time as a reader says it: "08:20" on the report's day, "9 Mar 23:00" on another; on a
    day whose clocks change the UTC offset is kept so the repeated hour stays apart."""
    try:
        dt = datetime.fromisoformat(str(iso))
    except ValueError:
        return iso if isinstance(iso, str) else "–"
    text = dt.strftime("%H:%M")
    if dt.date().isoformat() != report.get("date"):
        text = f"{dt.day} {dt.strftime('%b')} {text}"
    if report.get("hours") not in (None, 24.0):
        text += dt.strftime(" (UTC%z)")
    return text


def _times(items: Sequence[Any], report: dict[str, Any]) -> str:
    return ", ".join(_when(t, report) for t in items)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_cell(c) for c in r) + "</tr>" for r in rows)
    # In a scrolling box: on a phone a wide table scrolls alone, the page does not.
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f'<div class="scroll">{table}</div>'


def _cell(c: Any) -> str:
    # Numbers right-aligned so their digits line up; words and times read from the left.
    num = isinstance(c, int | float) and not isinstance(c, bool)
    return f'<td class="num">{_e(c)}</td>' if num else f"<td>{_e(c)}</td>"


def _none(text: str) -> str:
    """An empty section says so in words, not as a table of headers."""
    return f'<p class="none">{_e(text)}</p>'


def _duration(minutes: Any) -> str:
    m = round(number(minutes) or 0)
    return f"{m // 60} h {m % 60:02d} min" if m >= 60 else f"{m} min"


def _count(x: Any) -> int:
    return round(number(x) or 0)


def _summary(report: dict[str, Any]) -> str:
    """The day in one line, above the charts: what a reader looks for first."""
    sos = report.get("sos", {})
    gaps = report.get("device_gaps", {})
    items = [
        f"{_count(report.get('readings'))} readings",
        f"hard SOS {_count(sos.get('hard', {}).get('count'))}",
        f"soft SOS {_count(sos.get('soft', {}).get('count'))}",
        f"low-priority alerts {_count(sos.get('low', {}).get('count'))}",
        f"usual for them {_count(sos.get('usual', {}).get('count'))}",
        f"alerts in synced data {_count(sos.get('retrospective', {}).get('count'))}",
        f"device gaps {_count(gaps.get('count'))} ({_duration(gaps.get('total_minutes', 0))})",
    ]
    return f'<p class="summary">{_e(" · ".join(items))}</p>'


@user_text
def render_html(report: dict[str, Any], plots: list[Path], narrative: str | None) -> str:
    """A self-contained HTML page (inline CSS, plots as base64 <img>); all text escaped."""
    parts: list[str] = []
    try:
        when = (
            date.fromisoformat(str(report.get("date"))).strftime("%A %d %B %Y").replace(" 0", " ")
        )
    except ValueError:
        when = ""
    title = f"Daily health report - {report.get('name') or report.get('person', '')} - {when}"
    parts.append(f"<h1>{_e(title)}</h1>")
    if narrative:
        paras = "".join(f"<p>{_e(p)}</p>" for p in narrative.split("\n\n") if p.strip())
        parts.append(f'<div class="narrative">{paras}</div>')

    parts.append(_summary(report))
    if plots:
        parts.append("<h2>Charts</h2>")
    for p in plots:
        data = base64.b64encode(p.read_bytes()).decode("ascii")
        vital = next((v for v in VITAL_LABELS if p.stem.endswith("_" + v)), p.stem)
        alt = _e(VITAL_LABELS.get(vital, label(vital)))
        parts.append(f'<img alt="Chart: {alt}" src="data:image/png;base64,{data}">')

    vitals = report.get("vitals", {})
    rows = [
        [
            VITAL_LABELS.get(v, label(v)),
            s.get("n"),
            s.get("min"),
            s.get("mean"),
            s.get("max"),
            s.get("out_of_range_minutes"),
            s.get("out_of_range_pct"),
        ]
        for v, s in vitals.items()
        if s.get("n")
    ]
    parts.append("<h2>Vitals</h2>")
    parts.append(
        _table(
            [
                "Vital",
                "Readings",
                "Lowest",
                "Average",
                "Highest",
                "Minutes out of range",
                "% of time out of range",
            ],
            rows,
        )
    )

    n2 = report.get("news2_max")
    an = report.get("anomalies", {})
    sos = report.get("sos", {})
    soft, hard, retro = (sos.get(k, {}) for k in ("soft", "hard", "retrospective"))
    parts.append("<h2>Alerts</h2>")
    parts.append(
        _table(
            ["Item", "Count", "Times"],
            [
                ["Hard SOS (button)", hard.get("count"), _times(hard.get("times", []), report)],
                ["Soft SOS (vitals alert)", soft.get("count"), _times(soft.get("times", []), report)],
                ["Alerts found in synced data (nobody was alerted)", retro.get("count"),
                 _times(retro.get("times", []), report)],
                ["Anomalies", an.get("count"), _times(an.get("times", []), report)],
                ["Highest NEWS2", n2.get("value") if n2 else None,
                 _when(n2.get("time"), report) if n2 else ""],
            ],
        )
    )  # fmt: skip

    gaps = report.get("device_gaps", {})
    listed = gaps.get("listed", [])
    parts.append("<h2>Device gaps</h2>")
    n = _count(gaps.get("count"))
    if n == 0:
        parts.append(_none("No device was silent for longer than expected."))
    else:
        more = f" The {len(listed)} longest are listed." if n > len(listed) else ""
        parts.append(
            f"<p>{n} {'gap' if n == 1 else 'gaps'}, {_e(_duration(gaps.get('total_minutes')))} "
            "in all: a device silent for longer than 3 of its reading intervals, and at least "
            f"{_e(_duration(gaps.get('min_gap_minutes')))}.{_e(more)}</p>"
        )
    if listed:
        parts.append(
            _table(
                ["Device", "From", "To", "Minutes"],
                [[g["device"], _when(g["start"], report), _when(g["end"], report), g["minutes"]]
                 for g in listed],
            )
        )  # fmt: skip

    sl = report.get("sleep", {})
    sessions = sl.get("sessions", [])
    parts.append(f"<h2>Sleep: {_e(_duration(sl.get('total_minutes')))}</h2>" if sessions
                 else "<h2>Sleep</h2>" + _none("No sleep was recorded."))  # fmt: skip
    if sl.get("stages"):
        parts.append(f"<p>{_e('In all ' + sleep_words(sl['stages']))}.</p>")
    if sessions:
        rated = any("quality" in x for x in sessions)  # a Quality column only when rated
        parts.append(
            _table(
                ["From", "To", "Minutes asleep", *(["Quality"] if rated else [])],
                [[_when(x["start"], report), _when(x["end"], report), x["minutes"],
                  *([x.get("quality")] if rated else [])] for x in sessions],
            )
        )  # fmt: skip

    meds = report.get("adherence", {}).get("medications", {})
    parts.append("<h2>Medication</h2>")
    parts.append(
        _none("No doses were scheduled.")
        if not meds
        else _table(
            ["Medication", "Scheduled", "Taken", "Missed", "Skipped", "Rate"],
            [
                [m, a["scheduled"], a["taken"], a["missed"], a["skipped"], a["rate"]]
                for m, a in meds.items()
            ],
        )
    )

    vs = report.get("vs_previous_7_days", {})
    parts.append("<h2>Compared with the previous 7 days</h2>")
    vs_rows = []
    for v, c in vs.items():
        if c.get("diff") is None:
            continue
        flag = '<span class="flag">unusual</span>' if c.get("flag") else ""
        cells = [
            VITAL_LABELS.get(v, label(v)),
            c.get("baseline_mean"),
            c.get("diff"),
            c.get("sd"),
            c.get("days"),
        ]
        vs_rows.append("<tr>" + "".join(_cell(x) for x in cells) + f"<td>{flag}</td></tr>")
    head = "".join(
        f"<th>{_e(h)}</th>" for h in ["Vital", "Baseline", "Difference", "SD", "Days", ""]
    )
    if vs_rows:
        parts.append(
            f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(vs_rows)}</tbody></table></div>"
        )
    else:
        parts.append(_none("Fewer than 3 of the previous 7 days have data to compare with."))

    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        + "\n".join(parts)
        + "</body></html>\n"
    )


# ---------------------------------------------------------------- narrative check
