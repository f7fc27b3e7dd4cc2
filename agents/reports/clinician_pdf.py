"""The clinician summary as an A4 PDF (matplotlib's PDF backend, Agg-free: nothing on screen).

Page 1: the header (who, age, sex, conditions, the period, when it was made, the disclaimer),
the medications with their adherence, then one small chart per vital: hourly means over the
period against the person's band (green), hours without readings (grey), and every alert
and SOS as a vertical line (a different colour and line style per kind, so they read in
black and white too).
Page 2: NEWS2 maximum per day (a table), the alerts and SOS listed, what the hub asked and
what the person answered, and the device gaps.

Text stays text (TrueType fonts embedded as Type 42), so the PDF can be searched and read
aloud, and the tests can look for words in it.
"""

from __future__ import annotations

import io
import math
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from agents.reports.plots import MARKER_STYLE

A4 = (8.27, 11.69)  # inches, portrait
DISCLAIMER = (
    "From healthgw, a home monitor, not a medical device: wrist readings are less accurate "
    "than clinical measurements. Please confirm before acting on any value."
)
_BAND = "#2e8b57"
_LINE = "#1f5fa8"
_ROW = 0.0135  # a table row, in page heights


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


def _header(fig: Any, s: dict[str, Any], page: int, pages: int) -> None:
    who = f"{s['name']}"
    bits = [f"age {s['age']}" if s.get("age") is not None else None, s.get("sex")]
    if s.get("birth_date"):
        bits.append(f"born {s['birth_date']}")
    fig.text(0.06, 0.968, f"Home monitoring summary for the GP · page {page} of {pages}",
             fontsize=8, color="#555555")  # fmt: skip
    fig.text(0.94, 0.968, f"made {s['generated']}", fontsize=8, ha="right", color="#555555")
    fig.text(0.06, 0.95, f"{who} ({', '.join(b for b in bits if b)})", fontsize=13,
             fontweight="bold")  # fmt: skip
    fig.text(0.06, 0.934, f"Period: {s['since']} to {s['until']} ({s['days']} days, "
             f"times in {s['tz']})", fontsize=9)  # fmt: skip
    fig.text(0.06, 0.02, DISCLAIMER, fontsize=6.5, color="#555555", wrap=True)


def _lines(fig: Any, y: float, lines: list[tuple[str, dict[str, Any]]], step: float) -> float:
    for text, style in lines:
        fig.text(0.06, y, text, fontsize=style.pop("size", 8), **style)
        y -= step
    return y


def _who_and_meds(fig: Any, s: dict[str, Any]) -> float:
    conditions = ", ".join(s["conditions"]) or "none listed"
    scale = " (NEWS2 SpO2 scale 2)" if s.get("spo2_scale") == 2 else ""
    out: list[tuple[str, dict[str, Any]]] = [
        (f"Conditions: {conditions}{scale}", {"size": 8.5}),
        (f"Readings: {s['readings']:,} on {s['days_with_readings']} of {s['days']} days · "
         f"alerts and SOS: {s['events']['total']} · questions asked: {s['prompts']['asked']} · "
         + (f"highest NEWS2: {_fmt((s.get('news2_peak') or {}).get('max'))}"
            if s.get("news2_applies", True) else "NEWS2: not used (a child, or in pregnancy)"),
         {"size": 8}),
        ("Medications (doses from the hub's reminders in the period)",
         {"size": 9, "fontweight": "bold"}),
    ]  # fmt: skip
    if not s["medications"]:
        out.append(("none listed", {"size": 8}))
    for m in s["medications"][:8]:
        if m["scheduled"]:
            rate = "" if m["rate"] is None else f", {round(100 * m['rate'])} % taken"
            dose = (f"{m['taken']} of {m['scheduled']} taken, {m['missed']} missed, "
                    f"{m['skipped']} skipped{rate}")  # fmt: skip
        else:
            dose = "no reminders in the period"
        out.append((f"  {m['name']} ({m['how']}): {dose}", {"size": 8}))
    return _lines(fig, 0.912, out, 0.018)


