"""The scheduling algorithm of one cycle (``pkg/scheduler/schedule_one.go``: schedulePod).

PreFilter → Filter over every node at once (nominated pods of equal or higher priority added in
a second pass where they sit) → the node search rotation of upstream (start at
``next_start_node_index`` in nodeTree order, stop after ``numFeasibleNodesToFind`` feasible
nodes) → PreScore/Score/NormalizeScore on the feasible rows → a uniformly random pick among the
top-scored nodes.
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.interface import PreFilterResult
from kubesched.framework.status import Code, Status
from kubesched.scheduler.extender import MAX_EXTENDER_PRIORITY, MAX_NODE_SCORE, ExtenderError, HTTPExtender
from kubesched.scheduler.framework.batch import PodSignature, SortedNodes
from kubesched.scheduler.framework.filter_verdicts import FilterOutcome, FilterPass
from kubesched.scheduler.framework.nominated_pods import active_extensions, add_to, nominated_slots
from kubesched.scheduler.framework.point_times import FILTER
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.shape_cache import ShapeEntry, Window
from kubesched.scheduler.framework.types import ERR_NO_NODES_AVAILABLE, FitError
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.queue import SchedulingQueue

log = logging.getLogger("kubesched.scheduler")

MIN_FEASIBLE_NODES_TO_FIND = 100
_FILTER_ERROR = Status(Code.ERROR)  # the Filter extension point's label when the search failed
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


@functools.lru_cache(maxsize=256)
def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """``numFeasibleNodesToFind``: adaptive 50 − n/125 percent (floor 5%), at least 100 nodes."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


class AttemptReport:
    """What an attempt shows of itself to the results recorder and ``--explain`` (as
    kube-scheduler-simulator's wrapped plugins record it; upstream keeps none): the Filter
    verdicts, and either the feasible rows (nothing scored: one node fit, or the batch's hinted
    node, ``hint``) or the scored rows with each plugin's raw and normalized scores and the total."""

    diagnosis: Diagnosis | None
    feasible: np.ndarray | None
    hint: str | None
    rows: np.ndarray | None
    raw: dict[str, np.ndarray]
    scores: dict[str, np.ndarray]
    total: np.ndarray | None

    def __init__(self, diagnosis: Diagnosis | None) -> None:
        self.diagnosis = diagnosis
        self.feasible = None
        self.hint = None
        self.rows = None
        self.raw = {}
        self.scores = {}
        self.total = None

    def scored(
        self, rows: np.ndarray, raw: dict[str, np.ndarray], scores: dict[str, np.ndarray], total: np.ndarray
    ) -> AttemptReport:
        self.rows, self.raw, self.scores, self.total = rows, raw, scores, total
        return self


@dataclass(init=False, slots=True)
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int
    report: AttemptReport | None = None

    def __init__(
        self, suggested_host: str, evaluated_nodes: int, feasible_nodes: int, report: AttemptReport | None = None
    ) -> None:
        # written out (init=False): mypyc compiles this one; a dataclass's own runs interpreted
        self.suggested_host = suggested_host
        self.evaluated_nodes = evaluated_nodes
        self.feasible_nodes = feasible_nodes
        self.report = report


@dataclass(slots=True)
class ScheduleFailure:
    """What ``schedulePod`` returns instead of a node: ``fit`` when no node fit (its message is
    the FailedScheduling one, formatted when needed), ``no_nodes`` when the cluster has none, else
    ``status``, a plugin's Error."""

    fit: FitError | None = None
    no_nodes: bool = False
    status: Status | None = None

    def failure_status(self) -> Status:
        """The attempt's Status as ``handleSchedulingFailure`` gets it."""
        if self.fit is not None:
            return Status(Code.UNSCHEDULABLE, (str(self.fit),))
        if self.no_nodes:
            return Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NO_NODES_AVAILABLE)
        assert self.status is not None
        return self.status


