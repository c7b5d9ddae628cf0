"""The charts the reports share: scheduling attempts, latency and time per extension point (from
the scheduler_* metrics), the reasons pods were left pending, and the requested share per group."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go


def bar(labels: Sequence[str], values: Sequence[float], *, horizontal: bool = False, name: str = "") -> go.Figure:
    if horizontal:
        return go.Figure(go.Bar(x=list(values), y=list(labels), orientation="h", name=name))
    return go.Figure(go.Bar(x=list(labels), y=list(values), name=name))


def metrics_figures(metrics: dict[str, Any]) -> list[tuple[str, go.Figure]]:
    """Scheduling attempts by result and their latency percentiles (scheduler_* metrics)."""
    out: list[tuple[str, go.Figure]] = []
    attempts = metrics.get("scheduleAttempts") or {}
    fig = bar(list(attempts), list(attempts.values()))
    fig.update_layout(xaxis_title="result/profile", yaxis_title="attempts (scheduler_schedule_attempts_total)")
    out.append(("Scheduling attempts", fig))
    durations = metrics.get("attemptDurationSeconds") or {}
    fig = go.Figure()
    for q in ("p50", "p90", "p99"):
        fig.add_bar(name=q, x=list(durations), y=[(durations[k].get(q) or 0.0) * 1000 for k in durations])
    fig.update_layout(
        barmode="group",
        xaxis_title="result/profile",
        yaxis_title="attempt duration, ms (wall)",
        legend_title="quantile",
    )
    out.append(("Scheduling attempt latency (scheduler_scheduling_attempt_duration_seconds)", fig))
    points = metrics.get("extensionPoints") or {}
    fig = bar(list(points), [points[p]["seconds"] for p in points])
    fig.update_layout(xaxis_title="extension point", yaxis_title="seconds in all (wall clock)")
    out.append(("Time per extension point (scheduler_framework_extension_point_duration_seconds)", fig))
    fig = bar(
        ["preemption attempts", "victims"],
        [metrics.get("preemptionAttempts", 0), metrics.get("preemptionVictims", 0)],
    )
    fig.update_layout(yaxis_title="pods")
    out.append(("Preemptions", fig))
    return out


def reasons_figure(reasons: dict[str, int]) -> go.Figure:
    items = sorted(reasons.items(), key=lambda kv: kv[1])[-15:] or [("none", 0)]
    fig = bar([k for k, _ in items], [v for _, v in items], horizontal=True)
    fig.update_layout(xaxis_title="node verdicts (nodes × pods), summed over the pods left pending", yaxis_title="")
    return fig


def requested_share_figures(rows: Sequence[dict[str, Any]]) -> list[tuple[str, go.Figure]]:
    """Per grouping with more than one group: each resource's requested share, one bar per group."""
    out: list[tuple[str, go.Figure]] = []
    for by in dict.fromkeys(r["by"] for r in rows):
        mine = [r for r in rows if r["by"] == by]
        groups = list(dict.fromkeys(r["group"] for r in mine))
        if len(groups) < 2:
            continue
        fig = go.Figure()
        for res in dict.fromkeys(r["resource"] for r in mine):
            of = {r["group"]: r for r in mine if r["resource"] == res}
            fig.add_bar(
                name=res,
                x=groups,
                y=[of[g]["requestedPct"] if g in of else None for g in groups],
            )
        fig.update_layout(
            barmode="group", xaxis_title=by, yaxis_title="requested, % of allocatable", legend_title="resource"
        )
        out.append((f"Requested share by {by} (spare = the rest; the capacity table has the amounts)", fig))
    return out
