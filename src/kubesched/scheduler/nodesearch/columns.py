"""The node search over fresh Filter verdicts (``findNodesThatPassFilters``): every Filter
plugin over every node at once, then upstream's rotation over the verdicts, the nodes holding
nominated pods filtered again as the search reaches them."""

from __future__ import annotations

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.interface import PreFilterResult
from kubesched.framework.status import Code, Status
from kubesched.scheduler.framework.filter_verdicts import FilterOutcome, FilterPass
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.nodesearch.nominated import (
    filter_with_nominated_pods,
    nominated_rows,
    verdicts_of_failed_rows,
)
from kubesched.scheduler.nodesearch.outcome import NO_DIAGNOSIS, NO_ROWS, SearchOutcome, num_feasible_nodes_to_find
from kubesched.scheduler.nodesearch.way import SearchAsk, SearchWay
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.queue import SchedulingQueue

# a PreFilterResult naming fewer than one node in this many is filtered on those rows alone
SMALL_RESULT_FACTOR = 16


class ColumnSearch(SearchWay):
    """The search over fresh verdicts, which answers for every pod."""

    def find(self, ask: SearchAsk) -> SearchOutcome | Status | None:
        return search_columns(ask)


def search_columns(ask: SearchAsk) -> SearchOutcome | Status:
    """``findNodesThatPassFilters`` with the nominated pods, over fresh verdicts: the first nodes
    of the search that pass and the Diagnosis of the others (built only when something reads
    it), or a plugin's Error."""
    fwk, state, pod, nodes, queue = ask.fwk, ask.state, ask.pod, ask.nodes, ask.queue
    pre_res, plugins = ask.pre_res, ask.plugins
    verdicts: FilterPass | None = None
    diagnosis: Diagnosis | None = None
    if pre_res.all_nodes() and not ask.report:
        verdicts = fwk.filter_pass(state, pod, nodes)
        passed = verdicts.passed
        if verdicts.suspect:  # some code is no rejection: the merge decides whether it counts
            built = _diagnosis(fwk, nodes, verdicts.outcome(fwk.filter_names), plugins)
            if isinstance(built, Status):
                return built
            diagnosis = built
    else:
        built = _diagnosis(fwk, nodes, _run_filters(fwk, state, pod, nodes, pre_res), plugins)
        if isinstance(built, Status):
            return built
        diagnosis = built
        passed = diagnosis.codes == 0
    order = nodes.order()
    if not pre_res.all_nodes():
        assert diagnosis is not None
        allowed = np.zeros(nodes.n, bool)
        allowed[[nodes.index[nm] for nm in pre_res.node_names or () if nm in nodes.index]] = True
        order = order[allowed[order]]
        diagnosis.absent = absent_status(plugins)
        diagnosis.absent_mask = ~allowed
        diagnosis.codes[diagnosis.absent_mask] = 0
        passed &= allowed
    n = len(order)
    if n == 0:  # the PreFilterResult named no node of the table
        if diagnosis is None:
            built = _diagnosis(fwk, nodes, None, plugins, verdicts)
            if isinstance(built, Status):
                return built
            diagnosis = built
        return SearchOutcome(NO_ROWS, diagnosis)
    want = 1 if ask.want_one else num_feasible_nodes_to_find(ask.percentage, n)
    start = ask.start % n
    identity = n == nodes.n and nodes.order_is_identity()
    rotated = None if identity else (np.concatenate((order[start:], order[:start])) if start else order)
    nominated = pod.nominated_node_name
    own = nodes.index.get(nominated, -1) if nominated else -1
    pending = nominated_rows(pod, queue, passed)
    while True:
        if own >= 0 and passed[own] and own not in pending:
            # evaluateNominatedNode filtered the nominated node alone: no other node's verdict
            # belongs to this attempt (what --explain and the simulator's results show)
            alone = Diagnosis.empty(nodes.names)
            alone.unschedulable_plugins = set(plugins) if diagnosis is None else diagnosis.unschedulable_plugins
            return SearchOutcome(np.array([own], np.int64), alone)
        feasible, processed = first_passing(passed, start, want, rotated)
        if not len(pending):
            break
        # upstream checks each node with its nominated pods only as the search reaches it
        # (``findNodesThatPassFilters`` stops after ``want`` feasible nodes), so the second pass
        # runs lazily on the nominated rows inside the searched window, then the search is
        # redone in case some of them failed
        if ask.explain:
            hit = np.ones(len(pending), bool)
        else:
            pos = (pending - start) % n if rotated is None else positions(rotated, pending, nodes.n)
            hit = (pos < processed) | (pending == own)
        if not hit.any():
            break
        if diagnosis is None:
            built = _diagnosis(fwk, nodes, None, plugins, verdicts)
            if isinstance(built, Status):
                return built
            diagnosis = built
        st = filter_with_nominated_pods(fwk, state, pod, nodes, queue, diagnosis, passed, pending[hit])
        if st is not None:
            return st
        pending = pending[~hit]
    if not len(feasible):
        found = _failed(fwk, state, pod, nodes, queue, plugins, diagnosis, verdicts, ask)
        if isinstance(found, SearchOutcome):
            found.processed = processed
        return found
    if diagnosis is not None:
        return SearchOutcome(feasible, diagnosis, processed=processed)
    return SearchOutcome(feasible, NO_DIAGNOSIS, rejected=nodes.n - int(np.count_nonzero(passed)), processed=processed)


