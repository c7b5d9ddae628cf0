"""``simulate --report``: what a planner sends about a simulated cluster. Capacity and spare per
node pool, zone and GPU model, the pending pods by reason, every placement (searchable), and the
scheduler's attempts, latency and preemptions."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from kubesched.report.charts import bar, metrics_figures, reasons_figure, requested_share_figures
from kubesched.report.page import Section, Table, page, write
from kubesched.report.tables import capacity_rows, capacity_table, pending_table

PLACEMENT_COLUMNS = (
    ("namespace", "namespace"),
    ("name", "pod"),
    ("nodeName", "node"),
    ("pool", "node pool"),
    ("zone", "zone"),
    ("reason", "outcome"),
    ("nominatedNodeName", "nominated node"),
    ("priority", "priority"),
    ("message", "message"),
)


def verdict_counts(pods: list[dict[str, Any]]) -> dict[str, int]:
    """Node verdicts per reason, summed over the FailedScheduling messages of the pending pods
    ("0/N nodes are available: 3 Insufficient cpu, 2 node(s) had untolerated taint ...")."""
    reasons: dict[str, int] = {}
    for p in pods:
        if p["reason"] == "Unschedulable" and p.get("message"):
            head = p["message"].split(". ", 1)[0].partition(": ")[2]
            for part in head.split(", "):
                n, _, why = part.partition(" ")
                if n.isdigit():
                    reasons[why.rstrip(".")] = reasons.get(why.rstrip("."), 0) + int(n)
    return reasons


def write_simulate_report(result: Any, path: str, params: dict[str, Any]) -> None:
    nodes = result.nodes or []
    capacity = capacity_rows(nodes)
    sections: list[Section] = [capacity_table(nodes), *requested_share_figures(capacity)]
    outcomes: dict[str, int] = {}
    for p in result.pods:
        outcomes[p["reason"]] = outcomes.get(p["reason"], 0) + 1
    fig = bar(list(outcomes), list(outcomes.values()))
    fig.update_layout(xaxis_title="outcome", yaxis_title="pods")
    sections.append(("Pods by outcome", fig))
    pending = [p for p in result.pods if not p.get("nodeName")]
    sections.append(pending_table(pending))
    sections.append(("Why pods were left pending", reasons_figure(verdict_counts(result.pods))))
    where = {n["name"]: n for n in nodes}
    placements = []
    for p in result.pods:
        node = where.get(p.get("nodeName") or "", {})
        placements.append({**p, "pool": node.get("pool"), "zone": node.get("zone")})
    sections.append(Table("placements", "Placements (pod → node)", PLACEMENT_COLUMNS, placements))
    fig = go.Figure()
    fig.add_bar(name="cpu requested", x=[n["name"] for n in nodes], y=[n["cpuPct"] for n in nodes])
    fig.add_bar(name="memory requested", x=[n["name"] for n in nodes], y=[n["memoryPct"] for n in nodes])
    fig.update_layout(barmode="group", xaxis_title="node", yaxis_title="requested, % of allocatable")
    sections.append(("Per-node utilisation", fig))
    sections.extend(metrics_figures(result.metrics))
    write(path, page("kubesched simulate", {**params, **result.stats}, sections))
