"""``RunFilterPluginsWithNominatedPods`` for the node search: a node must also pass with the
nominated pods of equal or higher priority added (``framework/runtime/framework.go``); the
column pass ran without them, so the nodes holding such pods are filtered again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.status import Status
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.nodesearch.outcome import NO_ROWS
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.podtable import PodTable
from kubesched.scheduler.queue import SchedulingQueue

if TYPE_CHECKING:
    from kubesched.scheduler.framework.runtime import Framework


def nominated_rows(pod: PodInfo, queue: SchedulingQueue, passed: np.ndarray) -> np.ndarray:
    """Rows still passing that hold nominated pods of equal or higher priority."""
    table = queue.nominated_table
    if table is None or not queue.nominated:
        return NO_ROWS
    slots = nominated_slots(table, pod, passed)
    if len(slots) < 2:
        return table.node_row[slots].astype(np.int64)
    return np.unique(table.node_row[slots])


def filter_with_nominated_pods(
    fwk: Framework,
    state: CycleState,
    pod: PodInfo,
    nodes: NodeTable,
    queue: SchedulingQueue,
    diagnosis: Diagnosis,
    passed: np.ndarray,
    rows: np.ndarray,
    *,
    passed_before: bool = True,
) -> Status | None:
    """The second pass on ``rows``, with their nominated pods added: a row that fails it
    leaves ``passed`` and takes this pass's verdict in ``diagnosis``. ``passed_before``: the rows
    passed the column pass, so the filters that read only the node need not run again. A
    plugin's Error is returned."""
    table = queue.nominated_table
    assert table is not None
    mask = np.zeros(nodes.n, bool)
    mask[rows] = True
    slots = nominated_slots(table, pod, mask)
    sub_rows = np.searchsorted(rows, table.node_row[slots])
    sub = nodes.take(rows)
    extensions = active_extensions(fwk, state)
    sub_state = state.clone() if extensions else state
    add_to(sub, sub_rows, table, slots, fwk, sub_state, pod, extensions=extensions)
    outcome = fwk.run_filters(sub_state, pod, sub, passed_before=passed_before)
    if outcome.error is not None:
        return outcome.error
    failing = np.flatnonzero(outcome.codes != 0)
    if len(failing):
        # the second pass's verdicts replace the first's on those rows (same filter list)
        at = rows[failing]
        diagnosis.codes[at] = outcome.codes[failing]
        diagnosis.plugins[at] = outcome.plugins[failing]
        diagnosis.reasons[at] = outcome.reasons[failing]
        for i, describe in enumerate(outcome.describers):
            if describe is not None:
                diagnosis.describers[i] = describe
        passed[at] = False
    return None


def verdicts_of_failed_rows(
    fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable, queue: SchedulingQueue, diagnosis: Diagnosis
) -> Status | None:
    """A failed attempt's verdicts on nodes holding nominated pods, as upstream reports them:
    ``RunFilterPluginsWithNominatedPods`` filters a node with those pods added first and keeps
    that pass's status when it fails, while the column pass ran without them. Adding pods
    fails no node that passed, but the reasons may grow (cpu, then the pod count too), which
    the message and preemption's node statuses read."""
    if queue.nominated_table is None or not queue.nominated:
        return None
    failed = diagnosis.codes != 0
    if diagnosis.absent_mask is not None:
        failed &= ~diagnosis.absent_mask
    rows = nominated_rows(pod, queue, failed)
    if not len(rows):
        return None
    # these rows failed the column pass: every filter runs again, in order, so a node-only
    # plugin that rejected the node (NodeUnschedulable, a taint) still rejects it first
    return filter_with_nominated_pods(
        fwk, state, pod, nodes, queue, diagnosis, failed.copy(), rows, passed_before=False
    )


# -- putting nominated pods on a what-if copy of some nodes (addGENominatedPods in
# framework/runtime/framework.go), in bulk from the cache's nominated-pod columns; preemption
# uses these too.


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
