"""``sweep --report``: the grid's summary and every run as tables (CSV), each policy's curve per
workload (the mean over seeds, a band from the lowest to the highest seed), and the summary as
bars."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from kubesched.replay.output import column_title
from kubesched.replay.sweep import SUMMARY_KEYS
from kubesched.report.page import Section, Table, page, write


def write_sweep_report(
    rows: list[dict[str, Any]], summary: list[dict[str, Any]], path: str, params: dict[str, Any]
) -> None:
    """One curve per policy (mean over seeds, min-max band), per workload; the summary as bars."""
    sections: list[Section] = []
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
                yaxis_title=f"{label} (% of the cluster's GPUs)",
            )
            sections.append((f"{label} on {w} (mean over seeds; band: min to max)", fig))
    fig = go.Figure()
    for key, name in (("allocatedPctAt100", "at 100 % arrived"), ("allocatedPctAtLoad", "at the full load")):
        fig.add_bar(
            name=name,
            x=[f"{e['workload']} / {e['policy']}" for e in summary],
            y=[e[key] or 0 for e in summary],
            error_y={"type": "data", "array": [e[key + "Std"] or 0 for e in summary]},
        )
    fig.update_layout(
        barmode="group", yaxis_title="GPU allocated, % of the cluster's GPUs", xaxis_title="workload / policy"
    )
    sections.append(("GPU allocation by policy (mean ± standard deviation over seeds)", fig))
    table = {
        **params,
        "runs": len(rows),
        "replaySeconds": round(sum(r["wallSeconds"] for r in rows), 1),
    }
    load_pct = round(float(params.get("load") or 1.3) * 100)
    columns = [("workload", "workload"), ("policy", "policy"), ("runs", "runs")]
    # the means over fewer runs than the row has: runs that never reached that measure
    partial = [
        f"{e['workload']} {e['policy']}, {column_title(k, load_pct).lower()}: {e[k + 'Runs']} of {e['runs']}"
        for e in summary
        for k in SUMMARY_KEYS
        if e.get(k + "Runs", e["runs"]) != e["runs"]
    ]
    for key in SUMMARY_KEYS:
        title = column_title(key, load_pct).lower()
        columns += [(key, title), (key + "Std", "± sd")]
    sections.insert(
        0,
        Table(
            "summary",
            "Summary (mean over seeds, % of the cluster's GPUs)",
            columns,
            summary,
            note="Each ± sd column is the standard deviation over seeds of the column before it."
            + (" Means over the runs that reached the measure only: " + "; ".join(partial) + "." if partial else ""),
        ),
    )
    run_columns = [("workload", "workload"), ("policy", "policy"), ("seed", "seed")]
    run_columns += [(k, column_title(k, load_pct).lower()) for k in SUMMARY_KEYS]
    run_columns.append(("wallSeconds", "wall seconds"))
    sections.insert(1, Table("runs", "Every run", run_columns, rows))
    write(path, page("kubesched sweep", table, sections))


def _policy_order(name: str) -> tuple[int, str]:
    order = ["default", "Random", "DotProduct", "GpuClustering", "GpuPacking", "BestFit", "FGD"]
    return (order.index(name) if name in order else len(order), name)
