"""The daily health report: one person, one local calendar day, built in a child process.

- daily.py: gather the day from the store, keep the files; process.py: the child process;

- stats.py: `compute_report`, the day's numbers (pure; the rules are in its docstring);
- gaps.py: the device gaps (merged silences per device, a total, the longest listed);
- sleep.py: nights from the watches' per-reading stage minutes (a night counts on the day it ends);
- chart_data.py: `chart_data`, what the charts show as JSON-ready data (series, normal bands,
  event markers, gaps): the report's PNGs are drawn from it, and the console can draw the
  same charts from the same dict;
- plots.py: `render_plots` / `draw_charts`, one PNG per vital;
- page.py: `render_html`, the page;
- check.py: `narrative_ok`, the guard on the local model's prose.
- clinician.py, clinician_gather.py, clinician_pdf.py: the GP's summary of a period (default
  14 days) as a two-page PDF.
"""

from agents.reports.chart_data import chart_data
from agents.reports.check import narrative_ok, numbers_in
from agents.reports.page import render_html
from agents.reports.plots import draw_charts, render_plots
from agents.reports.stats import DayData, compute_report, day_bounds, event_time

__all__ = [
    "DayData",
    "chart_data",
    "compute_report",
    "day_bounds",
    "draw_charts",
    "event_time",
    "narrative_ok",
    "numbers_in",
    "render_html",
    "render_plots",
]
