"""``kubesched diff --report``: two runs side by side: a replay's curves overlaid, or a
simulation's counts and, in tables, which pods moved, went pending or got placed."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from kubesched.report.charts import bar
from kubesched.report.page import Section, Table, page, write


def write_diff_report(d: Any, path: str, params: dict[str, Any]) -> None:
    """``kubesched diff --report``: a replay's curves overlaid (A and B), or a simulation's moves."""
    sections: list[Section] = []
    if d.kind == "replay":
        axis = "arrivedPct" if d.curve and "arrivedPct" in d.curve[0] else "time"
        x = [pt[axis] for pt in d.curve]
        xlabel = "arrived workload (% of the cluster's GPUs)" if axis == "arrivedPct" else "virtual time (s)"
        for key, title in (("allocatedPct", "GPU allocated (%)"), ("fragmentationPct", "GPU fragmented (%)")):
            fig = go.Figure()
            for side in ("a", "b"):
                fig.add_trace(go.Scatter(x=x, y=[(pt.get(key) or {}).get(side) for pt in d.curve], name=side.upper()))
            fig.update_layout(xaxis_title=xlabel, yaxis_title=title.replace("(%)", "(% of the cluster's GPUs)"))
            sections.append((title, fig))
    else:
        counts = {"moved": len(d.moved), "went pending": len(d.went_pending), "placed": len(d.got_placed)}
        fig = bar(list(counts), list(counts.values()), name="pods")
        fig.update_layout(yaxis_title="pods")
        sections.append(("What changed (pods)", fig))
        sections.append(
            Table(
                "moved",
                "Pods that moved to another node",
                (("pod", "pod"), ("from", "node in A"), ("to", "node in B")),
                d.moved,
            )
        )
        sections.append(
            Table(
                "pending",
                "Pods that went pending in B",
                (("pod", "pod"), ("from", "node in A"), ("reason", "reason in B"), ("message", "message in B")),
                d.went_pending,
            )
        )
        sections.append(
            Table(
                "placed",
                "Pods placed in B that were pending in A",
                (("pod", "pod"), ("to", "node in B"), ("reasonBefore", "reason in A")),
                d.got_placed,
            )
        )
    write(path, page("kubesched diff", params, sections))
