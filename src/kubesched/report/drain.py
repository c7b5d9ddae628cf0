"""``kubesched drain --report``: the drain what-if as a planner sends it. What the drained nodes
held and what became of each pod (evicted, refused by a budget, left as a DaemonSet or mirror
pod), where each replacement went or why it waits, and capacity and spare by node pool, zone and
GPU model before the cordon and, on the nodes that stay, at the end."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from kubesched.planning.drain import DrainResult
from kubesched.report.page import Section, Table, page, write
from kubesched.report.tables import CAPACITY_COLUMNS, capacity_rows, pending_table

POD_COLUMNS = (
    ("namespace", "namespace"),
    ("name", "pod"),
    ("node", "drained node"),
    ("owner", "controller"),
    ("outcome", "outcome"),
    ("detail", "why / what kubectl drain needs"),
    ("evictedAt", "evicted at, virtual s after the cordon"),
)
REPLACEMENT_COLUMNS = (
    ("namespace", "namespace"),
    ("name", "pod"),
    ("owner", "controller"),
    ("node", "placed on"),
    ("pool", "node pool"),
    ("zone", "zone"),
    ("reason", "outcome"),
    ("message", "last scheduling message"),
)
POOL_NOTE = (
    "Pools are read from the Karpenter, GKE, EKS and AKS pool labels, else node.kubernetes.io/instance-type; "
    "zones from topology.kubernetes.io/zone."
)


def write_drain_report(result: DrainResult, path: str, params: dict[str, Any]) -> None:
    drained = set(result.nodes)
    before = capacity_rows(result.usage_before)
    after = capacity_rows([n for n in result.usage_after if n["name"] not in drained])
    doc = result.to_json()
    sections: list[Section] = [_outcomes_figure(doc)]
    sections.append(Table("pods", "Pods on the drained nodes", POD_COLUMNS, doc["pods"]))
    where = {n["name"]: n for n in result.usage_after}
    replacements = []
    for r in doc["replacements"]:
        node = where.get(r["node"] or "", {})
        replacements.append({**r, "pool": node.get("pool"), "zone": node.get("zone")})
    sections.append(Table("replacements", "Replacements (pod → node)", REPLACEMENT_COLUMNS, replacements))
    sections.append(pending_table([r for r in replacements if not r["node"]]))
    for key, title, rows, when in (
        ("capacity-before", "before the drain, every node", before, "Before the cordon. "),
        ("capacity-after", "after the drain, the nodes that stay", after, "At the end, without the drained nodes. "),
    ):
        sections.append(Table(key, f"Capacity and spare {title}", CAPACITY_COLUMNS, rows, note=when + POOL_NOTE))
    share = _share_figure(before, after)
    sections.append(("Requested share of the cluster, before and after (the nodes that stay)", share))
    stats = {k: doc[k] for k in ("fits", "evicted", "blocked", "replacementsPending", "virtualSeconds")}
    write(path, page("kubesched drain", {**params, "nodes": ", ".join(result.nodes), **stats}, sections))


def _outcomes_figure(doc: dict[str, Any]) -> tuple[str, go.Figure]:
    counts = {
        "evicted": doc["evicted"],
        "refused by a budget": doc["blocked"],
        "left (DaemonSet, mirror)": doc["left"],
        "replacements placed": doc["replacementsPlaced"],
        "replacements pending": doc["replacementsPending"],
    }
    fig = go.Figure(go.Bar(x=list(counts), y=list(counts.values())))
    fig.update_layout(xaxis_title="", yaxis_title="pods")
    return "What became of the drained nodes' pods", fig


def _share_figure(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> go.Figure:
    fig = go.Figure()
    for label, rows in (("before", before), ("after", after)):
        mine = [r for r in rows if r["by"] == "cluster"]
        fig.add_bar(name=label, x=[r["resource"] for r in mine], y=[r["requestedPct"] for r in mine])
    fig.update_layout(barmode="group", xaxis_title="resource", yaxis_title="requested, % of allocatable")
    return fig
