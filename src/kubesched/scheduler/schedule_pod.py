"""The scheduling algorithm of one cycle (``pkg/scheduler/schedule_one.go``: schedulePod).

``find_nodes_that_fit`` (the node search seam, ``nodesearch/``) → ``prioritize_nodes``
(``prioritize.py``) → ``select_host`` (``select_host.py``), upstream's order; a single feasible
node is taken unscored, and Opportunistic Batching keeps the rest of the feasible nodes, best
first, for the next pod of the same signature.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code, Status
from kubesched.scheduler.extender import HTTPExtender
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.types import ERR_NO_NODES_AVAILABLE, FitError
from kubesched.scheduler.nodesearch import AttemptReport, NodeSearch, SearchOutcome
from kubesched.scheduler.nodesearch.search import no_node_object
from kubesched.scheduler.nodesearch.shapes import shape_report
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.prioritize import prioritize_nodes
from kubesched.scheduler.queue import SchedulingQueue
from kubesched.scheduler.select_host import HostPicker


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
        if found.shape is not None and found.window is not None:
            return shape_report(fwk, state, pod, nodes, found.shape, found.window)
        info = AttemptReport(found.diagnosis)
        info.feasible = found.feasible
        if found.taken:
            info.hint = chosen
        return info
