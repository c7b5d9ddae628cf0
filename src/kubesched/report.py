"""``--report out.html``: one self-contained HTML file of interactive plotly charts.

The page embeds plotly.js once (no network is needed to view it), then one chart per figure and a
table of the run's parameters. ``simulate``, ``replay`` and ``sweep`` each have a writer.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

from kubesched.errors import InputError

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5rem auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
table { border-collapse: collapse; font-size: 0.9rem; } td, th { border: 1px solid #ccc; padding: 0.2rem 0.6rem; }
th { background: #f4f4f4; text-align: left; } .note { color: #555; font-size: 0.9rem; }
"""


def _page(
    title: str, params: dict[str, Any], figures: Sequence[tuple[str, go.Figure]], notes: Iterable[str] = ()
) -> str:
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        "<table>",
        *(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(_text(v))}</td></tr>" for k, v in params.items()),
        "</table>",
        *(f"<p class='note'>{html.escape(n)}</p>" for n in notes),
    ]
    for i, (heading, fig) in enumerate(figures):
        fig.update_layout(template="plotly_white", height=420, margin={"l": 60, "r": 20, "t": 40, "b": 50})
        parts.append(f"<section><h2>{html.escape(heading)}</h2>")
        parts.append(
            pio.to_html(
                fig,
                include_plotlyjs=(i == 0),  # inline, once: the file stands alone
                full_html=False,
                div_id=f"plot-{i}",
                config={"displaylogo": False, "responsive": True},
            )
            + "</section>"
        )
    parts.append(f"<script>window.kubeschedPlots = {len(figures)};</script></body></html>")
    return "\n".join(parts)


def _text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the report: {exc.strerror}", file=path) from None


def _bar(labels: Sequence[str], values: Sequence[float], *, horizontal: bool = False, name: str = "") -> go.Figure:
    if horizontal:
        return go.Figure(go.Bar(x=list(values), y=list(labels), orientation="h", name=name))
    return go.Figure(go.Bar(x=list(labels), y=list(values), name=name))


def _metrics_figures(metrics: dict[str, Any]) -> list[tuple[str, go.Figure]]:
    """Scheduling attempts by result and their latency percentiles (scheduler_* metrics)."""
    out: list[tuple[str, go.Figure]] = []
    attempts = metrics.get("scheduleAttempts") or {}
    fig = _bar(list(attempts), list(attempts.values()))
    fig.update_layout(xaxis_title="result/profile", yaxis_title="scheduler_schedule_attempts_total")
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
    fig = _bar(list(points), [points[p]["seconds"] for p in points])
    fig.update_layout(xaxis_title="extension point", yaxis_title="seconds in all (wall)")
    out.append(("Time per extension point (scheduler_framework_extension_point_duration_seconds)", fig))
    fig = _bar(
        ["preemption attempts", "victims"],
        [metrics.get("preemptionAttempts", 0), metrics.get("preemptionVictims", 0)],
    )
    fig.update_layout(yaxis_title="count")
    out.append(("Preemptions", fig))
    return out


def _reasons_figure(reasons: dict[str, int]) -> go.Figure:
    items = sorted(reasons.items(), key=lambda kv: kv[1])[-15:] or [("none", 0)]
    fig = _bar([k for k, _ in items], [v for _, v in items], horizontal=True)
    fig.update_layout(xaxis_title="node verdicts, summed over the pods left pending", yaxis_title="")
    return fig


