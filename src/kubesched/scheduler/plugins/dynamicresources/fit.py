"""Whether a pod's claims fit on each node (the allocation check of DynamicResources' Filter,
``plugins/dynamicresources`` with ``structured``'s allocator), vectorized over nodes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from kubesched.framework.nodes import NodeTableView
from kubesched.scheduler.plugins.dynamicresources import allocator, nodekeys
from kubesched.scheduler.plugins.dynamicresources.allocator import ClaimPlan
from kubesched.scheduler.plugins.dynamicresources.devices import DeviceTable
from kubesched.scheduler.plugins.dynamicresources.extended import requests_and_mappings, resolver_for
from kubesched.scheduler.plugins.dynamicresources.state import ExtendedClaim


def claims_fit(
    plans: list[ClaimPlan],
    nodes: NodeTableView,
    table: DeviceTable,
    taken: np.ndarray,
    shared_use: Callable[[], Mapping[int, Mapping[str, Fraction]]],
    fractional: bool,
) -> np.ndarray:
    """For every row, whether all claims to allocate fit there: free matching devices counted for
    all nodes at once (a bincount per selection); where requests compete, carry constraints or
    alternatives, share capacity or consume counters, the allocator's search decides, once per kind
    of node (``nodekeys``) where the layout allows, else once per node. ``taken``: the devices
    other claims hold; ``shared_use``: what shareable devices have given away, asked for only when
    the search runs."""
    n = len(nodes.names)
    fits = np.ones(n, bool)
    groups: dict[Any, int] = {}
    all_mode = []
    has_search_only = False
    for plan in plans:
        for alts in plan.requests:
            if len(alts) != 1 or alts[0].admin_access:
                has_search_only = True
                continue  # alternatives and admin access: only the search decides
            req = alts[0]
            if req.mode == allocator.ALL:
                all_mode.append(req.selection)
            else:
                groups[req.selection] = groups.get(req.selection, 0) + req.count
    rows = table.local_rows(nodes.index)
    local = table.local_idx
    for selection, need in groups.items():
        mask = table.usable(selection)
        free = mask & ~taken
        sel = free[local] & (rows >= 0)
        counts = np.bincount(rows[sel], minlength=n)[:n]
        counts = counts + table.shared_counts(free, nodes)
        fits &= counts >= need
    for selection in all_mode:
        mask = table.usable(selection)
        sel = mask[local] & (rows >= 0)
        total = np.bincount(rows[sel], minlength=n)[:n] + table.shared_counts(mask, nodes)
        free = np.bincount(rows[sel & ~taken[local]], minlength=n)[:n] + table.shared_counts(mask & ~taken, nodes)
        fits &= (total > 0) & (free == total)
    capacities = table.any_multi or any(r.capacity for p in plans for alts in p.requests for r in alts)
    exact = (
        not has_search_only
        and not capacities  # consumable capacity: shares decide, device by device
        and not table.consumers  # partitionable devices: counters decide, device by device
        and len(groups) + len(all_mode) <= 1
        and all(p.simple for p in plans)
    )
    if exact:
        return fits
    # competing requests, constraints, alternatives, shares, counters: the search, once per
    # kind of node (nodekeys) where the layout allows, else once per node
    shared = shared_use()
    candidates = np.flatnonzero(fits)
    keys = nodekeys.node_keys(table, taken, shared, nodes) if len(candidates) > 1 else None
    if keys is None:
        searched, inverse = candidates, np.arange(len(candidates))
    else:
        _, first, inverse = np.unique(keys[candidates], axis=0, return_index=True, return_inverse=True)
        searched = candidates[first]
    verdicts = np.array(
        [
            allocator.allocate_node(plans, table, taken, nodes.names[r], nodes.specs[r].labels, shared, fractional)
            is not None
            for r in searched.tolist()
        ],
        bool,
    )
    fits[candidates] = verdicts[inverse.reshape(-1)]
    return fits


def extended_patterns(
    ext: ExtendedClaim, nodes: NodeTableView, handle: Any, classes: Callable[[], dict[str, Mapping[str, Any]]]
) -> np.ndarray:
    """Per row, which of the pod's extended resources the node leaves to DRA (no allocatable)
    as bits, the node-specific claim of each pattern made once (``filterExtendedResources``)."""
    pattern = np.zeros(len(nodes.names), np.int64)
    for i, (r, _q) in enumerate(ext.resources):
        col = nodes.res_index.get(r)
        none = np.ones(len(nodes.names), bool) if col is None else nodes.alloc[col] == 0
        pattern |= none.astype(np.int64) << i
    for v in np.unique(pattern).tolist():
        if v in ext.variants:
            continue
        if v == 0:
            ext.variants[0] = (ext.claim, [], None)
            continue
        resolver = resolver_for(handle)
        wanted = {r: q for i, (r, q) in enumerate(ext.resources) if v >> i & 1}
        assert resolver is not None
        requests, mappings = requests_and_mappings(ext.pod, wanted, resolver)
        variant = {**ext.claim, "spec": {"devices": {"requests": requests}}}
        ext.variants[v] = (variant, mappings, allocator.plan_claim(variant, classes()))
    return pattern
