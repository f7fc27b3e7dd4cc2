"""The daily health report: one person, one local calendar day.

- stats.py: `compute_report`, the day's numbers (pure; the rules are in its docstring);
- plots.py: `render_plots`, one chart per vital;
- page.py: `render_html`, the page;
- check.py: `narrative_ok`, the guard on the local model's prose.
"""

from agents.manager.report.check import narrative_ok, numbers_in
from agents.manager.report.page import render_html
from agents.manager.report.plots import render_plots
from agents.manager.report.stats import DayData, compute_report, day_bounds

__all__ = [
    "DayData",
    "compute_report",
    "day_bounds",
    "narrative_ok",
    "numbers_in",
    "render_html",
    "render_plots",
]
