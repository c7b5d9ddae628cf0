"""Rendering a simulation: the stable JSON contract, the tables a person reads, and ``--explain``.

``--explain`` uses kube-scheduler-simulator's annotation shapes: ``filter-result`` (node →
plugin → "passed" or reason), ``score-result`` (node → plugin → normalized score) and
``finalscore-result`` (node → plugin → weighted score, plus the total), for the first attempt,
and every attempt under ``result-history``.

Names and messages are user data: they are never read as markup, and nothing in them is
highlighted. Past ``RICH_MAX_ROWS`` pods the boxed table gives way to the plain aligned writer
(kubectl's style), which costs a few microseconds a row.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kubesched.attempt_table import print_attempt
from kubesched.scheduler.parts import Explanation
from kubesched.scheduler.resultstore import parse
from kubesched.simulate.runner import SimulationResult

RICH_MAX_ROWS = 500
FORMATS = ("table", "wide", "plain", "json")


def explain_dict(exp: Explanation) -> dict[str, Any]:
    """One attempt as kube-scheduler-simulator writes it on the pod (its annotations' JSON,
    decoded), with when it ran and the node it selected."""
    parsed = parse(exp.results.annotations()) or {}
    parsed.pop("selected-node", None)
    return {
        "attempt": exp.attempt,
        "virtualSeconds": exp.time,
        **parsed,
        "selectedNode": exp.results.selected_node or None,
        **({"batchHint": exp.hint} if exp.hint else {}),
    }


def _explained(history: list[Explanation]) -> dict[str, Any]:
    return {**explain_dict(history[0]), "result-history": [explain_dict(e) for e in history]}


WALL_METRICS = ("attemptDurationSeconds", "extensionPoints")


def to_json(result: SimulationResult, *, timing: bool = False, pending_only: bool = False) -> str:
    """The result as data. Timing (wall seconds, pods/s) only with ``timing``, so that the same
    input and seed always give the same bytes."""
    doc: dict[str, Any] = {
        "pods": [p for p in result.pods if not (pending_only and p["nodeName"])],
        "deletedPods": result.deleted_pods,
        "rejected": result.rejected,
        "events": result.events,
        "stats": result.stats,
        "nodes": result.nodes,
    }
    if result.pod_groups:
        doc["podGroups"] = result.pod_groups
    # the scheduler's metrics: counts and virtual-time latencies always, wall-clock durations with timing
    doc["metrics"] = {k: v for k, v in result.metrics.items() if timing or k not in WALL_METRICS}
    if timing:
        doc["timing"] = result.timing
    if result.explain:
        doc["explain"] = {k: _explained(v) for k, v in result.explain.items()}
    return json.dumps(doc, indent=2)


def _reason(p: dict[str, Any]) -> str:
    if p["nodeName"]:
        return ""
    if p.get("reason") in ("SchedulingGated", "NoProfile", "SchedulerError", "PreEnqueue"):
        return f"{p['reason']}: {p['message']}"
    return p.get("message") or ""


def _rows(result: SimulationResult, wide: bool, pending_only: bool) -> Iterable[list[str]]:
    for p in result.pods:
        if pending_only and p["nodeName"]:
            continue
        row = [p["namespace"], p["name"], str(p["priority"]), p["nodeName"] or "<pending>"]
        if wide:
            row.append(p.get("nominatedNodeName") or "<none>")
        row.append(_reason(p))
        yield row


def _columns(wide: bool) -> list[str]:
    return ["NAMESPACE", "NAME", "PRIORITY", "NODE", *(["NOMINATED NODE"] if wide else []), "REASON"]


def write_plain(rows: list[list[str]], header: list[str], out: TextIO) -> None:
    """Columns padded to their widest cell, three spaces apart, the last one unpadded."""
    widths = [len(h) for h in header[:-1]]
    for row in rows:
        for i in range(len(widths)):
            if len(row[i]) > widths[i]:
                widths[i] = len(row[i])
    fmt_parts = [f"{{{i}:<{w}}}" for i, w in enumerate(widths)]
    fmt = "   ".join([*fmt_parts, f"{{{len(widths)}}}"])
    lines = [fmt.format(*header).rstrip()]
    lines.extend(fmt.format(*row).rstrip() for row in rows)
    out.write("\n".join(lines) + "\n")


def summary_lines(result: SimulationResult) -> list[str]:
    """Two short lines (they fit 80 columns): outcome, then effort and time."""
    s, t = result.stats, result.timing
    gated = sum(1 for p in result.pods if p.get("reason") == "SchedulingGated")
    other = sum(1 for p in result.pods if p.get("reason") == "NoProfile")
    errors = sum(1 for p in result.pods if p.get("reason") == "SchedulerError")
    held = sum(1 for p in result.pods if p.get("reason") == "PreEnqueue")
    unschedulable = s["pending"] - gated - other - errors - held
    detail = [f"{unschedulable} unschedulable"] if unschedulable else []
    if errors:
        detail.append(f"{errors} with errors")
    if gated:
        detail.append(f"{gated} gated")
    if held:
        detail.append(f"{held} held at PreEnqueue")
    if other:
        detail.append(f"{other} for no profile")
    pending = f"pending {s['pending']}" + (f" ({', '.join(detail)})" if detail else "")
    first = f"bound {s['bound']}/{s['pods']}, {pending}, nodes used {s['nodesUsed']}/{s['nodes']}"
    second = f"attempts {s['attempts']}, virtual time {s['virtualSeconds']:.0f}s"
    if t.get("wallSeconds") is not None:
        rate = f", {t['podsPerSecond']:,.0f} pods/s" if t.get("podsPerSecond") else ""
        second += f"; wall {t['wallSeconds']:.3f}s{rate}"
    return [first, second, *pod_group_lines(result.pod_groups)]


def pod_group_lines(groups: list[dict[str, Any]]) -> list[str]:
    """One line per PodGroup: its policy, pods bound, and what its PodGroupInitiallyScheduled
    condition says (``kubectl get podgroups``' Status)."""
    out = []
    for g in groups:
        policy = f"gang of {g['minCount']}" if g["minCount"] is not None else "basic"
        condition = g["condition"]
        status = (
            "Pending" if condition is None else ("Scheduled" if condition["status"] == "True" else condition["reason"])
        )
        out.append(f"podgroup {g['namespace']}/{g['name']} ({policy}): {g['bound']}/{g['pods']} bound, {status}")
    return out


def print_result(
    result: SimulationResult,
    out: TextIO,
    *,
    fmt: str = "table",
    pending_only: bool = False,
    summary_only: bool = False,
    terminal: bool = False,
) -> None:
    """The human output: the pods (boxed table for small runs on a terminal, else plain), the
    deleted and rejected objects, the summary, and any ``--explain`` tables."""
    console = Console(file=out, highlight=False, soft_wrap=False, force_terminal=terminal or None)
    if not summary_only:
        wide = fmt == "wide"
        header = _columns(wide)
        rows = list(_rows(result, wide, pending_only))
        if fmt == "table" and len(rows) <= RICH_MAX_ROWS:
            table = Table(show_lines=False)
            for col in header:
                table.add_column(col, overflow="fold")
            for row in rows:
                cells = [Text(c) for c in row]
                if row[3] == "<pending>":
                    cells[3].stylize("yellow")
                table.add_row(*cells)
            console.print(table)
        else:
            write_plain(rows, header, out)
        for d in result.deleted_pods:
            console.print(
                Text.assemble(
                    ("deleted", "magenta"), f" {d['namespace']}/{d['name']} from {d['nodeName'] or '-'}: {d['reason']}"
                )
            )
        for r in result.rejected:
            where = f"{r['namespace']}/{r['name']}" if r["namespace"] else str(r["name"])
            console.print(Text.assemble(("rejected", "red"), f" {r['kind']} {where}: {r['message']}"))
    for line in summary_lines(result):
        out.write(line + "\n")
    messages = {f"{p['namespace']}/{p['name']}": p.get("message") or "" for p in result.pods}
    for key, history in result.explain.items():
        for i, exp in enumerate(history):
            # the pod's FailedScheduling message is its last attempt's
            _print_explanation(console, key, exp, len(history), messages.get(key, "") if i == len(history) - 1 else "")


def _print_explanation(console: Console, key: str, exp: Explanation, attempts: int, message: str = "") -> None:
    selected = exp.results.selected_node or "none"
    title = f"explain {key} (attempt {exp.attempt} of {attempts} at {exp.time:.0f}s; selected: {selected})"
    if exp.hint:
        title += "; the batch's hint, filtered alone, nothing scored (Opportunistic Batching)"
    print_attempt(console, title, explain_dict(exp), message)