def _vital_charts(fig: Any, s: dict[str, Any], top: float) -> None:
    from matplotlib.ticker import FuncFormatter

    vitals = s["vitals"]
    if not vitals:
        fig.text(0.06, top - 0.03, "No vital signs were recorded in the period.", fontsize=9)
        return
    start, end = float(s["start"]), float(s["end"])
    z = ZoneInfo(str(s["tz"]))
    days = (end - start) / 86400.0
    bottom = 0.06
    h = (top - bottom) / len(vitals)
    spans = s["devices"]["spans"]
    for i, d in enumerate(vitals.values()):
        ax = fig.add_axes((0.1, top - (i + 1) * h + 0.022, 0.72, h - 0.04))
        if d["band"] is not None:
            ax.axhspan(d["band"][0], d["band"][1], color=_BAND, alpha=0.15, label="their band")
        for j, (a, b) in enumerate(spans):
            ax.axvspan((a - start) / 86400, (b - start) / 86400, color="#888888", alpha=0.18,
                       linewidth=0, label=None if j else "no readings")  # fmt: skip
        pts = d["hourly"]
        xs, ys = [], []
        for k, (t, y) in enumerate(pts):
            if k and t - pts[k - 1][0] > 3 * 3600:  # a break, not a line across silence
                xs.append((t - start) / 86400 - 1e-3)
                ys.append(math.nan)
            xs.append((t - start) / 86400)
            ys.append(y)
        ax.plot(xs, ys, color=_LINE, linewidth=0.8, label="hourly mean")
        seen: set[str] = set()
        for m in s["events"]["markers"]:
            colour, style, width = MARKER_STYLE.get(m["kind"], ("#444444", "--", 1.0))
            ax.axvline((m["ts"] - start) / 86400, color=colour, linestyle=style, linewidth=width,
                       label=None if m["kind"] in seen else _MARK_WORDS.get(m["kind"]))  # fmt: skip
            seen.add(m["kind"])
        ax.set_xlim(0, days)
        step = 1 if days <= 16 else 2
        ax.set_xticks([float(k) for k in range(0, int(days) + 1, step)])
        ax.xaxis.set_major_formatter(
            FuncFormatter(
                lambda x, _p: datetime.fromtimestamp(start + x * 86400, z).strftime("%d %b")
            )
        )
        ax.tick_params(labelsize=6)
        ax.grid(axis="y", alpha=0.3)
        band = "" if d["band"] is None else f"; band {_fmt(d['band'][0])}-{_fmt(d['band'][1])}"
        out = "" if d["out_pct"] is None else f"; {_fmt(d['out_pct'])} % of readings outside"
        ax.set_title(f"{d['label'].capitalize()} ({d['unit']}): min {_fmt(d['min'])}, mean "
                     f"{_fmt(d['mean'])}, max {_fmt(d['max'])}{band}{out}", loc="left",
                     fontsize=7.5)  # fmt: skip
        if i == 0:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.05), fontsize=6, frameon=False)


_MARK_WORDS = {"hard_sos": "hard SOS", "soft_sos": "alert", "advisory": "low-priority alert",
               "retrospective_alert": "alert in synced data", "fall_detected": "fall"}  # fmt: skip


def _table(fig: Any, rect: tuple[float, float, float, float], rows: list[list[str]],
           cols: list[str], widths: list[float]) -> None:  # fmt: skip
    ax = fig.add_axes(rect)
    ax.axis("off")
    if not rows:
        return
    t = ax.table(cellText=rows, colLabels=cols, colWidths=widths, bbox=(0, 0, 1, 1),
                 cellLoc="left", colLoc="left")  # fmt: skip
    t.auto_set_font_size(False)
    t.set_fontsize(6.5)
    for (r, _c), cell in t.get_celld().items():
        cell.set_linewidth(0.3)
        if r == 0:
            cell.set_text_props(fontweight="bold")