def _failed(
    fwk: Framework,
    state: CycleState,
    pod: PodInfo,
    nodes: NodeTable,
    queue: SchedulingQueue,
    plugins: set[str],
    diagnosis: Diagnosis | None,
    verdicts: FilterPass | None,
    ask: SearchAsk,
) -> SearchOutcome | Status:
    """The search found no node: the Diagnosis upstream reports, the nominated pods'
    verdicts included."""
    if diagnosis is None:
        built = _diagnosis(fwk, nodes, None, plugins, verdicts)
        if isinstance(built, Status):
            return built
        diagnosis = built
    st = verdicts_of_failed_rows(fwk, state, pod, nodes, queue, diagnosis)
    if st is not None:
        return st
    first = ask.tried_first
    own = nodes.index.get(first, -1) if first else -1
    if diagnosis.absent is not None and diagnosis.absent_mask is not None and own >= 0 and diagnosis.codes[own]:
        # evaluateNominatedNode filtered the nominated node (else the batch's hinted node) first,
        # with its nominated pods, adding the plugin that rejected it to the set the other nodes'
        # status is written from (``findNodesThatFitPod`` hands it a copy of the Diagnosis whose
        # plugin set is the same map)
        diagnosis.absent = absent_status({*plugins, diagnosis.plugin_names[int(diagnosis.plugins[own])]})
    return SearchOutcome(NO_ROWS, diagnosis)


def _run_filters(
    fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable, pre_res: PreFilterResult
) -> FilterOutcome:
    """The Filter plugins over every row, or, when a PreFilterResult keeps only a few nodes (a
    daemonset pod's node affinity by name), over those rows alone, as upstream evaluates only
    them; the outcome is laid out over all rows either way."""
    if pre_res.all_nodes() or len(pre_res.node_names or ()) * SMALL_RESULT_FACTOR > nodes.n:
        return fwk.run_filters(state, pod, nodes)
    rows = np.array(sorted(nodes.index[nm] for nm in pre_res.node_names or () if nm in nodes.index), np.int64)
    sub = fwk.run_filters(state, pod, nodes.take(rows))
    codes = np.zeros(nodes.n, sub.codes.dtype)
    plugins = np.zeros(nodes.n, sub.plugins.dtype)
    reasons = np.zeros(nodes.n, sub.reasons.dtype)
    codes[rows], plugins[rows], reasons[rows] = sub.codes, sub.plugins, sub.reasons
    return FilterOutcome(codes, plugins, reasons, sub.describers, sub.error)


def _diagnosis(
    fwk: Framework,
    nodes: NodeTable,
    outcome: FilterOutcome | None,
    plugins: set[str],
    verdicts: FilterPass | None = None,
) -> Diagnosis | Status:
    """The Diagnosis of ``outcome``, or of ``verdicts`` merged (within the attempt), naming the
    PreFilter plugins that ran; an Error verdict is returned instead."""
    if outcome is None:
        assert verdicts is not None
        outcome = verdicts.outcome(fwk.filter_names)
    if outcome.error is not None:
        return outcome.error
    diagnosis = outcome.diagnosis(nodes.names, fwk.filter_names)
    diagnosis.unschedulable_plugins = set(plugins)
    return diagnosis


def absent_status(plugins: set[str]) -> Status:
    """The status of the nodes a PreFilterResult left out (``findNodesThatFitPod``)."""
    return Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]",)
    )


# -- the rotation (findNodesThatPassFilters): from nextStartNodeIndex in nodeTree order, wrapping
# round, the first numFeasibleNodesToFind nodes that pass.


def first_passing(passed: np.ndarray, start: int, want: int, rotated: np.ndarray | None) -> tuple[np.ndarray, int]:
    """The first ``want`` passing rows from ``start`` in nodeTree order, and how many nodes
    that took (all of them when fewer pass). ``rotated``: the rows in search order, None when
    the rows are in nodeTree order already."""
    if rotated is None:
        # rows are already in nodeTree order: look from start on, usually far enough
        n = len(passed)
        ahead = min(n - start, 2 * want + 64)
        hits = passed[start : start + ahead].nonzero()[0]
        if len(hits) >= want:
            return hits[:want] + start, int(hits[want - 1]) + 1
        # else rotate the verdicts, not an index array
        ok = np.concatenate((passed[start:], passed[:start])) if start else passed
        hits = ok.nonzero()[0]
        processed = int(hits[want - 1]) + 1 if len(hits) >= want else n
        feasible = hits[:want] + start
        if start:
            feasible %= n
        return feasible, processed
    hits = np.flatnonzero(passed[rotated])
    processed = int(hits[want - 1]) + 1 if len(hits) >= want else len(rotated)
    return rotated.take(hits[:want]), processed


def positions(rotated: np.ndarray, rows: np.ndarray, size: int) -> np.ndarray:
    """Where each of ``rows`` sits in the search order (past the end when absent)."""
    inverse = np.full(size, len(rotated), np.int64)
    inverse[rotated] = np.arange(len(rotated))
    return inverse[rows]


def covered(nodes: NodeTable, rows: list[int], start: int, processed: int) -> bool:
    """Whether any of ``rows`` lies among the first ``processed`` nodes of the search from
    ``start``."""
    n = nodes.n
    if processed >= n:
        return True
    end = start + processed  # the search covered [start, end) of the order, wrapping past n
    wrapped = end - n
    if nodes.order_is_identity():
        return any(start <= r < end or r < wrapped for r in rows)
    position = nodes.order_position()
    for r in rows:
        if r < n:
            p = int(position[r])
            if start <= p < end or p < wrapped:
                return True
    return False
