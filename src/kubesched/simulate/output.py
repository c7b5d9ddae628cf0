"""Rendering a simulation: the stable JSON contract, a human table, and ``--explain``.

``--explain`` uses kube-scheduler-simulator's annotation shapes: ``filter-result`` (node →
plugin → "passed" or reason), ``score-result`` (node → plugin → normalized score) and
``finalscore-result`` (node → plugin → weighted score, plus the total).
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.table import Table

from kubesched.scheduler.scheduler import Explanation
from kubesched.simulate.runner import SimulationResult


def explain_dict(exp: Explanation) -> dict[str, Any]:
    final: dict[str, dict[str, int]] = {}
    for node, scores in exp.score.items():
        final[node] = {p: s * exp.weights.get(p, 1) for p, s in scores.items()}
        final[node]["total"] = exp.final_score.get(node, 0)
    return {
        "filter-result": exp.filter,
        "score-result": exp.score,
        "finalscore-result": final,
        "selectedNode": exp.selected,
    }


def to_json(result: SimulationResult) -> str:
    doc: dict[str, Any] = {
        "pods": result.pods,
        "deletedPods": result.deleted_pods,
        "rejected": result.rejected,
        "events": result.events,
        "stats": result.stats,
    }
    if result.explain:
        doc["explain"] = {k: explain_dict(v) for k, v in result.explain.items()}
    return json.dumps(doc, indent=2)


def print_table(result: SimulationResult, console: Console) -> None:
    table = Table(title="Pods", show_lines=False)
    for col in ("NAMESPACE", "NAME", "PRIORITY", "NODE", "REASON"):
        table.add_column(col, overflow="fold")
    for p in result.pods:
        table.add_row(
            p["namespace"], p["name"], str(p["priority"]), p["nodeName"] or "[yellow]<pending>[/]", p["message"] or ""
        )
    console.print(table)
    for d in result.deleted_pods:
        console.print(f"[magenta]deleted[/] {d['namespace']}/{d['name']} from {d['nodeName'] or '-'}: {d['reason']}")
    for r in result.rejected:
        console.print(f"[red]rejected[/] {r['kind']} {r['namespace'] or ''}/{r['name']}: {r['message']}")
    s = result.stats
    console.print(
        f"bound {s['bound']}/{s['pods']}, pending {s['pending']}, nodes used {s['nodesUsed']}/{s['nodes']}, "
        f"attempts {s['attempts']}, virtual time {s['virtualSeconds']:.0f}s, wall {s['wallSeconds']:.3f}s"
        + (f", {s['podsPerSecond']} pods/s" if s.get("podsPerSecond") else "")
    )
    for key, exp in result.explain.items():
        console.print(f"\n[bold]explain {key}[/] (first attempt; selected: {exp.selected or 'none'})")
        t = Table()
        t.add_column("NODE")
        t.add_column("FILTER")
        t.add_column("SCORES (normalized)")
        t.add_column("FINAL")
        for node, verdicts in exp.filter.items():
            failed = [f"{p}: {v}" for p, v in verdicts.items() if v != "passed"]
            scores = ", ".join(f"{p}={v}" for p, v in exp.score.get(node, {}).items())
            t.add_row(node, "; ".join(failed) or "passed", scores, str(exp.final_score.get(node, "")))
        console.print(t)
