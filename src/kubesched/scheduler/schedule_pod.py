"""The scheduling algorithm of one cycle (``pkg/scheduler/schedule_one.go``), in upstream's
order: ``schedulePod`` → ``findNodesThatFitPod`` (the node search seam, ``nodesearch/``) →
``prioritizeNodes`` → ``selectHost``. A single feasible node is taken unscored, and
Opportunistic Batching keeps the rest of the feasible nodes, best first, for the next pod of the
same signature.
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code, Status
from kubesched.scheduler.extender import (
    MAX_EXTENDER_PRIORITY,
    MAX_NODE_SCORE,
    ExtenderError,
    HTTPExtender,
    NodeLookup,
    node_objects,
)
from kubesched.scheduler.framework.batch import PodSignature, SortedNodes
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.types import ERR_NO_NODES_AVAILABLE, FitError
from kubesched.scheduler.nodesearch import AttemptReport, NodeSearch, SearchOutcome
from kubesched.scheduler.nodesearch.search import no_node_object
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.queue import SchedulingQueue

log = logging.getLogger("kubesched.scheduler")


@dataclass(init=False, slots=True)
class ScheduleResult:
    """``ScheduleResult``: the node picked, how many nodes were evaluated and found feasible,
    and, when asked, the attempt's report."""

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


class Algorithm:
    """``schedulePod`` and what it keeps between cycles: the node search (with its rotating
    start index) and the host picker (with its tie-break random stream)."""

    search: NodeSearch
    picker: HostPicker

    def __init__(
        self,
        percentage_of_nodes_to_score: int,
        rng: random.Random,
        *,
        batching: bool = True,
        extenders: list[HTTPExtender] | None = None,
        node_object: Callable[[str], dict[str, Any] | None] = no_node_object,
    ) -> None:
        # the node search holds the batching switch, the extenders and the Node lookup; the
        # steps after it read them there
        self.search = NodeSearch(
            percentage_of_nodes_to_score, batching=batching, extenders=extenders, node_object=node_object
        )
        self.picker = HostPicker(rng)

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
        """``schedulePod``: the node picked, or why none was (no node fit, no nodes, a plugin's
        Error). ``cycle``: the queue's scheduling cycle of this attempt (batching compares it).
        ``explain``: every node filtered afresh, the verdicts and scores kept in the result;
        ``record``: the same kept, from whichever way the search went."""
        if nodes.n == 0:
            return ScheduleFailure(no_nodes=True)
        report = explain or record
        found = self.search.find_nodes_that_fit(fwk, state, pod, nodes, queue, cycle, explain=explain, report=report)
        if isinstance(found, Status):
            return ScheduleFailure(status=found)
        feasible = found.feasible
        if not len(feasible):
            found.diagnosis.collect_rejectors()
            return ScheduleFailure(fit=FitError(pod, nodes.n, found.diagnosis))
        if len(feasible) == 1:  # upstream runs no PreScore or Score for a single feasible node
            chosen = nodes.names[int(feasible[0])]
            if self.search.batching:
                fwk.batch.store_schedule_results(found.signature, found.hint, chosen, None, cycle)
            kept = self._single_report(fwk, state, pod, nodes, found, chosen) if report else None
            return ScheduleResult(chosen, found.evaluated(), 1, kept)
        search = self.search
        scored = prioritize_nodes(fwk, state, pod, nodes, found, search.extenders, search.node_object, report=report)
        if isinstance(scored, Status):
            return ScheduleFailure(status=scored)
        pick = self.picker.select(nodes, feasible, scored.total)
        chosen = nodes.names[int(feasible[pick])]
        if search.batching:
            rest = self.picker.sorted_rest(nodes, feasible, scored.total, pick, found.signature)
            fwk.batch.store_schedule_results(found.signature, found.hint, chosen, rest, cycle)
        return ScheduleResult(chosen, found.evaluated(), len(feasible), scored.report)

    @staticmethod
    def _single_report(
        fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable, found: SearchOutcome, chosen: str
    ) -> AttemptReport:
        """The report of an attempt that found one node (taken unscored)."""
        if found.stored is not None:
            return found.stored.report(fwk, state, pod, nodes)
        info = AttemptReport(found.diagnosis)
        info.feasible = found.feasible
        if found.taken:
            info.hint = chosen
        return info


# -- prioritizeNodes ----------------------------------------------------------------------------
@dataclass(init=False, slots=True)
class Prioritized:
    """Each feasible node's total score (in the order of the search's feasible rows) and, when
    asked, the attempt's report of every plugin's scores."""

    total: np.ndarray
    report: AttemptReport | None

    def __init__(self, total: np.ndarray, report: AttemptReport | None) -> None:
        # written out (init=False): mypyc compiles this one; a dataclass's own runs interpreted
        self.total = total
        self.report = report