def write_replay_report(result: Any, path: str) -> None:
    """Allocation and fragmentation curves, pending pods, attempts and latency, reasons, per-node use."""
    curve = result.curve
    arrivals = result.params["mode"] == "arrivals"
    x = [pt["arrivedPct"] for pt in curve] if arrivals else [pt["time"] for pt in curve]
    xtitle = "arrived workload (% of GPU capacity)" if arrivals else "virtual time (s)"
    figures: list[tuple[str, go.Figure]] = []
    fig = go.Figure()
    fig.add_scatter(x=x, y=[pt["allocatedPct"] for pt in curve], name="GPU allocated %", mode="lines")
    fig.add_scatter(x=x, y=[pt["fragmentationPct"] for pt in curve], name="GPU fragmented % of capacity", mode="lines")
    fig.update_layout(xaxis_title=xtitle, yaxis_title="% of the cluster's GPUs")
    figures.append(("GPU allocation and fragmentation", fig))
    fig = go.Figure()
    fig.add_scatter(x=x, y=[pt["fragmentationOfIdlePct"] for pt in curve], name="fragmented % of idle", mode="lines")
    fig.update_layout(xaxis_title=xtitle, yaxis_title="% of idle GPU milli that is fragmented")
    figures.append(("Fragmentation of idle GPUs", fig))
    fig = go.Figure()
    if arrivals:
        fig.add_scatter(x=x, y=[pt.get("failed", 0) for pt in curve], name="pods that fit nowhere", mode="lines")
        fig.update_layout(yaxis_title="pods failed so far")
    else:
        fig.add_scatter(x=x, y=[pt.get("pendingUnschedulable", 0) for pt in curve], name="pending", mode="lines")
        fig.update_layout(yaxis_title="pods waiting as unschedulable")
    fig.add_scatter(x=x, y=[pt["running"] for pt in curve], name="running", mode="lines")
    fig.update_layout(xaxis_title=xtitle)
    figures.append(("Pending and running pods", fig))
    figures.extend(_metrics_figures(result.metrics))
    figures.append(("Why pods were left pending", _reasons_figure(result.reasons)))
    nodes = result.nodes or {"allocatedPct": []}
    fig = go.Figure(go.Histogram(x=nodes["allocatedPct"], nbinsx=20))
    fig.update_layout(xaxis_title="GPU allocated on the node, %", yaxis_title="GPU nodes")
    figures.append((f"Per-node GPU use ({nodes.get('when', 'at the end')})", fig))
    params = {**result.params, **{k: v for k, v in result.summary.items() if k != "final"}}
    _write(path, _page(f"kubesched replay: {Path(str(result.params['workload'])).name}", params, figures))


def write_sweep_report(
    rows: list[dict[str, Any]], summary: list[dict[str, Any]], path: str, params: dict[str, Any]
) -> None:
    """One curve per policy (mean over seeds, min-max band), per workload; the summary as bars."""
    figures: list[tuple[str, go.Figure]] = []
    workloads = sorted({r["workload"] for r in rows})
    xkey = "arrivedPct" if params.get("mode") == "arrivals" else "time"
    for key, label in (("allocatedPct", "GPU allocated %"), ("fragmentationPct", "GPU fragmented %")):
        for w in workloads:
            fig = go.Figure()
            for policy in sorted({r["policy"] for r in rows if r["workload"] == w}, key=_policy_order):
                curves = [r["curve"] for r in rows if r["workload"] == w and r["policy"] == policy]
                xs = sorted({pt[xkey] for c in curves for pt in c})
                by_x: dict[Any, list[float]] = {v: [] for v in xs}
                for c in curves:
                    for pt in c:
                        by_x[pt[xkey]].append(pt[key])
                mean = [sum(by_x[v]) / len(by_x[v]) for v in xs]
                lo = [min(by_x[v]) for v in xs]
                hi = [max(by_x[v]) for v in xs]
                line = fig.add_scatter(x=xs, y=mean, name=policy, mode="lines", legendgroup=policy)
                color = line.data[-1].line.color
                fig.add_scatter(
                    x=xs + xs[::-1],
                    y=hi + lo[::-1],
                    fill="toself",
                    opacity=0.2,
                    line={"width": 0, "color": color},
                    legendgroup=policy,
                    showlegend=False,
                    hoverinfo="skip",
                    name=f"{policy} seeds",
                )
            fig.update_layout(
                xaxis_title="arrived workload (% of GPU capacity)" if xkey == "arrivedPct" else "virtual time (s)",
                yaxis_title=label,
            )
            figures.append((f"{label} on {w} (mean over seeds; band: min to max)", fig))
    fig = go.Figure()
    for key, name in (("allocatedPctAt100", "at 100 % arrived"), ("allocatedPctAtLoad", "at the full load")):
        fig.add_bar(
            name=name,
            x=[f"{e['workload']} / {e['policy']}" for e in summary],
            y=[e[key] or 0 for e in summary],
            error_y={"type": "data", "array": [e[key + "Std"] or 0 for e in summary]},
        )
    fig.update_layout(barmode="group", yaxis_title="GPU allocated %", xaxis_title="workload / policy")
    figures.append(("GPU allocation by policy (mean ± standard deviation over seeds)", fig))
    table = {
        **params,
        "runs": len(rows),
        "replaySeconds": round(sum(r["wallSeconds"] for r in rows), 1),
    }
    _write(path, _page("kubesched sweep", table, figures))


