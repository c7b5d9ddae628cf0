"""What ``kubesched size``, ``drain`` and ``diff`` print: their text, and ``size``'s JSON (drain's and
diff's JSON are their results' own ``to_json``/``as_dict``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TextIO

from kubesched.planning.diff import SIMULATE, Diff
from kubesched.planning.drain import DrainResult
from kubesched.planning.size import Sizing, reasons

UNPLACEABLE_SHOWN = 10  # pods named one by one; the rest are counted


def cheapest(results: Sequence[Sizing]) -> Sizing | None:
    """The template whose count places every pod at least cost (fewer nodes among equals); None
    when no template places them all."""
    sized = [r for r in results if r.answer is not None]
    return min(sized, key=lambda r: (r.cost, r.answer)) if sized else None


def size_json(results: Sequence[Sizing]) -> dict[str, Any]:
    best = cheapest(results)

    def doc(r: Sizing) -> dict[str, Any]:
        return {
            "template": r.template.name,
            "file": r.template.source,
            "nodes": r.answer,  # None: no count places every pod
            "nodesForTheRest": r.nodes if r.unfixable else None,
            "costPerNode": r.template.cost,
            "cost": r.cost,
            # a trial cut short stopped at its first pending pod: whether it fits is all it says;
            # setApart is the widest trial that found the pods no count places
            "trials": [
                {"nodes": t.count, "fits": t.fits, "cutShort": t.cut_short, "setApart": t.set_apart} for t in r.trials
            ],
            "pendingWithOneFewer": r.short_of.pending if r.short_of else [],
            "unplaceable": r.unfixable,
        }

    return {
        "nodes": best.answer if best else None,
        "template": best.template.name if best else None,
        "cost": best.cost if best else None,
        "options": [doc(r) for r in results],
    }


def print_size(results: Sequence[Sizing], max_nodes: int, out: TextIO) -> None:
    for r in results:
        name = r.template.name
        trials = f"{len(r.trials)} trials"
        if r.unfixable:
            print(f"{name}: none: {len(r.unfixable)} pod(s) fit on no number of {name} nodes ({trials})", file=out)
            _print_unplaceable(r, out)
            if r.nodes is not None and len(r.trials) > 1:
                print(f"  the other pods need {r.nodes} node(s)", file=out)
        elif r.nodes is None:
            print(f"{name}: none: no count up to {max_nodes} leaves every pod placed ({trials})", file=out)
        elif r.nodes == 0:
            print(f"{name}: 0 node(s): the cluster places every pod already ({trials})", file=out)
        else:
            cost = f" (cost {r.cost:g})" if len(results) > 1 or r.template.cost != 1 else ""
            print(f"{name}: {r.nodes} node(s){cost} leave no pod pending ({trials})", file=out)
        if r.answer is not None and r.short_of is not None and r.short_of.pending:
            print(f"  with {r.answer - 1}: {len(r.short_of.pending)} pod(s) pending", file=out)
            for message, n in reasons(r.short_of.pending)[:5]:
                print(f"    {n} × {message}", file=out)
    best = cheapest(results)
    if best is not None and len(results) > 1:
        print(f"cheapest: {best.answer} × {best.template.name} (cost {best.cost:g})", file=out)
    elif best is None:
        print("no template places every pod", file=out)


def _print_unplaceable(r: Sizing, out: TextIO) -> None:
    """Each pod no count places, by name, with what it asks beyond one node, else its message alone
    on one node, else (it fits alone: other pods stand in its way) its message at the widest count."""
    for p in r.unfixable[:UNPLACEABLE_SHOWN]:
        pod = f"{p['namespace']}/{p['name']}"
        if p.get("shortfall"):
            print(f"  {pod}: {'; '.join(p['shortfall'])}", file=out)
        elif p.get("alone"):
            print(f"  {pod}: alone on one {r.template.name} node: {p['alone']}", file=out)
        else:
            widest = p["message"] or p["reason"]
            print(f"  {pod}: fits alone on one node, not beside the rest of the workload: {widest}", file=out)
    if len(r.unfixable) > UNPLACEABLE_SHOWN:
        print(f"  … and {len(r.unfixable) - UNPLACEABLE_SHOWN} more (-o json lists them all)", file=out)


def print_drain(result: DrainResult, out: TextIO) -> None:
    evicted = [p for p in result.pods if p.outcome == "evicted"]
    left = [p for p in result.pods if p.outcome == "left"]
    print(
        f"drain of {len(result.nodes)} node(s): {len(evicted)} pod(s) evicted in {result.seconds:g}s (virtual), "
        f"{len(left)} left (DaemonSet or mirror), {len(result.blocked)} refused by a disruption budget",
        file=out,
    )
    placed = [r for r in result.replacements if r.node]
    print(f"replacements: {len(placed)} placed, {len(result.pending)} pending", file=out)
    for r in placed:
        print(f"  {r.namespace}/{r.name} ({r.owner}) → {r.node}", file=out)
    for message, n in result.pending_reasons():
        print(f"  {n} pending × {message}", file=out)
    for p in result.blocked:
        print(f"  blocked: {p.namespace}/{p.name} on {p.node}: {p.detail}", file=out)
    for p in result.lost:
        print(
            f"  not recreated: {p.namespace}/{p.name} on {p.node} (no controller; kubectl drain needs --force)",
            file=out,
        )
    for owner, n in result.awaited.items():
        print(f"  {n} evicted pod(s) of {owner} not recreated by the end (the controller waits)", file=out)
    if result.pending_before:
        print(f"({result.pending_before} pod(s) were pending before the drain)", file=out)
    if result.others:
        pending = sum(1 for r in result.others if r.node is None)
        print(
            f"({len(result.others)} other pod(s) created meanwhile, replacing no evicted pod; {pending} pending)",
            file=out,
        )
    print("their pods fit elsewhere" if result.fits else "their pods do not all fit elsewhere", file=out)


def print_diff(d: Diff, out: TextIO) -> None:
    if d.kind == SIMULATE:
        print(f"moved: {len(d.moved)}", file=out)
        for m in d.moved:
            print(f"  {m['pod']}: {m['from']} → {m['to']}", file=out)
        print(f"went pending: {len(d.went_pending)}", file=out)
        for m in d.went_pending:
            print(f"  {m['pod']} (was on {m['from']}): {m['message'] or m['reason']}", file=out)
        print(f"placed: {len(d.got_placed)}", file=out)
        for m in d.got_placed:
            print(f"  {m['pod']} → {m['to']} (before: {m['reasonBefore']})", file=out)
        only = ", ".join(f"{len(v)} only in {k.upper()}" for k, v in d.only_in.items() if v)
        print(f"unchanged: {d.unchanged}" + (f"; {only}" if only else ""), file=out)
        return
    axis = "arrivedPct" if d.curve and "arrivedPct" in d.curve[0] else "time"
    rows = [
        ["ARRIVED %" if axis == "arrivedPct" else "TIME (s)", "ALLOCATED % A", "B", "Δ", "FRAGMENTED % A", "B", "Δ"]
    ]
    for pt in d.curve:
        if axis == "arrivedPct" and pt[axis] % 10:
            continue
        cells = [str(pt[axis])]
        for measure in ("allocatedPct", "fragmentationPct"):
            values = pt.get(measure) or {}
            cells += [f"{values.get(k, 0):.2f}" for k in ("a", "b", "delta")]
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip(), file=out)
