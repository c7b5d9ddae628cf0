"""Putting nominated pods on a what-if copy of some nodes (``addGENominatedPods`` in
``framework/runtime/framework.go``), in bulk from the cache's nominated-pod columns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.podtable import PodTable

if TYPE_CHECKING:
    from kubesched.scheduler.framework.runtime import Framework


def nominated_slots(table: PodTable, pod: PodInfo, row_mask: np.ndarray | None = None) -> np.ndarray:
    """Slots of pods nominated to a known node, other than ``pod``, with priority at least its
    own; only on rows where ``row_mask`` is true when given."""
    mask = (table.node_row >= 0) & (table.priority >= pod.priority)
    own = table.slot.get(pod.uid)
    if own is not None:
        mask[own] = False
    slots = np.flatnonzero(mask)
    if row_mask is not None and len(slots):
        slots = slots[row_mask[table.node_row[slots]]]
    return slots


Extensions = list[tuple[Any, Any]]


def active_extensions(fwk: Framework, state: CycleState) -> Extensions:
    """PreFilter plugins with AddPod/RemovePod extensions that take part in this cycle."""
    return [
        (p, ext)
        for p in fwk.pre_filter
        if (ext := p.pre_filter_extensions()) is not None and p.name not in state.skip_filter
    ]


def add_to(
    sub: NodeTable,
    sub_rows: np.ndarray,
    table: PodTable,
    slots: np.ndarray,
    fwk: Framework,
    state: CycleState,
    pod: PodInfo,
    sign: int = 1,
    extensions: Extensions | None = None,
) -> None:
    """Account the pods in ``slots`` of ``table`` on rows ``sub_rows`` of ``sub`` (resources in one
    scatter-add; host ports and PreFilter extensions pod by pod, only where they apply)."""
    if len(slots) == 0:
        return
    k = sub.requested.shape[0]
    reqs = table.requests[:, slots]
    if reqs.shape[0] < k:
        reqs = np.vstack([reqs, np.zeros((k - reqs.shape[0], len(slots)), np.int64)])
    sub.add_pods_bulk(sub_rows, reqs, table.nonzero[:, slots], sign)
    for i in np.flatnonzero(table.has_ports[slots]).tolist():
        sub.account_ports(int(sub_rows[i]), table.pods[int(slots[i])], sign)  # type: ignore[arg-type]
    if extensions is None:
        extensions = active_extensions(fwk, state)
    if extensions:
        for slot, row in zip(slots.tolist(), sub_rows.tolist(), strict=True):
            other = table.pods[slot]
            assert other is not None
            for _, ext in extensions:
                if sign > 0:
                    ext.add_pod(state, pod, other, sub, row)
                else:
                    ext.remove_pod(state, pod, other, sub, row)