def _policy_order(name: str) -> tuple[int, str]:
    order = ["default", "Random", "DotProduct", "GpuClustering", "GpuPacking", "BestFit", "FGD"]
    return (order.index(name) if name in order else len(order), name)


def write_simulate_report(result: Any, path: str, params: dict[str, Any]) -> None:
    """Placements, reasons, per-node CPU and memory requested, attempts and latency, preemptions."""
    figures: list[tuple[str, go.Figure]] = []
    by_reason: dict[str, int] = {}
    for p in result.pods:
        by_reason[p["reason"]] = by_reason.get(p["reason"], 0) + 1
    fig = _bar(list(by_reason), list(by_reason.values()))
    fig.update_layout(xaxis_title="outcome", yaxis_title="pods")
    figures.append(("Pods by outcome", fig))
    reasons: dict[str, int] = {}
    for p in result.pods:
        if p["reason"] == "Unschedulable" and p.get("message"):
            head = p["message"].split(". ", 1)[0].partition(": ")[2]
            for part in head.split(", "):
                n, _, why = part.partition(" ")
                if n.isdigit():
                    reasons[why.rstrip(".")] = reasons.get(why.rstrip("."), 0) + int(n)
    figures.append(("Why pods were left pending", _reasons_figure(reasons)))
    nodes = result.nodes or []
    fig = go.Figure()
    fig.add_bar(name="cpu requested %", x=[n["name"] for n in nodes], y=[n["cpuPct"] for n in nodes])
    fig.add_bar(name="memory requested %", x=[n["name"] for n in nodes], y=[n["memoryPct"] for n in nodes])
    fig.update_layout(barmode="group", xaxis_title="node", yaxis_title="% of allocatable")
    figures.append(("Per-node utilisation", fig))
    figures.extend(_metrics_figures(result.metrics))
    _write(path, _page("kubesched simulate", {**params, **result.stats}, figures))


def write_diff_report(d: Any, path: str, params: dict[str, Any]) -> None:
    """``kubesched diff --report``: a replay's curves overlaid (A and B), or a simulation's moves."""
    figures: list[tuple[str, go.Figure]] = []
    if d.kind == "replay":
        axis = "arrivedPct" if d.curve and "arrivedPct" in d.curve[0] else "time"
        x = [pt[axis] for pt in d.curve]
        xlabel = "arrived workload (% of the cluster's GPUs)" if axis == "arrivedPct" else "virtual time (s)"
        for key, title in (("allocatedPct", "GPU allocated (%)"), ("fragmentationPct", "GPU fragmented (%)")):
            fig = go.Figure()
            for side in ("a", "b"):
                fig.add_trace(go.Scatter(x=x, y=[(pt.get(key) or {}).get(side) for pt in d.curve], name=side.upper()))
            fig.update_layout(xaxis_title=xlabel, yaxis_title=title)
            figures.append((title, fig))
    else:
        counts = {"moved": len(d.moved), "went pending": len(d.went_pending), "placed": len(d.got_placed)}
        fig = _bar(list(counts), list(counts.values()), name="pods")
        fig.update_layout(yaxis_title="pods")
        figures.append(("What changed (pods)", fig))
    _write(path, _page("kubesched diff", params, figures))
