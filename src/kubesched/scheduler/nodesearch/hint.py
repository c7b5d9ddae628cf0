"""Opportunistic Batching's hinted node (``findNodesThatFitPod``, feature gate
OpportunisticBatching): the node the previous pod of the same signature would have taken next,
tried alone before any search, as ``evaluateNominatedNode`` tries a nominated node."""

from __future__ import annotations

from time import perf_counter

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.status import Code, Status
from kubesched.scheduler.framework.filter_verdicts import FilterOutcome
from kubesched.scheduler.framework.point_times import FILTER
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.nodesearch.nominated import filter_with_nominated_pods, nominated_rows
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.queue import SchedulingQueue

# the Filter extension point's label when the search failed
FILTER_ERROR = Status(Code.ERROR)


def filter_row(fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable, row: int) -> FilterOutcome:
    """``RunFilterPlugins`` on one node, without nominated pods."""
    return fwk.run_filters(state, pod, nodes.take(np.array([row], np.int64)))


def rejected_on(fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable, row: int) -> bool:
    """``RunFilterPlugins(...).IsRejected()`` on one node (an error is not a rejection)."""
    outcome = filter_row(fwk, state, pod, nodes, row)
    return outcome.error is None and bool(outcome.codes[0] != 0)


def hint_fits(
    fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable, queue: SchedulingQueue, row: int
) -> bool:
    """``evaluateNominatedNode`` on the hinted node: the filters, then again with the nominated
    pods of equal or higher priority there. An error there only sends the pod to the search."""
    started = perf_counter()
    outcome = filter_row(fwk, state, pod, nodes, row)
    fwk.point_times.done(FILTER, started, outcome.error and FILTER_ERROR)
    if outcome.error is not None or outcome.codes[0] != 0:
        return False
    passed = np.zeros(nodes.n, bool)
    passed[row] = True
    pending = nominated_rows(pod, queue, passed)
    if len(pending):
        scratch = Diagnosis.empty(nodes.names)
        if filter_with_nominated_pods(fwk, state, pod, nodes, queue, scratch, passed, pending) is not None:
            return False
    return bool(passed[row])