def _page_two(fig: Any, s: dict[str, Any]) -> None:
    y = 0.905
    fig.text(0.06, y, "NEWS2, highest each day", fontsize=9, fontweight="bold")
    # RCP NEWS2 is not validated for children or in pregnancy: the hub does not score it there.
    news = s["news2"] if s.get("news2_applies", True) else []
    if not news:
        fig.text(0.06, y - 0.02, "Not scored: NEWS2 does not apply to a child or in pregnancy."
                 if not s.get("news2_applies", True) else "No NEWS2 in the period.", fontsize=8)  # fmt: skip
    half = math.ceil(len(news) / 2)
    for k, part in enumerate((news[:half], news[half:]) if news else ()):
        rows = [[n["day"], _fmt(n["max"]), n["time"] or "-"] for n in part]
        h = _ROW * (len(part) + 1)
        _table(fig, (0.06 + 0.45 * k, y - 0.008 - h, 0.4, h), rows, ["day", "highest", "first at"],
               [0.4, 0.25, 0.35])  # fmt: skip
    y -= 0.045 + _ROW * (half + 1)
    sections: list[tuple[str, list[list[str]], list[str], list[float], str]] = [
        (f"Alerts and SOS ({s['events']['total']}: "
         + (", ".join(f"{k} {v}" for k, v in s["events"]["counts"].items()) or "none") + ")",
         [[e["time"], e["what"], e["detail"]] for e in s["events"]["listed"]],
         ["when", "what", "why"], [0.16, 0.2, 0.64], "No alerts or SOS in the period."),
        (f"What the hub asked and the answers ({s['prompts']['asked']} asked: "
         f"{s['prompts']['ok']} OK, {s['prompts']['not_ok']} not OK, "
         f"{s['prompts']['no_answer']} unanswered)",
         [[p["time"], p["question"], p["answer"]] for p in s["prompts"]["listed"]],
         ["when", "asked", "answer"], [0.16, 0.54, 0.3], "The hub asked nothing in the period."),
        ("Device gaps (silences longer than the device's expected interval)",
         [[d["device"], f"{d['readings']:,}", str(d["gaps"]), _fmt(d["hours_without"]),
           "-" if d["longest_hours"] is None else f"{_fmt(d['longest_hours'])} h from "
           f"{d['longest_from']}"] for d in s["devices"]["devices"]],
         ["device", "readings", "gaps", "hours without", "longest"],
         [0.18, 0.14, 0.1, 0.16, 0.42], "No device sent readings in the period."),
    ]  # fmt: skip
    for title, rows, cols, widths, empty in sections:
        if y < 0.1:
            fig.text(0.06, y, "(more in the hub's daily reports)", fontsize=7)
            break
        fig.text(0.06, y, title, fontsize=9, fontweight="bold")
        room = max(1, int((y - 0.08) / _ROW) - 2)
        shown = rows[:room]
        if not shown:
            fig.text(0.06, y - 0.02, empty, fontsize=8)
            y -= 0.045
            continue
        h = _ROW * (len(shown) + 1)
        _table(fig, (0.06, y - 0.008 - h, 0.88, h), shown, cols, widths)
        if len(rows) > len(shown):
            fig.text(0.06, y - 0.014 - h, f"... and {len(rows) - len(shown)} more", fontsize=7)
        y -= h + 0.045


def render_pdf(s: dict[str, Any]) -> bytes:
    """The summary (`compute_summary`'s dict) as a two-page A4 PDF."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_pdf import PdfPages
    from matplotlib.figure import Figure

    buf = io.BytesIO()
    with matplotlib.rc_context({"pdf.fonttype": 42, "font.family": "DejaVu Sans"}):
        meta = {"Title": f"Home monitoring summary: {s['name']}, {s['since']} to {s['until']}",
                "Author": "healthgw", "Subject": "clinician summary", "Creator": "healthgw"}  # fmt: skip
        with PdfPages(buf, metadata=meta) as pdf:
            one = Figure(figsize=A4)
            _header(one, s, 1, 2)
            top = _who_and_meds(one, s)
            _vital_charts(one, s, top - 0.01)
            pdf.savefig(one)
            two = Figure(figsize=A4)
            _header(two, s, 2, 2)
            _page_two(two, s)
            pdf.savefig(two)
    return buf.getvalue()
