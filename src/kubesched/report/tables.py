"""The planner's tables: capacity per node pool, zone and GPU model (from each node's use at the
end of a run, ``simulate/usage.py``), and the pods left pending grouped by their reason."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from kubesched.report.page import Table
from kubesched.simulate.usage import GPUS, unit_of

# how the nodes are grouped: (the table's word, the node's key; None: all nodes in one group)
DIMENSIONS: tuple[tuple[str, str | None], ...] = (
    ("cluster", None),
    ("node pool", "pool"),
    ("zone", "zone"),
    ("GPU model", "gpuModel"),
)
FIRST = ("cpu", "memory", GPUS)  # then the others by name, pods and ephemeral storage last
LAST = ("pods", "ephemeral-storage")
EXAMPLES = 5

CAPACITY_COLUMNS = (
    ("by", "grouped by"),
    ("group", "group"),
    ("nodes", "nodes"),
    ("resource", "resource"),
    ("unit", "unit"),
    ("allocatable", "allocatable"),
    ("requested", "requested"),
    ("spare", "spare"),
    ("largestSpare", "largest spare on one node"),
    ("requestedPct", "requested, % of allocatable"),
)


def resource_order(names: Iterable[str]) -> list[str]:
    names = set(names)
    middle = sorted(n for n in names if n not in FIRST and n not in LAST)
    return [n for n in FIRST if n in names] + middle + [n for n in LAST if n in names]


def capacity_rows(nodes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per group and resource: allocatable, requested, spare (in the resource's unit), the most
    spare on any one node of the group (what the largest pod that still fits could ask), and the
    requested share. A dimension no node has a label for is left out; GPU models count only the
    nodes with one."""
    resources = resource_order({r for n in nodes for r in n.get("allocatable", {})})
    rows: list[dict[str, Any]] = []
    for word, key in DIMENSIONS:
        if key is not None and not any(n.get(key) for n in nodes):
            continue
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for n in nodes:
            group = "all nodes" if key is None else str(n.get(key) or "")
            if key == "gpuModel" and not group:
                continue
            groups[group or "(none)"].append(n)
        for group in sorted(groups):
            members = groups[group]
            for res in resources:
                alloc = [float(n["allocatable"].get(res, 0)) for n in members]
                used = [float(n["requested"].get(res, 0)) for n in members]
                total = sum(alloc)
                if total == 0:
                    continue
                requested = sum(used)
                rows.append(
                    {
                        "by": word,
                        "group": group,
                        "nodes": len(members),
                        "resource": res,
                        "unit": unit_of(res)[0],
                        "allocatable": round(total, 2),
                        "requested": round(requested, 2),
                        "spare": round(total - requested, 2),
                        "largestSpare": round(max(a - u for a, u in zip(alloc, used, strict=True)), 2),
                        "requestedPct": round(100 * requested / total, 1),
                    }
                )
    return rows


def capacity_table(nodes: Sequence[dict[str, Any]]) -> Table:
    return Table(
        "capacity",
        "Capacity and spare by node pool, zone and GPU model",
        CAPACITY_COLUMNS,
        capacity_rows(nodes),
        note="At the end of the run. Pools are read from the Karpenter, GKE, EKS and AKS pool labels, "
        "else node.kubernetes.io/instance-type; zones from topology.kubernetes.io/zone.",
    )


def pending_groups(pods: Iterable[dict[str, Any]], name_key: str = "name") -> list[dict[str, Any]]:
    """The pods left pending, one row per reason (its full message), most pods first."""
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for p in pods:
        groups[(str(p.get("reason") or "Unschedulable"), str(p.get("message") or ""))].append(str(p[name_key]))
    return [
        {"reason": reason, "message": message, "pods": len(names), "examples": ", ".join(names[:EXAMPLES])}
        for (reason, message), names in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]


def pending_table(pods: Iterable[dict[str, Any]], name_key: str = "name") -> Table:
    return Table(
        "pending",
        "Pending pods by reason",
        (("pods", "pods"), ("reason", "reason"), ("message", "last scheduling message"), ("examples", "examples")),
        pending_groups(pods, name_key),
    )