@dataclass(init=False, slots=True)
class CycleFacts:
    """How this cycle found its nodes. Opportunistic Batching: the pod's signature, the hint
    the batch offered (or ""), and whether the pod was placed on it without a search. The shape
    cache: the entry whose verdicts the search read (scores then come from it too) and the
    nodes the search found there."""

    signature: PodSignature | None = None
    hint: str = ""
    taken: bool = False
    shape: ShapeEntry | None = None
    window: Window | None = None
    rejected: int = -1

    def __init__(
        self,
        signature: PodSignature | None = None,
        hint: str = "",
        taken: bool = False,
        shape: ShapeEntry | None = None,
        window: Window | None = None,
        rejected: int = -1,
    ) -> None:
        # written out (init=False): mypyc compiles this one; a dataclass's own runs interpreted
        self.signature = signature
        self.hint = hint
        self.taken = taken
        self.shape = shape
        self.window = window
        self.rejected = rejected  # the rows Filter rejected, when no Diagnosis was built to count them


@dataclass(slots=True)
class Algorithm:
    """Per-scheduler state of the algorithm: the rotating start index and the tie-break RNG."""

    percentage_of_nodes_to_score: int = 0
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    next_start_node_index: int = 0
    extenders: list[HTTPExtender] = field(default_factory=list)
    node_object: Callable[[str], dict[str, Any] | None] = lambda name: None
    # "random": upstream's selectHost (reservoir sampling among the best). "name": the smallest node
    # name among the best, as the FGD paper's simulator patched its kube-scheduler v1.20 fork
    # (github.com/mental2008/kubernetes, generic_scheduler.go) "for reproducibility"; replay offers it
    # to reproduce that paper, nothing else uses it.
    tie_break: str = "random"  # "random" (upstream), "name" or "permutation" (names as ``tie_names`` renames them)
    tie_names: dict[str, str] | None = None  # the names "permutation" compares (replay/tiebreak.py)
    # Opportunistic Batching (feature gate OpportunisticBatching, on by default in v1.36)
    batching: bool = True
    # the shape cache (framework/shape_cache.py): same decisions, fewer plugin runs; off only to
    # compare with
    use_shape_cache: bool = True
    _rank_key: tuple[Any, int] | None = None
    _rank: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def schedule_pod(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        queue: SchedulingQueue,
        *,
        explain: bool = False,
        cycle: int = 0,
        record: bool = False,
    ) -> ScheduleResult | ScheduleFailure:
        """``schedulePod``: the node picked, or why none was (``ScheduleFailure``: no node fit, no
        nodes, a plugin's Error). ``cycle``: the queue's scheduling cycle of this attempt (batching
        compares it). ``explain``: every node filtered afresh, the verdicts and scores kept in the
        result; ``record``: the same kept, from whichever way the search went (the shape cache too)."""
        if nodes.n == 0:
            return ScheduleFailure(no_nodes=True)
        try:
            return self._schedule_pod(fwk, state, pod, nodes, queue, explain, cycle, record)
        except PluginError as err:  # the search's own early exit, ended here
            return ScheduleFailure(status=err.status)

    def _schedule_pod(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        queue: SchedulingQueue,
        explain: bool,
        cycle: int,
        record: bool,
    ) -> ScheduleResult | ScheduleFailure:
        facts = CycleFacts()
        feasible, diagnosis = self._find_nodes_that_fit(
            fwk, state, pod, nodes, queue, explain, cycle, facts, record=record
        )
        if facts.shape is not None:  # found by the shape cache: its scores too
            return self._pick_from_shape(fwk, state, pod, nodes, facts, cycle, record)
        if self.extenders and len(feasible) and not facts.taken:
            feasible = self._find_nodes_that_pass_extenders(pod, nodes, feasible, diagnosis)
        info = AttemptReport(diagnosis) if explain or record else None
        if len(feasible) == 0:
            diagnosis.collect_rejectors()
            return ScheduleFailure(fit=FitError(pod, nodes.n, diagnosis))
        rejected = facts.rejected if facts.rejected >= 0 else int(np.count_nonzero(diagnosis.codes))
        evaluated = len(feasible) + rejected
        if len(feasible) == 1:  # upstream runs no PreScore or Score for a single feasible node
            chosen = nodes.names[int(feasible[0])]
            if info is not None:
                info.feasible = feasible
                if facts.taken:
                    info.hint = chosen
            if self.batching:
                fwk.batch.store_schedule_results(facts.signature, facts.hint, chosen, None, cycle)
            return ScheduleResult(chosen, evaluated, 1, info)
        st = fwk.run_pre_score(state, pod, nodes, feasible)
        if st is not None:
            return ScheduleFailure(status=st)
        outcome, st = fwk.run_score(state, pod, nodes, feasible, keep=info is not None)
        if st is not None or outcome is None:
            return ScheduleFailure(status=st or Status.error("score failed"))
        prioritizers = [e for e in self.extenders if e.is_prioritizer() and e.is_interested(pod)]
        if prioritizers:
            outcome.total += self._extender_scores(pod, nodes, feasible, prioritizers)
        elif not fwk.has_score():
            outcome.total[:] = 1
        pick = self._select_host(nodes, feasible, outcome.total)
        if info is not None:
            info.scored(feasible, outcome.raw_by_plugin, outcome.by_plugin, outcome.total)
        chosen = nodes.names[int(feasible[pick])]
        if self.batching:
            rest = self._sorted_rest(nodes, feasible, outcome.total, pick, facts.signature)
            fwk.batch.store_schedule_results(facts.signature, facts.hint, chosen, rest, cycle)
        return ScheduleResult(chosen, evaluated, len(feasible), info)

    def _select_host(self, nodes: NodeTable, feasible: np.ndarray, total: np.ndarray) -> int:
        """``selectHost``: the position in ``feasible`` of a top-scored node, uniformly at random
        among equals (by name with ``tie_break="name"``)."""
        if len(feasible) == 1:
            return 0
        return self._best(nodes, total, lambda: feasible)

    def _best(self, nodes: NodeTable, total: np.ndarray, rows: Callable[[], np.ndarray]) -> int:
        top = (total == np.maximum.reduce(total)).nonzero()[0]  # the ufunc: no method wrapper
        if len(top) == 1:
            return int(top[0])
        if self.tie_break != "random":
            return int(top[int(np.argmin(self._name_rank(nodes)[rows()[top]]))])
        return int(top[self.rng.randrange(len(top))])

    def _pick_from_shape(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        facts: CycleFacts,
        cycle: int,
        record: bool = False,
    ) -> ScheduleResult:
        """Score and pick as above, from the shape cache: its raw scores normalized over the
        nodes the search found (a single node is taken unscored, as above). With ``record``,
        the verdicts and scores are laid out as the full path keeps them."""
        entry, window = facts.shape, facts.window
        assert entry is not None and window is not None
        found = len(window)
        if found == 1:
            pick, rest = 0, None
        else:
            total = fwk.score_from_shape(entry, pod, window)
            pick = self._best(nodes, total, lambda: entry.rows(window))
            rest = SortedNodes.unlisted(found - 1)  # an unsigned pod keeps no list
        chosen = nodes.names[entry.row_at(window, pick)]
        if self.batching:
            fwk.batch.store_schedule_results(facts.signature, facts.hint, chosen, rest, cycle)
        info = self._shape_info(fwk, state, pod, nodes, entry, window) if record else None
        return ScheduleResult(chosen, window.processed, found, info)

    def _shape_info(
        self, fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable, entry: ShapeEntry, window: Window
    ) -> AttemptReport:
        """What ``explain`` keeps, from a shape cache entry: the nodes it rejects filtered
        again (alone) for their reasons, the window's raw scores and their normalization."""
        rows = entry.rows(window)
        rejected = entry.rejected_rows()
        diagnosis: Diagnosis | None = None  # no node rejected
        if len(rejected):
            sub = fwk.run_filters(state, pod, nodes.take(rejected))
            codes = np.zeros(nodes.n, sub.codes.dtype)
            plugins = np.zeros(nodes.n, sub.plugins.dtype)
            reasons = np.zeros(nodes.n, sub.reasons.dtype)
            codes[rejected], plugins[rejected], reasons[rejected] = sub.codes, sub.plugins, sub.reasons
            diagnosis = fwk.diagnosis_from(nodes, FilterOutcome(codes, plugins, reasons, sub.describers))
        info = AttemptReport(diagnosis)
        if len(rows) == 1:
            info.feasible = rows
            return info
        # PreScore's statuses, as this cycle would have given them: those of the cycle that
        # computed the entry's scores
        if state.results is not None:
            state.results.pre_score.update(entry.pre_score)
        raw: dict[str, np.ndarray] = {}
        norm: dict[str, np.ndarray] = {}
        total = np.zeros(len(rows), np.int64)
        for plugin, weight, column in (*entry.summed, *entry.normalized):
            r = column[rows]
            n = plugin.normalize_scores(entry.state, pod, r.copy())
            raw[plugin.name] = r
            norm[plugin.name] = r if n is None else n
            total += norm[plugin.name] * weight
        return info.scored(rows, raw, norm, total)

    def _sorted_rest(
        self, nodes: NodeTable, feasible: np.ndarray, total: np.ndarray, pick: int, signature: PodSignature | None
    ) -> SortedNodes:
        """The feasible nodes the pod did not take, best first: ``sortedNodeScores`` after its
        first Pop (score, then a random number per node among equals; by name with
        ``tie_break="name"``). Built only for a signed pod: the others keep no list."""
        k = len(feasible) - 1
        if signature is None or k <= 0:
            return SortedNodes.unlisted(max(k, 0))
        rest = np.delete(np.arange(len(feasible)), pick)
        if self.tie_break != "random":
            second = self._name_rank(nodes)[feasible[rest]]
        else:
            second = -np.frombuffer(self.rng.randbytes(4 * k), np.uint32).astype(np.int64)
        order = rest[np.lexsort((second, -total[rest]))]
        return SortedNodes(nodes.names, feasible[order])  # names looked up as they are popped

    @staticmethod
    def _filter_row(fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable, row: int) -> FilterOutcome:
        """``RunFilterPlugins`` on one node, without nominated pods."""
        return fwk.run_filters(state, pod, nodes.take(np.array([row], np.int64)))

    def _rejected_on(self, fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable, row: int) -> bool:
        """``RunFilterPlugins(...).IsRejected()`` on one node (an error is not a rejection)."""
        outcome = self._filter_row(fwk, state, pod, nodes, row)
        return outcome.error is None and bool(outcome.codes[0] != 0)

    def _hint_fits(
        self, fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable, queue: SchedulingQueue, row: int
    ) -> bool:
        """``evaluateNominatedNode`` on the hinted node: the filters, then again with the nominated
        pods of equal or higher priority there. An error there only sends the pod to the search."""
        started = perf_counter()
        outcome = self._filter_row(fwk, state, pod, nodes, row)
        fwk.point_times.done(FILTER, started, outcome.error and _FILTER_ERROR)
        if outcome.error is not None or outcome.codes[0] != 0:
            return False
        passed = np.zeros(nodes.n, bool)
        passed[row] = True
        pending = self._nominated_rows(pod, queue, passed)
        if len(pending):
            scratch = Diagnosis.empty(nodes.names)
            try:
                self._apply_nominated_pods(fwk, state, pod, nodes, queue, scratch, passed, pending)
            except PluginError:
                return False
        return bool(passed[row])

    def break_ties_by(self, names: dict[str, str]) -> None:
        """The "permutation" tie-break: among the best, the node whose ``names`` entry is smallest."""
        self.tie_break, self.tie_names, self._rank_key = "permutation", names, None

    def _name_rank(self, nodes: NodeTable) -> np.ndarray:
        """Each row's position in node-name order, or in the order of ``tie_names`` with the
        "permutation" tie-break (cached while the table's layout holds)."""
        key = (nodes.index, len(nodes.index))
        if self._rank_key is None or self._rank_key[0] is not key[0] or self._rank_key[1] != key[1]:
            names = nodes.names
            if self.tie_break == "permutation" and self.tie_names is not None:
                names = [self.tie_names.get(n, n) for n in names]
            rank = np.empty(len(names), np.int64)
            rank[np.argsort(np.array(names))] = np.arange(len(names))
            self._rank_key, self._rank = key, rank
        return self._rank

    @staticmethod
    def _run_filters(
        fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable, pre_res: PreFilterResult
    ) -> FilterOutcome:
        """The Filter plugins over every row, or, when a PreFilterResult keeps only a few nodes
        (a daemonset pod's node affinity by name), over those rows alone, as upstream evaluates
        only them; the outcome is laid out over all rows either way."""
        if pre_res.all_nodes() or len(pre_res.node_names or ()) * SMALL_RESULT_FACTOR > nodes.n:
            return fwk.run_filters(state, pod, nodes)
        rows = np.array(sorted(nodes.index[nm] for nm in pre_res.node_names or () if nm in nodes.index), np.int64)
        sub = fwk.run_filters(state, pod, nodes.take(rows))
        codes = np.zeros(nodes.n, sub.codes.dtype)
        plugins = np.zeros(nodes.n, sub.plugins.dtype)
        reasons = np.zeros(nodes.n, sub.reasons.dtype)
        codes[rows], plugins[rows], reasons[rows] = sub.codes, sub.plugins, sub.reasons
        return FilterOutcome(codes, plugins, reasons, sub.describers, sub.error)

    def _find_nodes_that_fit(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        queue: SchedulingQueue,
        explain: bool = False,
        cycle: int = 0,
        facts: CycleFacts | None = None,
        *,
        record: bool = False,
    ) -> tuple[np.ndarray, Diagnosis]:
        """PreFilter, the batch's hint, then the node search over the shape cache or over fresh
        Filter verdicts; ``facts`` receives how this cycle found its nodes. ``explain`` and
        ``record``: the attempt reports every node's verdict, so the Diagnosis is built even when
        nodes are found."""
        facts = facts if facts is not None else CycleFacts()
        pre_res, st, plugins = fwk.run_pre_filter(state, pod, nodes)
        if st is not None:
            if not st.is_rejected():
                raise PluginError(st)
            diagnosis = Diagnosis.empty(nodes.names)
            diagnosis.unschedulable_plugins = set(plugins)
            diagnosis.absent = Status(st.code, st.reasons, st.plugin)
            diagnosis.absent_mask = np.ones(nodes.n, bool)
            diagnosis.pre_filter_msg = st.message()
            return np.zeros(0, np.int64), diagnosis
        if self.batching:
            # GetNodeHint, asked even for a pod with a nominated node (which is tried instead)
            facts.signature = fwk.sign_pod(pod)
            facts.hint = fwk.batch.get_node_hint(
                facts.signature,
                cycle,
                lambda name: name in nodes.index,
                lambda name: self._rejected_on(fwk, state, pod, nodes, nodes.index[name]),
            )
            if facts.hint and not pod.nominated_node_name and facts.hint in nodes.index:
                row = nodes.index[facts.hint]
                if self._hint_fits(fwk, state, pod, nodes, queue, row):
                    facts.taken = True
                    return np.array([row], np.int64), Diagnosis.empty(nodes.names)
        started = perf_counter()
        try:
            found = self._pass_filters(
                fwk, state, pod, nodes, queue, pre_res, plugins, explain, facts, report=explain or record
            )
        except PluginError:
            fwk.point_times.done(FILTER, started, _FILTER_ERROR)
            raise
        fwk.point_times.done(FILTER, started, None)
        return found

    def _pass_filters(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        queue: SchedulingQueue,
        pre_res: PreFilterResult,
        plugins: set[str],
        explain: bool,
        facts: CycleFacts,
        *,
        report: bool = True,
    ) -> tuple[np.ndarray, Diagnosis]:
        """``findNodesThatPassFilters`` with the nominated pods: over the shape cache's verdicts
        or fresh ones, the first nodes of the search that pass (the Filter extension point's
        duration, as upstream times it there)."""
        if (
            pre_res.all_nodes()
            and facts.signature is None
            and not explain
            and not pod.nominated_node_name
            and not self.extenders
            and (queue.nominated_table is None or not queue.nominated)
            and fwk.shape_static is not None
            and self.use_shape_cache
        ) and self._search_shapes(fwk, state, pod, nodes, facts):
            return _NO_ROWS, _NO_DIAGNOSIS
        # the verdicts are merged into a Diagnosis only when something reads it: a failed attempt,
        # nominated pods to add, an extender, a report of every node (explain, results)
        verdicts: FilterPass | None = None
        diagnosis: Diagnosis | None = None
        if pre_res.all_nodes() and not report and not self.extenders:
            verdicts = fwk.filter_pass(state, pod, nodes)
            passed = verdicts.passed
            if verdicts.suspect:  # some code is no rejection: the merge decides whether it counts
                diagnosis = self._diagnosis(fwk, nodes, verdicts.outcome(fwk.filter_names), plugins)
        else:
            diagnosis = self._diagnosis(fwk, nodes, self._run_filters(fwk, state, pod, nodes, pre_res), plugins)
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
        if n == 0:
            if diagnosis is None:
                diagnosis = self._diagnosis(fwk, nodes, None, plugins, verdicts)
            return np.zeros(0, np.int64), diagnosis
        want = num_feasible_nodes_to_find(self._percentage(fwk), n)
        if not fwk.has_score() and not any(e.is_filter() or e.is_prioritizer() for e in self.extenders):
            want = 1
        start = self.next_start_node_index % n
        identity = n == nodes.n and nodes.order_is_identity()
        rotated = None if identity else (np.concatenate((order[start:], order[:start])) if start else order)
        nominated = pod.nominated_node_name
        own = nodes.index.get(nominated, -1) if nominated else -1
        pending = self._nominated_rows(pod, queue, passed)
        while True:
            if own >= 0 and passed[own] and own not in pending:
                # evaluateNominatedNode filtered the nominated node alone: no other node's
                # verdict belongs to this attempt (what --explain and the simulator's results show)
                alone = Diagnosis.empty(nodes.names)
                alone.unschedulable_plugins = set(plugins) if diagnosis is None else diagnosis.unschedulable_plugins
                return np.array([own], np.int64), alone
            feasible, processed = self._search(passed, start, want, rotated)
            if not len(pending):
                break
            # upstream checks each node with its nominated pods only as the search reaches it
            # (``findNodesThatPassFilters`` stops after ``want`` feasible nodes), so the second
            # pass runs lazily on the nominated rows inside the searched window, then the search
            # is redone in case some of them failed
            if explain:
                hit = np.ones(len(pending), bool)
            else:
                pos = (pending - start) % n if rotated is None else self._positions(rotated, pending, nodes.n)
                hit = (pos < processed) | (pending == own)
            if not hit.any():
                break
            if diagnosis is None:
                diagnosis = self._diagnosis(fwk, nodes, None, plugins, verdicts)
            self._apply_nominated_pods(fwk, state, pod, nodes, queue, diagnosis, passed, pending[hit])
            pending = pending[~hit]
        self.next_start_node_index = (self.next_start_node_index + processed) % nodes.n
        if not len(feasible):
            if diagnosis is None:
                diagnosis = self._diagnosis(fwk, nodes, None, plugins, verdicts)
            self._nominated_verdicts_of_failed_rows(fwk, state, pod, nodes, queue, diagnosis)
            first = pod.nominated_node_name or facts.hint  # the node evaluateNominatedNode filters
            own = nodes.index.get(first, -1) if first else -1
            if diagnosis.absent is not None and diagnosis.absent_mask is not None and own >= 0 and diagnosis.codes[own]:
                # evaluateNominatedNode filtered the nominated node (else the batch's hinted node)
                # first, with its nominated pods, adding the plugin that rejected it to the set the
                # other nodes' status is written from (``findNodesThatFitPod`` hands it a copy of
                # the Diagnosis whose plugin set is the same map)
                diagnosis.absent = absent_status({*plugins, diagnosis.plugin_names[int(diagnosis.plugins[own])]})
            return feasible, diagnosis
        if diagnosis is not None:
            return feasible, diagnosis
        facts.rejected = nodes.n - int(np.count_nonzero(passed))
        return feasible, _NO_DIAGNOSIS

    @staticmethod
    def _diagnosis(
        fwk: Framework,
        nodes: NodeTable,
        outcome: FilterOutcome | None,
        plugins: set[str],
        verdicts: FilterPass | None = None,
    ) -> Diagnosis:
        """The Diagnosis of ``outcome``, or of ``verdicts`` merged (within the attempt), naming the
        PreFilter plugins that ran; an Error verdict stops the attempt."""
        if outcome is None:
            assert verdicts is not None
            outcome = verdicts.outcome(fwk.filter_names)
        if outcome.error is not None:
            raise PluginError(outcome.error)
        diagnosis = fwk.diagnosis_from(nodes, outcome)
        diagnosis.unschedulable_plugins = set(plugins)
        return diagnosis

    def _search_shapes(
        self, fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable, facts: CycleFacts
    ) -> bool:
        """The node search over the shape cache's verdicts (``framework/shape_cache.py``): the
        same nodes the search over fresh verdicts finds, left in ``facts``. The entry is
        computed when there is none, and its changed rows again when the search covers one of
        them. False: the cache does not apply to this pod (or no node passes, which the full
        path then explains)."""
        n = nodes.n
        want = num_feasible_nodes_to_find(self._percentage(fwk), n)
        if want * SHAPE_MIN_SEARCHES_PER_LAP > n:
            return False  # each search covers most nodes: filtering them all each time is cheaper
        shape = fwk.shape_of(state, pod)
        if shape is None:
            return False
        start = self.next_start_node_index % n
        cache = fwk.shape_cache
        entry = cache.get(shape, nodes)
        if entry is not None:
            window = entry.search(start, want)
            stale = entry.stale_rows()
            if stale and self._covered(nodes, stale, start, window.processed):
                rows = np.array(sorted({r for r in stale if r < n}), np.int64)
                cache.refreshed += 1
                st = fwk.shape_refresh(entry, state, pod, rows)
                if st is not None:
                    cache.clear()
                    raise PluginError(st)
                window = entry.search(start, want)
        else:
            built = fwk.shape_entry(state, pod, nodes)
            if isinstance(built, Status):
                raise PluginError(built)
            entry = built
            cache.put(shape, entry)
            cache.built += 1
            window = entry.search(start, want)
        if not len(window):
            return False
        cache.searches += 1
        self.next_start_node_index = (self.next_start_node_index + window.processed) % n
        facts.shape, facts.window = entry, window
        return True

    @staticmethod
    def _covered(nodes: NodeTable, rows: list[int], start: int, processed: int) -> bool:
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

    def _node_objects(self, ext: HTTPExtender, names: list[str]) -> list[dict[str, Any]]:
        if ext.cfg.node_cache_capable:
            return []
        return [obj for obj in map(self.node_object, names) if obj is not None]

    def _find_nodes_that_pass_extenders(
        self, pod: PodInfo, nodes: NodeTable, feasible: np.ndarray, diagnosis: Diagnosis
    ) -> np.ndarray:
        """``findNodesThatPassExtenders``: each interested filter extender in turn narrows the
        feasible nodes; the nodes it fails take its reasons (unresolvable ones first)."""
        names = [nodes.names[int(r)] for r in feasible]
        for ext in self.extenders:
            if not names:
                break
            if not ext.is_filter() or not ext.is_interested(pod):
                continue
            try:
                passed, failed, unresolvable = ext.filter(pod, names, self._node_objects(ext, names))
            except ExtenderError as err:
                if ext.cfg.ignorable:
                    log.warning("skipping extender %s as it returned error: %s", ext.name, err)
                    continue
                raise PluginError(Status.error(str(err))) from None
            for name, message in unresolvable.items():
                if name in nodes.index:
                    diagnosis.set_from_extender(nodes.index[name], Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)
            for name, message in failed.items():
                if name in nodes.index and name not in unresolvable:
                    diagnosis.set_from_extender(nodes.index[name], Code.UNSCHEDULABLE, message)
            known = set(names)
            kept = [n for n in passed if n in known]
            if len(kept) < len(names):
                diagnosis.unschedulable_plugins.add("Extender")
            names = kept
        return np.array([nodes.index[n] for n in names], np.int64)

    def _extender_scores(
        self, pod: PodInfo, nodes: NodeTable, feasible: np.ndarray, prioritizers: list[HTTPExtender]
    ) -> np.ndarray:
        """Each prioritizer's 0..10 scores times its weight, scaled to the plugins' 0..100
        (``MaxNodeScore / MaxExtenderPriority``); a failing prioritizer adds nothing."""
        names = [nodes.names[int(r)] for r in feasible]
        pos = {n: i for i, n in enumerate(names)}
        combined = np.zeros(len(names), np.int64)

        def call(ext: HTTPExtender) -> dict[str, int]:
            try:
                return ext.prioritize(pod, names, self._node_objects(ext, names))
            except ExtenderError as err:
                log.warning("extender %s prioritize failed: %s", ext.name, err)
                return {}

        if len(prioritizers) == 1:
            answers = [call(prioritizers[0])]
        else:  # upstream asks them in parallel (a goroutine each)
            with ThreadPoolExecutor(len(prioritizers)) as pool:
                answers = list(pool.map(call, prioritizers))
        for ext, scores in zip(prioritizers, answers, strict=True):
            for host, score in scores.items():
                i = pos.get(host)
                if i is not None:
                    combined[i] += score * ext.cfg.weight
        return combined * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)

    @staticmethod
    def _search(passed: np.ndarray, start: int, want: int, rotated: np.ndarray | None) -> tuple[np.ndarray, int]:
        """The first ``want`` passing rows from ``start`` in nodeTree order, and how many nodes
        that took (all of them when fewer pass)."""
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

    @staticmethod
    def _positions(rotated: np.ndarray, rows: np.ndarray, size: int) -> np.ndarray:
        """Where each of ``rows`` sits in the search order (past the end when absent)."""
        inverse = np.full(size, len(rotated), np.int64)
        inverse[rotated] = np.arange(len(rotated))
        return inverse[rows]

    @staticmethod
    def _nominated_rows(pod: PodInfo, queue: SchedulingQueue, passed: np.ndarray) -> np.ndarray:
        """Rows still passing that hold nominated pods of equal or higher priority."""
        table = queue.nominated_table
        if table is None or not queue.nominated:
            return _NO_ROWS
        slots = nominated_slots(table, pod, passed)
        if len(slots) < 2:
            return table.node_row[slots].astype(np.int64)
        return np.unique(table.node_row[slots])

    def _nominated_verdicts_of_failed_rows(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        queue: SchedulingQueue,
        diagnosis: Diagnosis,
    ) -> None:
        """A failed attempt's verdicts on nodes holding nominated pods, as upstream reports them:
        ``RunFilterPluginsWithNominatedPods`` filters a node with those pods added first and keeps
        that pass's status when it fails, while the column pass ran without them. Adding pods
        fails no node that passed, but the reasons may grow (cpu, then the pod count too), which
        the message and preemption's node statuses read."""
        if queue.nominated_table is None or not queue.nominated:
            return
        failed = diagnosis.codes != 0
        if diagnosis.absent_mask is not None:
            failed &= ~diagnosis.absent_mask
        rows = self._nominated_rows(pod, queue, failed)
        if len(rows):
            # these rows failed the column pass: every filter runs again, in order, so a node-only
            # plugin that rejected the node (NodeUnschedulable, a taint) still rejects it first
            self._apply_nominated_pods(
                fwk, state, pod, nodes, queue, diagnosis, failed.copy(), rows, passed_before=False
            )

    def _percentage(self, fwk: Framework) -> int:
        own = fwk.profile.percentage_of_nodes_to_score
        return own if own is not None else self.percentage_of_nodes_to_score

    @staticmethod
    def _apply_nominated_pods(
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
    ) -> None:
        """``RunFilterPluginsWithNominatedPods`` on ``rows``: a node must also pass with the
        nominated pods of equal or higher priority added (the plain pass was the column run).
        ``passed_before``: the rows passed the column pass, so the filters that read only the node
        need not run again."""
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
            raise PluginError(outcome.error)
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


def absent_status(plugins: set[str]) -> Status:
    """The status of the nodes a PreFilterResult left out (``findNodesThatFitPod``)."""
    return Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]",)
    )


# a PreFilterResult naming fewer than one node in this many is filtered on those rows alone
SMALL_RESULT_FACTOR = 16
# the shape cache is used when a search covers at most 1/this of the nodes (with the adaptive
# percentage: from about 200 nodes); an entry then stays good for about this many pods before a
# search reaches a node bound since, and smaller clusters gain nothing from it
SHAPE_MIN_SEARCHES_PER_LAP = 2
# what a search over the shape cache returns (its nodes are in the cycle's facts; the pod is
# never explained there)
_NO_ROWS = np.zeros(0, np.int64)
_NO_DIAGNOSIS = Diagnosis.empty(())


class PluginError(Exception):
    """A plugin returned Error deep in the search: the search's early exit, which
    ``schedule_pod`` turns into a ``ScheduleFailure`` (the attempt fails as SchedulerError)."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status
