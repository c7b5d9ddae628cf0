"""``--report out.html``: one self-contained HTML page per run, what a planner sends. Charts
(plotly, embedded once) and tables that filter as one types and download as CSV. ``simulate``,
``replay``, ``sweep``, ``diff``, ``drain`` and ``size`` each have a writer."""

from kubesched.report.diff import write_diff_report
from kubesched.report.drain import write_drain_report
from kubesched.report.replay import write_replay_report
from kubesched.report.simulate import write_simulate_report
from kubesched.report.size import write_size_report
from kubesched.report.sweep import write_sweep_report

__all__ = [
    "write_diff_report",
    "write_drain_report",
    "write_replay_report",
    "write_simulate_report",
    "write_size_report",
    "write_sweep_report",
]
