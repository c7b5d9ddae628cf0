"""The node search seam (``findNodesThatFitPod``): PreFilter, the node the attempt tries first,
then the search for feasible nodes and the filter extenders. Every way of searching (the shape
cache's stored verdicts, fresh column verdicts merged or not, the batch's hint) is chosen here,
in one place, and answers with one ``SearchOutcome``."""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter
from typing import Any

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.interface import PreFilterResult
from kubesched.framework.status import Code, Status
from kubesched.scheduler.extender import HTTPExtender, find_nodes_that_pass_extenders
from kubesched.scheduler.framework.filter_verdicts import FilterOutcome
from kubesched.scheduler.framework.point_times import FILTER
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.nodesearch.columns import ColumnSearch
from kubesched.scheduler.nodesearch.nominated import filter_with_nominated_pods, nominated_rows
from kubesched.scheduler.nodesearch.outcome import NO_ROWS, SearchOutcome
from kubesched.scheduler.nodesearch.shapes import ShapeCacheSearch
from kubesched.scheduler.nodesearch.way import SearchAsk, SearchWay
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.queue import SchedulingQueue


def no_node_object(name: str) -> dict[str, Any] | None:
    """The Node lookup of a scheduler without extenders that need Node objects."""
    return None


class NodeSearch:
    """``findNodesThatFitPod`` and the state it keeps between cycles: ``nextStartNodeIndex``,
    where the next search starts. ``batching``: Opportunistic Batching (feature gate
    OpportunisticBatching, on by default since v1.36). The ways of searching, asked in order:
    the shape cache's stored verdicts where they answer for the pod, else fresh verdicts
    (``use_shape_cache`` off: fresh ones only, the same decisions with more plugin runs, to
    compare with)."""

    percentage_of_nodes_to_score: int
    next_start_node_index: int
    batching: bool
    use_shape_cache: bool
    ways: tuple[SearchWay, ...]
    fresh_ways: tuple[SearchWay, ...]
    extenders: list[HTTPExtender]
    node_object: Callable[[str], dict[str, Any] | None]

    def __init__(
        self,
        percentage_of_nodes_to_score: int = 0,
        *,
        batching: bool = True,
        extenders: list[HTTPExtender] | None = None,
        node_object: Callable[[str], dict[str, Any] | None] = no_node_object,
    ) -> None:
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.next_start_node_index = 0
        self.batching = batching
        self.use_shape_cache = True
        fresh = ColumnSearch()
        self.ways = (ShapeCacheSearch(), fresh)
        self.fresh_ways = (fresh,)
        self.extenders = [] if extenders is None else extenders
        self.node_object = node_object

    def find_nodes_that_fit(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        queue: SchedulingQueue,
        cycle: int,
        *,
        explain: bool = False,
        report: bool = False,
    ) -> SearchOutcome | Status:
        """The feasible rows and the Diagnosis of the others, or a plugin's (or an extender's)
        Error. ``cycle``: the queue's scheduling cycle (the batch compares it); ``explain``:
        every node filtered afresh; ``report``: every node's verdict kept (explain, results)."""
        pre_res, st, plugins = fwk.run_pre_filter(state, pod, nodes)
        if st is not None:
            if not st.is_rejected():
                return st
            diagnosis = Diagnosis.empty(nodes.names)
            diagnosis.unschedulable_plugins = set(plugins)
            diagnosis.absent = Status(st.code, st.reasons, st.plugin)
            diagnosis.absent_mask = np.ones(nodes.n, bool)
            diagnosis.pre_filter_msg = st.message()
            return SearchOutcome(NO_ROWS, diagnosis)
        signature = None
        hint = ""
        if self.batching:
            # GetNodeHint, asked even for a pod with a nominated node (which is tried instead)
            signature = fwk.signer.sign_pod(pod)
            hint = fwk.batch.get_node_hint(
                signature,
                cycle,
                lambda name: name in nodes.index,
                lambda name: rejected_on(fwk, state, pod, nodes, nodes.index[name]),
            )
            if hint and not pod.nominated_node_name and hint in nodes.index:
                row = nodes.index[hint]
                if hint_fits(fwk, state, pod, nodes, queue, row):
                    taken = np.array([row], np.int64)
                    return SearchOutcome(taken, Diagnosis.empty(nodes.names), 0, signature, hint, taken=True)
        started = perf_counter()
        found = self._find_nodes_that_pass_filters(
            fwk, state, pod, nodes, queue, pre_res, plugins, signature is None, hint, explain, report
        )
        if isinstance(found, Status):
            fwk.point_times.done(FILTER, started, FILTER_ERROR)
            return found
        fwk.point_times.done(FILTER, started, None)
        if found.processed:
            self.next_start_node_index = (self.next_start_node_index + found.processed) % nodes.n
        found.signature, found.hint = signature, hint
        if self.extenders and len(found.feasible):
            kept = find_nodes_that_pass_extenders(
                self.extenders, self.node_object, pod, nodes, found.feasible, found.diagnosis
            )
            if isinstance(kept, Status):
                return kept
            found.feasible = kept
        return found

    def _find_nodes_that_pass_filters(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        queue: SchedulingQueue,
        pre_res: PreFilterResult,
        plugins: set[str],
        unsigned: bool,
        hint: str,
        explain: bool,
        report: bool,
    ) -> SearchOutcome | Status:
        """``findNodesThatPassFilters``: the first of the ways that answers for the pod."""
        ask = SearchAsk(
            fwk,
            state,
            pod,
            nodes,
            queue,
            pre_res,
            plugins,
            start=self.next_start_node_index,
            percentage=self.percentage(fwk),
            want_one=not fwk.has_score() and not any(e.is_filter() or e.is_prioritizer() for e in self.extenders),
            tried_first=pod.nominated_node_name or hint,
            explain=explain,
            report=report or bool(self.extenders),
            signed=not unsigned,
            extenders=bool(self.extenders),
        )
        for way in self.ways if self.use_shape_cache else self.fresh_ways:
            found = way.find(ask)
            if found is not None:
                return found
        raise AssertionError("the search over fresh verdicts answers for every pod")

    def percentage(self, fwk: Framework) -> int:
        """``percentageOfNodesToScore``: the profile's, else the scheduler's."""
        own = fwk.profile.percentage_of_nodes_to_score
        return own if own is not None else self.percentage_of_nodes_to_score


# -- Opportunistic Batching's hinted node (feature gate OpportunisticBatching): the node the previous
# pod of the same signature would have taken next, tried alone before any search, as
# evaluateNominatedNode tries a nominated node.

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
