"""A way of searching the nodes (an implementation of ``findNodesThatPassFilters``) and what a
search is asked. ``NodeSearch`` (``search.py``) holds its ways, chosen in one place, and asks
them in order: a way over stored verdicts answers only for the pods it can, the search over
fresh verdicts (``columns.py``) answers for every pod."""

from __future__ import annotations

from dataclasses import dataclass

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import PreFilterResult
from kubesched.framework.status import Status
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.nodesearch.outcome import SearchOutcome
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.queue import SchedulingQueue


@dataclass(init=False, slots=True)
class SearchAsk:
    """One search: the cycle's framework, state, pod, nodes and queue, PreFilter's result and
    the plugins it ran, and what the search is asked: where the rotation starts, how many nodes
    to find, the node the attempt tried first (nominated, else the batch's hint), and what the
    attempt reports: ``explain`` filters every nominated node too, ``report`` keeps every node's
    verdict (explain, results, extenders read them). ``signed``: the batch took the pod's
    signature (its hint is compared with what the search finds); ``extenders``: filter
    extenders run after the search."""

    fwk: Framework
    state: CycleState
    pod: PodInfo
    nodes: NodeTable
    queue: SchedulingQueue
    pre_res: PreFilterResult
    plugins: set[str]
    start: int
    percentage: int
    want_one: bool
    tried_first: str
    explain: bool
    report: bool
    signed: bool
    extenders: bool

    def __init__(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        queue: SchedulingQueue,
        pre_res: PreFilterResult,
        plugins: set[str],
        start: int,
        percentage: int,
        want_one: bool,
        tried_first: str,
        explain: bool,
        report: bool,
        signed: bool,
        extenders: bool,
    ) -> None:
        # written out (init=False): mypyc compiles this one; a dataclass's own runs interpreted
        self.fwk = fwk
        self.state = state
        self.pod = pod
        self.nodes = nodes
        self.queue = queue
        self.pre_res = pre_res
        self.plugins = plugins
        self.start = start
        self.percentage = percentage
        self.want_one = want_one
        self.tried_first = tried_first
        self.explain = explain
        self.report = report
        self.signed = signed
        self.extenders = extenders


class SearchWay:
    """One way of finding the nodes that pass Filter."""

    def find(self, ask: SearchAsk) -> SearchOutcome | Status | None:
        """The first nodes of the search that pass and the Diagnosis of the others, a plugin's
        Error, or None where this way does not answer for the pod (the next way is asked)."""
        raise NotImplementedError
