"""``replay --report``: the allocation and fragmentation curves of a trace replay, capacity and
spare per GPU model (and pool and zone), the pods that found no node by reason, every
placement (searchable), and the scheduler's attempts and latency."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from kubesched.report.charts import metrics_figures, reasons_figure, requested_share_figures
from kubesched.report.page import Section, Table, page, write
from kubesched.report.tables import capacity_rows, capacity_table, pending_table

PLACEMENT_COLUMNS = (
    ("pod", "pod"),
    ("node", "node"),
    ("gpuModel", "GPU model"),
    ("gpus", "GPUs asked"),
    ("gpuMilli", "milli-GPU asked per GPU"),
    ("devices", "GPU devices"),
    ("at", "bound at (virtual s)"),
)


def write_replay_report(result: Any, path: str) -> None:
    curve = result.curve
    arrivals = result.params["mode"] == "arrivals"
    x = [pt["arrivedPct"] for pt in curve] if arrivals else [pt["time"] for pt in curve]
    xtitle = "arrived workload (% of the cluster's GPU capacity)" if arrivals else "virtual time (s)"
    sections: list[Section] = []
    fig = go.Figure()
    fig.add_scatter(x=x, y=[pt["allocatedPct"] for pt in curve], name="GPU allocated", mode="lines")
    fig.add_scatter(x=x, y=[pt["fragmentationPct"] for pt in curve], name="GPU fragmented", mode="lines")
    fig.update_layout(xaxis_title=xtitle, yaxis_title="% of the cluster's GPUs")
    sections.append(("GPU allocation and fragmentation", fig))
    fig = go.Figure()
    fig.add_scatter(x=x, y=[pt["fragmentationOfIdlePct"] for pt in curve], name="fragmented % of idle", mode="lines")
    fig.update_layout(xaxis_title=xtitle, yaxis_title="fragmented, % of idle GPU milli")
    sections.append(("Fragmentation of idle GPUs", fig))
    fig = go.Figure()
    if arrivals:
        fig.add_scatter(x=x, y=[pt.get("failed", 0) for pt in curve], name="pods that fit nowhere", mode="lines")
    else:
        fig.add_scatter(x=x, y=[pt.get("pendingUnschedulable", 0) for pt in curve], name="pending", mode="lines")
    fig.add_scatter(x=x, y=[pt["running"] for pt in curve], name="running", mode="lines")
    fig.update_layout(xaxis_title=xtitle, yaxis_title="pods")
    sections.append(("Pending and running pods", fig))
    gangs = result.summary.get("gangs")
    if gangs:  # replay --gangs: how the trace's jobs fared all-or-nothing
        labels = ["admitted", "failed", "waiting", "preempted"]
        fig = go.Figure(go.Bar(x=labels, y=[gangs[k] for k in labels]))
        fig.update_layout(yaxis_title=f"gangs (of {gangs['gangs']:,}, {gangs['pods']:,} pods)")
        sections.append(("Gangs: admitted, failed (dropped), waiting at the end, preempted", fig))
    capacity = capacity_rows(result.usage)
    sections.append(capacity_table(result.usage))
    sections.extend(requested_share_figures(capacity))
    sections.append(pending_table(({**p, "reason": "Unschedulable"} for p in result.pending), "pod"))
    sections.append(("Why pods were left pending", reasons_figure(result.reasons)))
    model = {n["name"]: n.get("gpuModel") for n in result.usage}
    placements = [{**p, "gpuModel": model.get(p["node"])} for p in result.placements]
    sections.append(Table("placements", "Placements (pod → node)", PLACEMENT_COLUMNS, placements))
    nodes = result.nodes or {"allocatedPct": []}
    fig = go.Figure(go.Histogram(x=nodes["allocatedPct"], nbinsx=20))
    fig.update_layout(xaxis_title="GPU allocated on the node, %", yaxis_title="GPU nodes")
    sections.append((f"Per-node GPU use ({nodes.get('when', 'at the end')})", fig))
    sections.extend(metrics_figures(result.metrics))
    params = {**result.params, **{k: v for k, v in result.summary.items() if k != "final"}}
    write(path, page(f"kubesched replay: {Path(str(result.params['workload'])).name}", params, sections))