def prioritize_nodes(
    fwk: Framework,
    state: CycleState,
    pod: PodInfo,
    nodes: NodeTable,
    found: SearchOutcome,
    extenders: list[HTTPExtender],
    lookup: NodeLookup,
    *,
    report: bool,
) -> Prioritized | Status:
    """The scores of ``found``'s feasible nodes, or a plugin's Error."""
    feasible = found.feasible
    stored = found.stored
    if stored is not None:  # scored and reported by the way that stored the verdicts
        return Prioritized(stored.scores(fwk, pod), stored.report(fwk, state, pod, nodes) if report else None)
    st = fwk.run_pre_score(state, pod, nodes, feasible)
    if st is not None:
        return st
    outcome, st = fwk.run_score(state, pod, nodes, feasible, keep=report)
    if st is not None or outcome is None:
        return st or Status.error("score failed")
    prioritizers = [e for e in extenders if e.is_prioritizer() and e.is_interested(pod)]
    if prioritizers:
        outcome.total += extender_scores(pod, nodes, feasible, prioritizers, lookup)
    elif not fwk.has_score():
        outcome.total[:] = 1
    kept = None
    if report:
        kept = AttemptReport(found.diagnosis).scored(feasible, outcome.raw_by_plugin, outcome.by_plugin, outcome.total)
    return Prioritized(outcome.total, kept)


def extender_scores(
    pod: PodInfo, nodes: NodeTable, feasible: np.ndarray, prioritizers: list[HTTPExtender], lookup: NodeLookup
) -> np.ndarray:
    """Each prioritizer's 0..10 scores times its weight, scaled to the plugins' 0..100
    (``MaxNodeScore / MaxExtenderPriority``); a failing prioritizer adds nothing."""
    names = [nodes.names[int(r)] for r in feasible]
    pos = {n: i for i, n in enumerate(names)}
    combined = np.zeros(len(names), np.int64)
    call = functools.partial(_prioritize, pod, names, lookup)  # not a closure: see tests/test_no_cycles.py
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


def _prioritize(pod: PodInfo, names: list[str], lookup: NodeLookup, ext: HTTPExtender) -> dict[str, int]:
    """One prioritizer's answer; a failing one's is empty (logged)."""
    try:
        return ext.prioritize(pod, names, node_objects(ext, names, lookup))
    except ExtenderError as err:
        log.warning("extender %s prioritize failed: %s", ext.name, err)
        return {}


# -- selectHost ---------------------------------------------------------------------------------
class HostPicker:
    """The tie-break of ``selectHost``. ``tie_break``: "random" (upstream's reservoir sampling
    among the best); "name", the smallest node name among the best, as the FGD paper's simulator
    patched its kube-scheduler v1.20 fork (github.com/mental2008/kubernetes,
    generic_scheduler.go) "for reproducibility" (replay offers it to reproduce that paper,
    nothing else uses it); "permutation", names compared as ``tie_names`` renames them
    (replay/tiebreak.py)."""

    rng: random.Random
    tie_break: str
    tie_names: dict[str, str] | None
    _rank_key: tuple[Any, int] | None
    _rank: np.ndarray

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.tie_break = "random"
        self.tie_names = None
        self._rank_key = None
        self._rank = np.zeros(0, np.int64)

    def break_ties_by(self, names: dict[str, str]) -> None:
        """The "permutation" tie-break: among the best, the node whose ``names`` entry is smallest."""
        self.tie_break, self.tie_names, self._rank_key = "permutation", names, None

    def select(self, nodes: NodeTable, feasible: np.ndarray, total: np.ndarray) -> int:
        """The position in ``feasible`` of a top-scored node."""
        if len(feasible) == 1:
            return 0
        top = (total == np.maximum.reduce(total)).nonzero()[0]  # the ufunc: no method wrapper
        if len(top) == 1:
            return int(top[0])
        if self.tie_break != "random":
            return int(top[int(np.argmin(self._name_rank(nodes)[feasible[top]]))])
        return int(top[self.rng.randrange(len(top))])

    def sorted_rest(
        self, nodes: NodeTable, feasible: np.ndarray, total: np.ndarray, pick: int, signature: PodSignature | None
    ) -> SortedNodes:
        """The feasible nodes the pod did not take, best first: ``sortedNodeScores`` after its
        first Pop (score, then a random number per node among equals; by name with a name
        tie-break). Built only for a signed pod: the others keep no list."""
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
