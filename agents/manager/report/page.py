"""The daily report as one self-contained HTML page (plots inline, escaped text)."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.manager.report.stats import VITAL_LABELS

if TYPE_CHECKING:  # imported where used: the gateway loads pandas only to make a report
    pass

_CSS = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:1rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}
th:first-child,td:first-child{text-align:left}
.flag{color:#b00;font-weight:bold}.narrative{background:#f4f7fb;padding:.75rem;border-radius:6px}
img{max-width:100%;display:block;margin:.5rem 0}
"""


def _e(x: Any) -> str:
    if x is None:
        return "–"
    return html.escape(str(x), quote=True)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(report: dict[str, Any], plots: list[Path], narrative: str | None) -> str:
    """A self-contained HTML page (inline CSS, plots as base64 <img>); all text escaped."""
    parts: list[str] = []
    title = f"Daily health report - {report.get('person', '')} - {report.get('date', '')}"
    parts.append(f"<h1>{_e(title)}</h1>")
    if narrative:
        paras = "".join(f"<p>{_e(p)}</p>" for p in narrative.split("\n\n") if p.strip())
        parts.append(f'<div class="narrative">{paras}</div>')

    vitals = report.get("vitals", {})
    rows = [
        [
            VITAL_LABELS.get(v, v),
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
        _table(["Vital", "n", "min", "mean", "max", "min out of range", "% out of range"], rows)
    )

    n2 = report.get("news2_max")
    an = report.get("anomalies", {})
    sos = report.get("sos", {})
    parts.append("<h2>Alerts</h2>")
    parts.append(
        _table(
            ["Item", "Value", "Times"],
            [
                ["NEWS2 max", n2.get("value") if n2 else None, n2.get("time") if n2 else ""],
                ["Anomalies", an.get("count"), ", ".join(an.get("times", []))],
                [
                    "Soft SOS",
                    sos.get("soft", {}).get("count"),
                    ", ".join(sos.get("soft", {}).get("times", [])),
                ],
                [
                    "Hard SOS",
                    sos.get("hard", {}).get("count"),
                    ", ".join(sos.get("hard", {}).get("times", [])),
                ],
                [
                    "Alerts found in synced data (nobody was alerted)",
                    sos.get("retrospective", {}).get("count"),
                    ", ".join(sos.get("retrospective", {}).get("times", [])),
                ],
            ],
        )
    )

    gaps = report.get("device_gaps", [])
    parts.append("<h2>Device gaps</h2>")
    parts.append(
        _table(["Start", "End", "Minutes"], [[g["start"], g["end"], g["minutes"]] for g in gaps])
    )

    sl = report.get("sleep", {})
    parts.append(f"<h2>Sleep: {_e(sl.get('total_minutes'))} minutes</h2>")
    parts.append(
        _table(
            ["Start", "End", "Minutes", "Quality"],
            [
                [s["start"], s["end"], s["minutes"], s.get("quality")]
                for s in sl.get("sessions", [])
            ],
        )
    )

    meds = report.get("adherence", {}).get("medications", {})
    parts.append("<h2>Medication</h2>")
    parts.append(
        _table(
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
            VITAL_LABELS.get(v, v),
            c.get("baseline_mean"),
            c.get("diff"),
            c.get("sd"),
            c.get("days"),
        ]
        vs_rows.append(
            "<tr>" + "".join(f"<td>{_e(x)}</td>" for x in cells) + f"<td>{flag}</td></tr>"
        )
    head = "".join(
        f"<th>{_e(h)}</th>" for h in ["Vital", "Baseline", "Difference", "SD", "Days", ""]
    )
    parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(vs_rows)}</tbody></table>")

    if plots:
        parts.append("<h2>Charts</h2>")
    for p in plots:
        data = base64.b64encode(p.read_bytes()).decode("ascii")
        parts.append(f'<img alt="{_e(p.stem)}" src="data:image/png;base64,{data}">')

    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        + "\n".join(parts)
        + "</body></html>\n"
    )


# ---------------------------------------------------------------- narrative check
