"""The per-plugin table of one scheduling attempt, read from kube-scheduler-simulator's result
annotations (decoded by ``resultstore.parse``): ``simulate --explain`` and ``kubesched explain``
print the same table from the same data, and the web UI shows the same verdict lines."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

EXTENSION_POINTS = (
    ("prefilter-result-status", "PreFilter"),
    ("prescore-result", "PreScore"),
    ("reserve-result", "Reserve"),
    ("permit-result", "Permit"),
    ("prebind-result", "PreBind"),
    ("bind-result", "Bind"),
)


AFTER_FILTER = (
    ("reserve-result", "Reserve"),
    ("permit-result", "Permit"),
    ("prebind-result", "PreBind"),
    ("bind-result", "Bind"),
)
FINE = ("", "success", "wait")
NOMINATED = "preemption victim"  # the simulator's PostFilterNominatedMessage (resultstore.VICTIM)
PREEMPTION = " preemption: "  # FitError's separator before the PostFilter message (since v1.28)


def pending_message(pod: dict[str, Any]) -> str:
    """The pod's FailedScheduling message, from its PodScheduled condition while that is False."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    cond: dict[str, Any] = next((c for c in conditions if c.get("type") == "PodScheduled"), {})
    return str(cond.get("message") or "") if cond.get("status") == "False" else ""


def verdict(parsed: dict[str, Any], message: str = "") -> list[tuple[str, str]]:
    """What the attempt came to, as (label, text) lines: where the pod went or why not (the pod's
    FailedScheduling ``message`` when known), whether scoring was skipped, and what preemption did.
    Follows ``schedulePod``: one feasible node is selected without scoring; a FitError's message
    carries PostFilter's after ``preemption:``."""
    filt: dict[str, dict[str, str]] = parsed.get("filter-result") or {}
    final = parsed.get("finalscore-result") or {}
    selected = parsed.get("selected-node") or parsed.get("selectedNode") or ""
    feasible = [n for n, v in filt.items() if all(x == "passed" for x in v.values())]
    more = parsed.get("filter-result-groups") or []
    out: list[tuple[str, str]] = []
    failed = [
        f"{point} {plugin}: {status}"
        for key, point in AFTER_FILTER
        for plugin, status in sorted((parsed.get(key) or {}).items())
        if status not in FINE
    ]
    fit, _, preemption = message.partition(PREEMPTION)
    if selected and failed:
        out.append(("Verdict", f"{selected} was selected, then {'; '.join(failed)}"))
    elif selected:
        out.append(("Verdict", f"scheduled on {selected}"))
    elif fit:
        out.append(("Verdict", f"not scheduled: {fit.strip()}"))
    elif filt and not feasible and not more:
        out.append(("Verdict", f"not scheduled: no node passed Filter (0/{len(filt)})"))
    else:
        out.append(("Verdict", "not scheduled"))
    if selected and not final and len(feasible) == 1 and not more:
        out.append(("Scoring", "skipped: only one node passed Filter, and a single feasible node is not scored"))
    if not selected:
        post: dict[str, dict[str, str]] = parsed.get("postfilter-result") or {}
        nominated = sorted(n for n, v in post.items() if NOMINATED in v.values())
        if nominated:
            out.append(("Preemption", f"nominated {nominated[0]}: lower-priority pods there are evicted to make room"))
        elif preemption:
            out.append(("Preemption", preemption.strip()))
        elif post:
            out.append(("Preemption", f"no node among {len(post)} where evicting lower-priority pods makes room"))
    return out


def total_of(final: dict[str, str]) -> int:
    """A node's final score: the sum of its weighted normalized scores (extenders' excluded)."""
    return sum(int(v) for v in final.values())


def node_rows(parsed: dict[str, Any]) -> list[tuple[str, dict[str, str], dict[str, str], dict[str, str]]]:
    """(node, filter verdicts, raw scores, final scores), the selected node first, then the
    scored nodes best first, then the others in the order they were written."""
    filt: dict[str, dict[str, str]] = parsed.get("filter-result") or {}
    score: dict[str, dict[str, str]] = parsed.get("score-result") or {}
    final: dict[str, dict[str, str]] = parsed.get("finalscore-result") or {}
    selected = parsed.get("selected-node") or parsed.get("selectedNode") or ""
    names = list(filt)
    names.sort(key=lambda n: (n != selected, n not in final, -total_of(final.get(n, {}))))
    return [(n, filt[n], score.get(n, {}), final.get(n, {})) for n in names]


def print_attempt(console: Console, title: str, parsed: dict[str, Any], message: str = "") -> None:
    """One attempt: its verdict, the extension points' statuses, then a row per node: the plugin
    that filtered it out and why, or each score plugin's raw score → weighted normalized score."""
    console.print()
    console.print(Text(title, style="bold"))
    for label, text in verdict(parsed, message):
        console.print(Text(f"  {label}: {text}"))
    for key, point in EXTENSION_POINTS:
        statuses = parsed.get(key) or {}
        if statuses:
            ran = [f"{p}: {v}" for p, v in sorted(statuses.items()) if v]
            skipped = sorted(p for p, v in statuses.items() if not v)
            line = ", ".join(ran) + (f" (skipped: {', '.join(skipped)})" if skipped else "")
            console.print(Text(f"  {point}: {line}"))
    narrowed = parsed.get("prefilter-result") or {}
    for plugin, nodes in sorted(narrowed.items()):
        console.print(Text(f"  PreFilter {plugin} kept only: {', '.join(nodes)}"))
    t = Table()
    t.add_column("NODE")
    t.add_column("FILTER")
    t.add_column("SCORE (raw → normalized × weight)")
    t.add_column("TOTAL", justify="right")
    selected = parsed.get("selected-node") or parsed.get("selectedNode") or ""
    for node, verdicts, raw, final in node_rows(parsed):
        failed = [f"{p}: {v}" for p, v in verdicts.items() if v != "passed"]
        scores = ", ".join(f"{p} {raw.get(p, '')} → {final.get(p, '')}" for p in final)
        total = str(total_of(final)) if final else ""
        name = Text(node + (" ✔" if node == selected else ""), style="bold green" if node == selected else "")
        t.add_row(name, Text("; ".join(failed) or "passed"), Text(scores), total)
    for group in parsed.get("filter-result-groups") or []:
        examples = ", ".join(group.get("examples") or [])
        what = group["reason"] if not group.get("plugin") else f"{group['plugin']}: {group['reason']}"
        t.add_row(Text(f"{group['nodes']} more nodes (e.g. {examples})"), Text(what), Text(""), "")
    console.print(t)
