"""``kubesched size --report``: the sizing answer as a planner sends it. Per node template, the
smallest count that leaves no pod pending and what it costs; the trials of the bisection (count →
whether every pod was placed); the pods one node fewer leaves pending, grouped by message (what
the last node fixes); and the pods no count of the template places, each with its own cause."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from kubesched.report.page import Section, Table, page, write
from kubesched.report.tables import pending_groups

OPTION_COLUMNS = (
    ("template", "node template"),
    ("file", "file"),
    ("nodes", "nodes to add"),
    ("nodesForTheRest", "nodes for the pods that fit"),
    ("costPerNode", "cost per node"),
    ("cost", "cost"),
    ("trials", "trials"),
    ("cheapest", "cheapest"),
)
TRIAL_COLUMNS = (
    ("template", "node template"),
    ("nodes", "nodes"),
    ("fits", "every pod placed"),
    ("cutShort", "cut short at the first pending pod"),
    ("setApart", "found the pods no count places"),
)
UNPLACEABLE_COLUMNS = (
    ("template", "node template"),
    ("pod", "pod"),
    ("cause", "what it asks beyond one node"),
    ("alone", "alone on one node of the template"),
    ("message", "at the most nodes tried"),
)
GROUP_COLUMNS = (
    ("template", "node template"),
    ("pods", "pods"),
    ("reason", "reason"),
    ("message", "last scheduling message"),
    ("examples", "examples"),
)


def write_size_report(doc: dict[str, Any], path: str, params: dict[str, Any]) -> None:
    """``doc``: what ``kubesched size -o json`` prints (``planning/output.size_json``)."""
    options = doc["options"]
    rows = [
        {
            **o,
            "cost": None if o["cost"] is None else round(o["cost"], 6),  # 6 × 0.192 is 1.1520000000000001
            "trials": len(o["trials"]),
            "cheapest": o["template"] == doc["template"] and o["nodes"] is not None,
        }
        for o in options
    ]
    sections: list[Section] = [
        Table("options", "The answer per node template", OPTION_COLUMNS, rows, note=_note(doc)),
        ("The bisection's trials: nodes tried and whether every pod was placed", _trials_figure(options)),
        Table(
            "trials",
            "Trials",
            TRIAL_COLUMNS,
            [{"template": o["template"], **t} for o in options for t in o["trials"]],
        ),
        Table(
            "short",
            "Pending with one node fewer, by reason (what the last node fixes)",
            GROUP_COLUMNS,
            [g for o in options for g in _groups(o["template"], o["pendingWithOneFewer"])],
        ),
        Table(
            "unplaceable",
            "Pods no number of the template's nodes places, and why",
            UNPLACEABLE_COLUMNS,
            [
                {
                    "template": o["template"],
                    "pod": f"{p['namespace']}/{p['name']}",
                    "cause": "; ".join(p.get("shortfall") or []),
                    "alone": p.get("alone") or "",
                    "message": p["message"] or p["reason"],
                }
                for o in options
                for p in o["unplaceable"]
            ],
        ),
    ]
    summary = {"nodes": doc["nodes"], "template": doc["template"], "cost": doc["cost"]}
    write(path, page("kubesched size", {**params, **summary}, sections))


def _note(doc: dict[str, Any]) -> str:
    if doc["nodes"] is None:
        return "No template places every pod: see the pods no count places, below."
    return f"Cheapest: {doc['nodes']} × {doc['template']} (cost {doc['cost']:g})."


def _groups(template: str, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"template": template, **g} for g in pending_groups(pods)]


def _trials_figure(options: list[dict[str, Any]]) -> go.Figure:
    """Each template's search trials in the order of their node count, a filled marker where every
    pod was placed and an open one where a pod was left pending (the trial that set pods apart is
    in the table, not here: it had pods no count places)."""
    fig = go.Figure()
    counts: set[int] = set()
    for o in options:
        trials = sorted(
            {t["nodes"]: t for t in o["trials"] if not t.get("setApart")}.values(), key=lambda t: t["nodes"]
        )
        counts.update(t["nodes"] for t in trials)
        fig.add_scatter(
            name=o["template"],
            mode="markers",
            x=[str(t["nodes"]) for t in trials],
            y=[1 if t["fits"] else 0 for t in trials],
            marker={"size": 10, "symbol": ["circle" if t["fits"] else "circle-open" for t in trials]},
            hovertemplate="%{x} nodes: %{text}<extra>%{fullData.name}</extra>",
            text=["every pod placed" if t["fits"] else "a pod pending" for t in trials],
        )
    # the counts tried as categories in their order: on a linear axis the widest trial (1,000
    # nodes by default) pressed the search's 0, 1, 2, 4 ... into one corner
    order = [str(n) for n in sorted(counts)]
    fig.update_layout(
        xaxis={"title": "nodes of the template", "type": "category", "categoryorder": "array", "categoryarray": order},
        yaxis={"title": "every pod placed", "tickvals": [0, 1], "ticktext": ["no", "yes"]},
        legend_title="node template",
    )
    return fig
